"""PyIceberg writes with vended keys: bounded local disk and memory, parts sent as many at once as the
knob says, and after an expiry only the parts S3 has not acknowledged are sent again (the lakehouse behind short-lived keys, with each FileIO).

Before, every write kept a copy of all it wrote (8 MB in memory, then a temporary file): a 60 MB file
cost 52 MB of local disk while it was written, and an expiry replayed the whole file."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import tracemalloc
from collections import Counter
from urllib.parse import parse_qs, urlsplit

import boto3
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.storage.s3upload import ResumableS3Upload
from tests.helpers import ID_SCHEMA, SpoolDiskPeak, expiring_proxies
from tests.servers.s3_early_rejection import EarlyRejectionS3Proxy

# Keys die at 45 % of their stated lifetime (3.6 s), well before the proactive renewal at 80 %, yet
# outlive one request on a loaded machine (else a fresh key set is refused on arrival, and the
# package rightly gives up in one line).
LIFETIME = 8.0
SHARE = 0.45
POLICY = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.2)  # renew at 80 %: keys die first
FILEIOS = {"pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO", "fsspec": "pyiceberg.io.fsspec.FsspecFileIO"}
PART = 5 * 1024 * 1024  # the smallest part S3 takes


@pytest.fixture(scope="module")
def proxies(lakehouse):
    with expiring_proxies(lakehouse, LIFETIME, s3_class=EarlyRejectionS3Proxy, s3_options={"error_code": "ExpiredToken"}) as p:
        yield p


@pytest.fixture(autouse=True)
def calm(proxies):
    s3 = proxies.s3
    s3.max_age_seconds, s3.delay_seconds, s3.share = None, 0.0, 1.0
    yield
    s3.max_age_seconds, s3.delay_seconds, s3.share = None, 0.0, 1.0


def table_of(lakehouse, proxies, io: str, name: str, properties: dict | None = None, in_flight: int = 2):
    cat = pyiceberg_catalog(lakehouse, uri=proxies.catalog.url, policy=POLICY,
                            **{"py-io-impl": FILEIOS[io], "catalog-ext.pyiceberg.s3-part-bytes": str(PART),
                               "catalog-ext.pyiceberg.s3-parts-in-flight": str(in_flight)})
    cat.create_namespace_if_not_exists("db_writes")
    if cat.table_exists(f"db_writes.{name}"):
        cat.drop_table(f"db_writes.{name}")
    return cat, cat.create_table(f"db_writes.{name}", ID_SCHEMA, properties=properties or {})


class WriterMemoryPeak:
    """The most memory the resumable writer's own allocations (part_upload.py) held at once, from
    tracemalloc snapshots every few milliseconds while the block runs."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        only = [tracemalloc.Filter(True, "*part_upload.py")]
        while not self._stop.wait(0.01):
            held = sum(stat.size for stat in tracemalloc.take_snapshot().filter_traces(only).statistics("filename"))
            self.peak = max(self.peak, held)

    def __enter__(self) -> WriterMemoryPeak:
        tracemalloc.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        tracemalloc.stop()


def chunk(i: int) -> bytes:
    return hashlib.sha256(str(i).encode()).digest() * (1024 * 1024 // 32)  # 1 MiB, different for each i


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_a_write_outliving_its_keys_resends_only_the_unacknowledged_part(lakehouse, proxies, io):
    """60 MiB in 5 MiB parts, each request slowed so the upload outlives its keys, which die at 45 % of
    their stated lifetime (before the proactive renewal): S3 rejects parts, each is sent
    again into the same upload with renewed keys, no part S3 acknowledged is sent twice, the object is
    exact; the stream held no local disk and at most a few parts of memory."""
    cat, table = table_of(lakehouse, proxies, io, f"resume_{io}")
    s3 = proxies.s3
    path = f"{table.location()}/data/resumable-{io}.parquet"
    # Fresh keys, so they die while parts are in flight: keys already older than 3.6 s would die at the
    # upload's create, and the lifetime learned there would renew them in time from then on.
    cat.refresher.refresh(table.io.entry)
    s3.max_age_seconds, s3.share, s3.delay_seconds = LIFETIME, SHARE, 1.0  # 2 parts in flight: 6 s of parts
    log_start = len(s3.log)
    try:
        with SpoolDiskPeak() as disk, WriterMemoryPeak() as memory:
            started = time.monotonic()
            with table.io.new_output(path).create(overwrite=True) as out:
                assert isinstance(out, ResumableS3Upload)
                for i in range(60):
                    out.write(chunk(i))
            elapsed = time.monotonic() - started
    finally:
        s3.max_age_seconds, s3.delay_seconds = None, 0.0
    entries = list(s3.log)[log_start:]
    parts = [(parse_qs(urlsplit(e["path"]).query)["partNumber"][0], e["status"]) for e in entries
             if e["method"] == "PUT" and "partNumber=" in e["path"]]
    acknowledged = Counter(number for number, status in parts if status == 200)
    rejected = [number for number, status in parts if status == 403]
    creates = [e for e in entries if e["method"] == "POST" and urlsplit(e["path"]).query == "uploads" and e["status"] == 200]
    assert elapsed > SHARE * LIFETIME, f"the write took {elapsed:.1f} s: it outlived no key"
    assert rejected, "S3 rejected no part: the test proved nothing"
    assert sorted(acknowledged) == sorted(str(n) for n in range(1, 13)) and set(acknowledged.values()) == {1}, parts
    assert len(creates) == 1, "one upload, resumed: not a new one per expiry"
    assert disk.peak == 0, f"the write held {disk.peak} bytes of local disk"
    assert 0 < memory.peak <= 3 * PART + 65536, f"the writer held {memory.peak} bytes (parts of {PART}, 2 in flight)"
    with table.io.new_input(path).open() as back:
        assert hashlib.sha256(back.read()).hexdigest() == hashlib.sha256(b"".join(chunk(i) for i in range(60))).hexdigest()
    cat.close()


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_a_write_sends_as_many_parts_at_once_as_the_knob_says(lakehouse, proxies, io):
    """s3-parts-in-flight=3, each S3 request slowed by 0.3 s: three parts go out together (not one after
    another's answer, not more), and the writer holds at most the three and the one filling."""
    cat, table = table_of(lakehouse, proxies, io, f"in_flight_{io}", in_flight=3)
    s3 = proxies.s3
    path = f"{table.location()}/data/in-flight-{io}.parquet"
    s3.delay_seconds, s3.peak_active = 0.3, 0
    log_start = len(s3.log)
    try:
        with WriterMemoryPeak() as memory:
            with table.io.new_output(path).create(overwrite=True) as out:
                for i in range(45):
                    out.write(chunk(i))
        peak = s3.peak_active
    finally:
        s3.delay_seconds = 0.0
    assert peak == 3, f"{peak} requests at once"
    parts = [e for e in list(s3.log)[log_start:] if e["method"] == "PUT" and "partNumber=" in e["path"]]
    # Each part's body is covered by a CRC32 S3 checks, not hashed again into the signature (as PyArrow's client does).
    assert len(parts) == 9 and all(e["payload_hash"] == "UNSIGNED-PAYLOAD" and e["crc32"] for e in parts), parts
    assert 0 < memory.peak <= 4 * PART + 65536, f"the writer held {memory.peak} bytes (parts of {PART}, 3 in flight)"
    with table.io.new_input(path).open() as back:
        assert back.read() == b"".join(chunk(i) for i in range(45))
    cat.close()


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_an_append_uses_no_local_disk(lakehouse, proxies, io):
    """A PyIceberg append of ~40 MB of random doubles (they do not compress) in files of ~13 MB, more
    than a spool keeps in memory: nothing goes to local disk."""
    schema = pa.schema([pa.field("v", pa.float64(), nullable=False)])
    cat = pyiceberg_catalog(lakehouse, uri=proxies.catalog.url, policy=POLICY, **{"py-io-impl": FILEIOS[io]})
    cat.create_namespace_if_not_exists("db_writes")
    if cat.table_exists(f"db_writes.append_{io}"):
        cat.drop_table(f"db_writes.append_{io}")
    table = cat.create_table(f"db_writes.append_{io}", schema, properties={"write.target-file-size-bytes": str(16 << 20)})
    n = 5_000_000
    with SpoolDiskPeak() as disk:
        table.append(pa.table({"v": pc.random(n)}, schema=schema))
    files = [task.file.file_size_in_bytes for task in table.scan().plan_files()]
    assert len(files) >= 2 and max(files) > 9 << 20, files
    assert table.scan().to_arrow().num_rows == n
    assert disk.peak == 0, disk.peak
    cat.close()


def test_a_failed_write_leaves_nothing_behind(lakehouse, proxies):
    """An exception inside the `with` aborts the upload: no object, no unfinished upload."""
    cat, table = table_of(lakehouse, proxies, "pyarrow", "aborted")
    path = f"{table.location()}/data/aborted.parquet"
    with pytest.raises(RuntimeError):
        with table.io.new_output(path).create(overwrite=True) as out:
            for i in range(12):
                out.write(chunk(i))
            raise RuntimeError("the encoder failed")
    assert not table.io.new_input(path).exists()
    admin = boto3.client("s3", endpoint_url=lakehouse.info.s3_endpoint, aws_access_key_id=lakehouse.info.access_key,
                         aws_secret_access_key=lakehouse.info.secret_key, region_name="us-east-1")
    uploads = admin.list_multipart_uploads(Bucket="warehouse", Prefix="db_writes/aborted/")
    assert not uploads.get("Uploads"), uploads
    cat.close()


def test_a_bad_part_size_is_one_line_at_catalog_start(lakehouse, proxies):
    with pytest.raises(ConfigError) as err:
        pyiceberg_catalog(lakehouse, uri=proxies.catalog.url, **{"catalog-ext.pyiceberg.s3-part-bytes": "1000"})
    assert str(err.value) == ("Bad catalog property catalog-ext.pyiceberg.s3-part-bytes='1000': use a whole number "
                              "from 5242880 to 5368709120")


def test_a_store_without_resumable_upload_keeps_a_bounded_spool_and_says_so(lakehouse, proxies, tmp_path, caplog):
    """A write to another scheme (here a local path) goes to the delegate's stream with a spool of at
    most `catalog-ext.pyiceberg.spool-max-bytes`, announced once as it starts; the spool's file is
    private to the user and gone when its write ends, failed or not."""
    cat = pyiceberg_catalog(lakehouse, uri=proxies.catalog.url, **{"catalog-ext.pyiceberg.spool-max-bytes": str(12 << 20)})
    cat.create_namespace_if_not_exists("db_writes")
    if cat.table_exists("db_writes.local"):
        cat.drop_table("db_writes.local")
    table = cat.create_table("db_writes.local", ID_SCHEMA)
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")
    with SpoolDiskPeak(exclude=tmp_path) as disk:
        for name in ("a", "b"):
            with table.io.new_output(f"file://{tmp_path}/{name}.bin").create(overwrite=True) as out:
                for i in range(30):
                    out.write(chunk(i))
                    disk.sample()  # the background sampler can miss the peak on a busy machine
        with pytest.raises(RuntimeError):  # a write that fails: its spool goes with it
            with table.io.new_output(f"file://{tmp_path}/c.bin").create(overwrite=True) as out:
                for i in range(10):
                    out.write(chunk(i))
                raise RuntimeError("the encoder failed")
        assert disk.now() == 0, "a spool outlived its write"
    said = [r.getMessage() for r in caplog.records if "keep a copy of up to" in r.getMessage()]
    assert len(said) == 1 and "file://" in said[0] and str(12 << 20) in said[0], said
    assert (8 << 20) < disk.peak <= (12 << 20) + 65536, disk.peak  # on disk past 8 MiB, never past the bound
    spools = {mode for path, mode in disk.modes.items() if path.endswith(" (deleted)")}  # anonymous: the spools
    assert spools == {0o600}, disk.modes  # private to the user
    assert (tmp_path / "a.bin").stat().st_size == 30 << 20
    cat.close()
