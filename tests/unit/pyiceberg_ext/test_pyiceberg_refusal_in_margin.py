"""A refusal without a code that arrives once its keys are in their hard margin, on the real stack.

SeaweedFS behind the catalog proxy (LIFETIME-second keys) and a slow S3 proxy that judges each
request's keys as of its arrival plus a delay. A HEAD sent in time with young keys is judged after
they died and refused with a bodiless 403, which neither PyArrow nor s3fs can read a code from.
Asking S3 why, with the same keys, would send a request with keys in their hard margin: the FileIO
must instead try again with renewed keys, and the proxy must see nothing signed with the dying ones.
"""

from __future__ import annotations

import time

import pytest

from pyspark_catalog_ext.pyiceberg_ext import GuardedRestCatalog, RefreshingFileIO
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.refresh.rules import hard_margin_s
from tests.helpers import ID_PART_SCHEMA, expiring_proxies, id_part_rows
from tests.servers.slow_s3_proxy import SlowS3ExpiryProxy

LIFETIME = 6.0  # hard margin 1.5 s: nothing new is sent with keys older than 4.5 s
SENT_AT_AGE = 2.0  # the HEAD leaves well before the margin, even on a loaded machine...
DELAY = 4.5  # ...and is judged at 6.5 s: after the keys died, so it is refused
# The schedule would renew at 90 % of the lifetime: after the refusal, so the probe's keys are the refused ones.
POLICY = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.1)
FILEIOS = {"pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO", "fsspec": "pyiceberg.io.fsspec.FsspecFileIO"}


@pytest.fixture(scope="module")
def proxies(lakehouse):
    with expiring_proxies(lakehouse, LIFETIME, s3_class=SlowS3ExpiryProxy) as proxies:
        yield proxies


def make_catalog(lakehouse, proxies, io: str) -> GuardedRestCatalog:
    # PyArrow's S3 client gives up on an answer slower than 3 s by default, and its SDK then sends the
    # request again with the same keys: that layer's re-send is not what this test is about.
    return pyiceberg_catalog(lakehouse, uri=proxies.catalog.url, policy=POLICY,
                             **{"py-io-impl": FILEIOS[io], "s3.request-timeout": "20"})


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_a_codeless_refusal_of_dying_keys_is_tried_again_with_new_keys_not_asked_about(lakehouse, proxies, io):
    s3_proxy = proxies.s3
    s3_proxy.max_age_seconds, s3_proxy.delay_seconds = None, 0
    cat = make_catalog(lakehouse, proxies, io)
    name = f"db_margin.head_{io}"
    try:
        cat.create_namespace_if_not_exists("db_margin")
        if cat.table_exists(name):
            cat.drop_table(name)
        cat.create_table(name, ID_PART_SCHEMA).append(id_part_rows(0, 10))
        table = cat.load_table(name)  # new keys, just issued
        assert isinstance(table.io, RefreshingFileIO)
        path = table.inspect.files().column("file_path")[0].as_py()
        size = table.inspect.files().column("file_size_in_bytes")[0].as_py()
        entry = table.io.entry
        generation = entry.generation
        wait = entry.fetched_at_s + SENT_AT_AGE - cat.refresher.clock()
        assert wait > 0, f"the table's keys were {SENT_AT_AGE - wait:.1f}s old before the test could start"
        time.sleep(wait)
        since = time.time()
        s3_proxy.max_age_seconds, s3_proxy.delay_seconds = LIFETIME, DELAY

        assert len(table.io.new_input(path)) == size  # a HEAD (PyArrow's file info, s3fs's info)

        s3_proxy.max_age_seconds, s3_proxy.delay_seconds = None, 0
        refused = s3_proxy.refusals_since(since)
        assert refused and refused[0]["method"] == "HEAD", f"nothing was refused: the test proved nothing ({refused})"
        assert entry.generation > generation
        # Strict, with no allowance for a stalled machine: the only late sender here would be the FileIO.
        safe_age = LIFETIME - hard_margin_s(0.0, LIFETIME)
        late = [e for e in refused if e["signed_age"] is None or e["signed_age"] > safe_age]
        assert late == [], f"signed with keys in their hard margin (past {safe_age}s): {late}"
    finally:
        s3_proxy.max_age_seconds, s3_proxy.delay_seconds = None, 0
        cat.close()
