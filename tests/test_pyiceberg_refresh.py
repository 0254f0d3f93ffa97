"""PyIceberg jobs that outlive their vended credentials, on the real stack.

SeaweedFS behind two loopback proxies: the catalog proxy reports LIFETIME-second credentials and
the (slowed) S3 proxy refuses a key with SeaweedFS's own 403 once it is older than that. Each
test's job takes several lifetimes; it must finish with exact rows and without a single 403.
"""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pytest

from pyspark_catalog_ext.credentials import RefreshPolicy
from pyspark_catalog_ext.pyiceberg_ext import ExtRestCatalog, RefreshingFileIO
from pyspark_catalog_ext.session import pyiceberg_catalog
from tests.servers import CatalogProxy
from tests.servers.slow_s3_proxy import SlowS3ExpiryProxy

LIFETIME = 3.0  # seconds a vended key lives behind the proxies
POLICY = RefreshPolicy(check_interval_s=0.5, min_ahead_s=0, lifetime_fraction=0.4)
FILEIOS = {
    "pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO",
    "fsspec": "pyiceberg.io.fsspec.FsspecFileIO",
}
# PyIceberg bins rows by in-memory size: 16-byte rows, 800 bytes = one data file per 50 rows.
FILE_PER_50_ROWS = {"write.target-file-size-bytes": "800"}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int64(), nullable=False)])


@pytest.fixture(scope="module")
def s3_proxy(lakehouse):
    with SlowS3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def catalog_proxy(lakehouse, s3_proxy):
    with CatalogProxy(lakehouse.info.iceberg_uri, short_lifetime_seconds=LIFETIME,
                      s3_endpoint=s3_proxy.url, s3_proxy=s3_proxy) as proxy:
        yield proxy


def make_catalog(lakehouse, proxy, io: str, **kw) -> ExtRestCatalog:
    return pyiceberg_catalog(lakehouse, uri=proxy.url, policy=POLICY, **{"py-io-impl": FILEIOS[io]}, **kw)


@pytest.fixture(scope="module")
def many_files(lakehouse, catalog_proxy, s3_proxy):
    """db_py.many: 200 data files of 50 rows each, written with admin keys and no expiry (setup only)."""
    s3_proxy.max_age_seconds = None
    cat = make_catalog(lakehouse, catalog_proxy, "pyarrow")
    cat.create_namespace_if_not_exists("db_py")
    if cat.table_exists("db_py.many"):
        cat.drop_table("db_py.many")
    table = cat.create_table("db_py.many", SCHEMA, properties=FILE_PER_50_ROWS)
    table.append(rows(0, 200 * 50))
    cat.close()
    return 200 * 50


def rows(start: int, stop: int) -> pa.Table:
    ids = pa.array(range(start, stop), pa.int64())
    return pa.table({"id": ids, "part": pa.compute.divide(ids, 50)}, schema=SCHEMA)


def _expiring(s3_proxy, delay: float):
    s3_proxy.max_age_seconds = LIFETIME
    s3_proxy.delay_seconds = delay


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_long_scan_outlives_credentials(lakehouse, catalog_proxy, s3_proxy, many_files, io):
    cat = make_catalog(lakehouse, catalog_proxy, io)
    try:
        table = cat.load_table("db_py.many")
        assert isinstance(table.io, RefreshingFileIO)
        assert len(table.inspect.files()) == 200
        _expiring(s3_proxy, delay=0.08)
        rejected_before = s3_proxy.total_rejected
        started = time.monotonic()
        result = table.scan().to_arrow()
        elapsed = time.monotonic() - started
        s3_proxy.max_age_seconds, s3_proxy.delay_seconds = None, 0
        assert result.num_rows == many_files
        assert sorted(result.column("id").to_pylist()) == list(range(many_files))
        assert s3_proxy.total_rejected == rejected_before, "a request was refused with an expired key"
        assert elapsed > 2 * LIFETIME, f"the scan took {elapsed:.1f}s: too short to prove anything"
        status = cat.credentials_status()
        row = next(r for r in status if r["table"].endswith("db_py.many") and not r["staged"])
        assert row["generation"] >= 3, row
        assert row["refreshes_by_strategy"].get("reload", 0) >= 2, row  # SeaweedFS: no /credentials, reload
    finally:
        s3_proxy.max_age_seconds, s3_proxy.delay_seconds = None, 0
        cat.close()


def test_without_refresh_the_same_scan_fails(lakehouse, catalog_proxy, s3_proxy, many_files):
    """The control: plain PyIceberg behaviour (first keys only) dies with 403 on the same scan."""
    cat = make_catalog(lakehouse, catalog_proxy, "pyarrow", refresh=False)
    try:
        table = cat.load_table("db_py.many")
        assert not isinstance(table.io, RefreshingFileIO)
        _expiring(s3_proxy, delay=0.08)
        rejected_before = s3_proxy.total_rejected
        with pytest.raises(OSError, match="(?i)access key|forbidden|403|denied"):
            table.scan().to_arrow()
        assert s3_proxy.total_rejected > rejected_before
    finally:
        s3_proxy.max_age_seconds, s3_proxy.delay_seconds = None, 0
        cat.close()
