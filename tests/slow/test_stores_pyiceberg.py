"""PyIceberg jobs on ADLS (Azurite) and GCS (fake-gcs-server behind its token-checking front), through
`pyiceberg_catalog` on Iceberg's REST fixture behind the vending front (tests/stores), with 10 s tokens.

Every scenario runs with both of PyIceberg's FileIOs: FsspecFileIO (adlfs, gcsfs) and PyArrowFileIO
(Arrow's AzureFileSystem and GcsFileSystem). The GCS front runs in a child process: Arrow sends some
GCS requests while it holds the GIL, which a front in this process could never answer
(docs/stores.md section 5).

- An append loop with one Table object and a slow scan, together over 3 token lifetimes: exact rows,
  renewed on schedule, nothing refused.
- Tokens the store stops taking after 3 s of the stated 10 s: the refused operation is renewed once
  and run again (exact rows); tokens dead on every refresh end in one line; a scope refusal (another
  GCS prefix, another ADLS container) is raised as it came, never retried.
- Two accounts (ADLS) or two buckets (GCS) vended in one table answer: each file gets its own
  prefix's token (the stores take only their own), and the GCS front saw each bucket's token only there.
- A read stream sought to its end reads nothing and seeks back (Arrow's reader of a Python file asks
  a size that way; Arrow's own GCS file would ask GCS for a range starting at the end: 416).
- A GCS token ended between a stream's open and its first read, or before a seek, is renewed (Arrow's
  GCS file reports that refusal only as a closed file).
- Writes stream: a GCS resumable upload, ADLS staged blocks, in parts of the S3 part-size knob: nothing
  on local disk, at most parts-in-flight + 1 parts in memory; a token that dies mid-upload is renewed
  and the same upload goes on; a write that fails leaves nothing behind.
"""

from __future__ import annotations

import time
import tracemalloc
from urllib.parse import urlsplit

import pytest

from pyspark_catalog_ext.errors import CredentialRefreshError
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.storage import part_upload
from tests.helpers import ID_SCHEMA, SpoolDiskPeak, id_rows
from tests.servers.base import ThreadedServer, forward_streaming
from tests.servers.s3_expiry_proxy import STALLS
from tests.stores.catalog import store_catalog
from tests.stores.install import StoreUnavailable

pytest.importorskip("adlfs")
pytest.importorskip("gcsfs")

LIFETIME = 10.0  # seconds each vended token lives, as stated
EARLY = 3.0  # the store takes a token this long only, in the early-death tests
# Renew once a quarter of a token's life is left, checked 4 times a second.
POLICY = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.25)
FSSPEC = "pyiceberg.io.fsspec.FsspecFileIO"
PYARROW = "pyiceberg.io.pyarrow.PyArrowFileIO"
SMALL_FILES = {"write.target-file-size-bytes": "800"}


@pytest.fixture(scope="module", params=["adls", "gcs"])
def stack(request):
    try:
        # The GCS front in a process of its own: Arrow's GCS client sends some requests holding the GIL.
        with store_catalog(request.param, lifetime_s=LIFETIME, refresh_tokens=True, gcs_front_process=True) as running:
            yield running
    except StoreUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(params=[FSSPEC, PYARROW], ids=["fsspec", "pyarrow"])
def io_impl(request) -> str:
    return request.param


def catalog(stack, io_impl: str):
    cat = pyiceberg_catalog({"uri": stack.uri, "header.X-Iceberg-Access-Delegation": "vended-credentials",
                             "py-io-impl": io_impl}, policy=POLICY)
    cat.create_namespace_if_not_exists("db")
    return cat


def table_name(base: str, io_impl: str) -> str:
    """Each FileIO its own table in the module's one catalog."""
    return f"{base}_{'pyarrow' if io_impl == PYARROW else 'fsspec'}"


def ids(table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def status(cat, name: str) -> dict:
    return next(r for r in cat.credentials_status() if r["table"] == f"lake.db.{name}")


def test_append_and_scan_over_three_lifetimes(stack, io_impl):
    cat, name = catalog(stack, io_impl), table_name("held", io_impl)
    table = cat.create_table(f"db.{name}", ID_SCHEMA, properties=SMALL_FILES)
    start, began, n = time.monotonic(), time.time(), 0
    while time.monotonic() - start < 2 * LIFETIME + 1:  # one Table object: its FileIO must renew itself
        table.append(id_rows(n, n + 100))
        n += 100
        time.sleep(0.5)
    # The scan's files are read one by one, slowly, over the third lifetime.
    batches = 0
    got: list[int] = []
    for batch in table.scan().to_arrow_batch_reader():
        got += batch.column("id").to_pylist()
        batches += 1
        time.sleep(LIFETIME / 20)
    took = time.monotonic() - start
    assert sorted(got) == list(range(n)), f"{stack.store}: {len(got)} rows of {n}"
    row = status(cat, name)
    assert took >= 3 * LIFETIME, f"the job took {took:.1f} s, under 3 lifetimes: it proved nothing"
    assert row["generation"] >= 3, row
    # Nothing refused: tokens are renewed 2.5 s before they end. A loaded machine that stopped this
    # process for a second or more can still send a request signed before a renewal after the end.
    stall = STALLS.worst_since(began)
    assert row["rejections"] == 0 or stall >= 1.0, f"refused with no stall over {stall:.2f} s: {row}"
    # Every renewal by the catalog's storage-refresh-token: a /credentials answer carries none of its
    # own, and the one held stays good (a reload in between would mean it was dropped).
    assert set(row["refreshes_by_strategy"]) == {"storage-refresh-token"}, row["refreshes_by_strategy"]
    cat.close()


def test_tokens_dying_early_are_renewed_and_the_operation_runs_again(stack, io_impl):
    cat, name = catalog(stack, io_impl), table_name("early", io_impl)
    cat.create_table(f"db.{name}", ID_SCHEMA, properties=SMALL_FILES).append(id_rows(0, 100))
    stack.front.store_lifetime_s[f"db.{name}"] = EARLY
    table = cat.load_table(f"db.{name}")
    # Append until a refused token was renewed and the table written once more: a loop timed by the
    # clock saw no refusal when a loaded machine made a single append outlast the early death.
    n, deadline, after_renewal = 100, time.monotonic() + 6 * LIFETIME, 0
    while time.monotonic() < deadline and after_renewal < 2:
        table.append(id_rows(n, n + 50))
        n += 50
        assert ids(table) == list(range(n))
        after_renewal += status(cat, name)["reactive_refreshes"] >= 1
        time.sleep(1)
    row = status(cat, name)
    # The refusal itself renews: gcsfs's own retries of a 401 (~30 s with the same token) would let the
    # schedule (by the stated 10 s) renew first.
    assert row["rejections"] >= 1 and row["reactive_refreshes"] >= 1, f"{stack.store}: nothing refused: {row}"
    assert ids(cat.load_table(f"db.{name}")) == list(range(n))
    cat.close()


def test_tokens_dead_on_every_refresh_end_in_one_line(stack, io_impl):
    cat, name = catalog(stack, io_impl), table_name("dead", io_impl)
    cat.create_table(f"db.{name}", ID_SCHEMA).append(id_rows(0, 10))
    stack.front.store_lifetime_s[f"db.{name}"] = 0
    table = cat.load_table(f"db.{name}")
    start = time.monotonic()
    with pytest.raises(CredentialRefreshError) as info:
        table.append(id_rows(10, 20))
    message = str(info.value)
    assert "\n" not in message and f"rejected the keys of lake.db.{name} again" in message, message
    # Bounded: at most two renewals (the FileIO's three tries), in seconds; gcsfs's own retries of
    # each 401 would take ~30 s apiece.
    assert time.monotonic() - start < 40
    assert status(cat, name)["reactive_refreshes"] <= 2
    cat.close()


def test_a_scope_refusal_is_not_retried(stack, io_impl):
    cat, name = catalog(stack, io_impl), table_name("scoped", io_impl)
    table = cat.create_table(f"db.{name}", ID_SCHEMA)
    if stack.store == "gcs":
        outside = "gs://warehouse/elsewhere/x.bin"  # the table's token covers its own prefix only
    else:
        stack.emulator.create_container("other")
        outside = stack.emulator.location("other", "x.bin")  # the table's SAS is for its own container
    before = stack.front.count(table=f"db.{name}")
    with pytest.raises(Exception) as info:  # noqa: B017 - the store's own refusal, as each client raises it
        with table.io.new_output(outside).create(overwrite=True) as out:
            out.write(b"x")
    assert not isinstance(info.value, CredentialRefreshError), info.value
    row = status(cat, name)
    assert row["rejections"] == 0 and row["reactive_refreshes"] == 0, row
    assert stack.front.count(table=f"db.{name}") == before, "a scope refusal asked the catalog"
    cat.close()


def test_each_prefix_gets_its_own_token(stack, io_impl):
    name = table_name("two", io_impl)
    if stack.store == "gcs":
        stack.emulator.create_bucket("other")
        extra = f"gs://other/{name}"
    else:
        second = sorted(stack.emulator.keys)[1]
        stack.emulator.create_container("data", account=second)
        extra = stack.emulator.location("data", name, account=second)
    stack.front.extra_prefixes[f"db.{name}"] = [extra]
    cat = catalog(stack, io_impl)
    table = cat.create_table(f"db.{name}", ID_SCHEMA)
    table.append(id_rows(0, 10))
    for i in range(3):  # files under the second prefix, written and read back with the table's FileIO
        with table.io.new_output(f"{extra}/f{i}.bin").create(overwrite=True) as out:
            out.write(b"payload %d" % i)
    for i in range(3):
        with table.io.new_input(f"{extra}/f{i}.bin").open() as stream:
            assert stream.read() == b"payload %d" % i
    if stack.store == "adls":
        # Outside every vended prefix a file takes the table config's tokens, where both accounts' SAS
        # are: its own account's (PyIceberg alone would take the first `adls.sas-token.*` for any account).
        second_account_file = extra.rsplit("/", 1)[0] + "/outside/f.bin"
        with table.io.new_output(second_account_file).create(overwrite=True) as out:
            out.write(b"outside")
        with table.io.new_input(second_account_file).open() as stream:
            assert stream.read() == b"outside"
    assert ids(table) == list(range(10))
    if stack.store == "gcs":
        # Which token each request to each bucket carried, as the front saw it.
        grants = {g.label: g for g in stack.emulator.front.grants()}
        seen = [(e["route"], grants[e["token"]]) for e in stack.emulator.front.entries()
                if e["token"] in grants and "/b/other" in e["route"]]
        assert seen, "the front saw no request to the second bucket"
        assert all(grant.bucket == "other" for _, grant in seen), [(r, g.bucket, g.prefix) for r, g in seen]
        into_warehouse = [grants[e["token"]] for e in stack.emulator.front.entries()
                          if e["token"] in grants and "/b/warehouse" in e["route"]]
        assert into_warehouse and not any(g.bucket == "other" for g in into_warehouse)
    cat.close()


def test_a_read_stream_sought_to_its_end_reads_nothing_and_seeks_back(stack, io_impl):
    # Arrow's Python-file reader asks a file's size by seeking to its end; on GCS, Arrow's own file
    # would open a download there, which GCS refuses (416).
    cat = catalog(stack, io_impl)
    table = cat.create_table(f"db.{table_name('ends', io_impl)}", ID_SCHEMA)
    location = f"{table.location()}/data/blob.bin"
    with table.io.new_output(location).create(overwrite=True) as out:
        out.write(b"0123456789" * 83)
    with table.io.new_input(location).open() as stream:
        assert stream.seek(0, 2) == 830 and stream.read() == b"" and stream.read(10) == b""
        assert stream.seek(-10, 2) == 820 and stream.read() == b"0123456789"
        assert stream.seek(0) == 0 and stream.read() == b"0123456789" * 83
        if hasattr(stream, "read_buffer"):  # what PyArrow reads a Python file through, where the stream has it
            assert stream.seek(0, 2) == 830 and len(stream.read_buffer()) == 0
            assert stream.seek(820) == 820 and bytes(stream.read_buffer()) == b"0123456789"
    cat.close()


@pytest.mark.parametrize("first", ["read", "seek"])
def test_a_token_that_dies_after_the_open_is_renewed(stack, io_impl, first):
    # Arrow's GCS file opens its download at the first read, or at a seek; refused, it says only that
    # the file is closed, to that call and every later one. Here the store ends the table's tokens
    # right after the open; then the stream is read, or sought from the end first as Arrow's Parquet
    # reader does.
    if stack.store != "gcs":
        pytest.skip("only the GCS front can end a token it has handed out")
    cat = catalog(stack, io_impl)
    name = table_name(f"opened_{first}", io_impl)
    table = cat.create_table(f"db.{name}", ID_SCHEMA)
    location = f"{table.location()}/data/blob.bin"
    with table.io.new_output(location).create(overwrite=True) as out:
        out.write(b"0123456789" * 83)
    with table.io.new_input(location).open() as stream:
        front = stack.emulator.front
        for grant in front.grants():
            if grant.bucket == "warehouse" and f"/{name}" in grant.prefix:
                front.expire(grant.token)
        if first == "read":
            assert stream.read() == b"0123456789" * 83
        else:
            assert stream.seek(-10, 2) == 820 and stream.read() == b"0123456789"
    row = status(cat, name)
    assert row["rejections"] >= 1 and row["reactive_refreshes"] >= 1, row
    cat.close()


PART = 5 << 20  # the smallest part the knob takes; a stream of 13 MiB is 2 parts and a tail
MIB = 1 << 20


def chunk(i: int) -> bytes:
    return (b"%07d\n" % i) * (MIB // 8)


def streaming_table(stack, name: str):
    """A table whose writes go in parts of `PART`, one in flight (a stream holds at most 2 parts)."""
    cat = pyiceberg_catalog({"uri": stack.uri, "header.X-Iceberg-Access-Delegation": "vended-credentials",
                             "py-io-impl": PYARROW, "catalog-ext.pyiceberg.s3-part-bytes": str(PART),
                             "catalog-ext.pyiceberg.s3-parts-in-flight": "1"}, policy=POLICY)
    cat.create_namespace_if_not_exists("db")
    cat.create_table(f"db.{name}", ID_SCHEMA)
    return cat, f"db.{name}"


def gcs_uploads_started(stack, location: str) -> int:
    """Resumable uploads the GCS front saw begin for `location`'s object."""
    key = urlsplit(location).path.lstrip("/")
    return sum(1 for e in stack.emulator.front.entries()
               if e["method"] == "POST" and e["route"].startswith("/upload/storage/v1/b/") and e["status"] == 200
               and "uploadType=resumable" in e["query"] and "upload_id=" not in e["query"]  # not its chunks
               and f"name={key}" in e["query"].replace("%2F", "/"))


class RequestLog(ThreadedServer):
    """Relays every request to `upstream` as it came and notes (method, path with query, status)."""

    def __init__(self, upstream: str) -> None:
        super().__init__()
        self.upstream = upstream
        self.log: list[tuple[str, str, int]] = []

    def handle(self, h) -> None:
        forward_streaming(h, self.upstream, on_status=lambda status: self.log.append((h.command, h.path, status)))


def adls_blocks(stack, location: str, kind: str) -> list:
    """The blob's blocks (`committed` or `uncommitted`), read with the account key."""
    from tests.stores.azurite import AdlsLocation

    loc = AdlsLocation.parse(location)
    blob = stack.emulator.service(loc.account).get_blob_client(loc.container, loc.path)
    committed, uncommitted = blob.get_block_list(kind)
    return committed if kind == "committed" else uncommitted


def test_a_write_streams_in_parts_with_nothing_on_disk_and_bounded_memory(stack):
    cat, name = streaming_table(stack, "streamed")
    table = cat.load_table(name)
    with table.io.new_output(f"{table.location()}/data/warm.bin").create(overwrite=True) as out:
        out.write(b"warm")  # the store's client and its modules are made before memory is counted
    location = f"{table.location()}/data/streamed.bin"
    parts = [tracemalloc.Filter(True, part_upload.__file__)]  # where the writer allocates its part buffers
    held = []
    with SpoolDiskPeak() as disk:
        tracemalloc.start()
        try:
            with table.io.new_output(location).create(overwrite=True) as out:
                for i in range(13):
                    out.write(chunk(i))
                    disk.sample()
                    held.append(sum(s.size for s in tracemalloc.take_snapshot().filter_traces(parts).statistics("filename")))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert disk.peak == 0, f"{stack.store}: the write held {disk.peak} bytes of local disk"
    # Part buffers alive: the one filling and the one in flight, never a third.
    assert PART < max(held) <= 2 * PART + 65536, f"{stack.store}: part buffers of {held} bytes (parts of {PART}, 1 in flight)"
    # Coarse: all this process allocated meanwhile, with the caller's chunks, the store client's buffers,
    # the catalog fronts run here and a renewal's new client (the part buffers above are the bound).
    assert peak <= 4 * PART, f"{stack.store}: the process held {peak} bytes (parts of {PART}, 1 in flight)"
    with table.io.new_input(location).open() as back:
        assert back.read() == b"".join(chunk(i) for i in range(13))
    if stack.store == "gcs":
        assert gcs_uploads_started(stack, location) == 1
    else:
        assert [b.size for b in adls_blocks(stack, location, "committed")] == [PART, PART, 3 * MIB]
    cat.close()


def test_a_token_that_dies_mid_upload_is_renewed_and_the_upload_goes_on(stack):
    cat, name = streaming_table(stack, "midway")
    stack.front.store_lifetime_s[name] = EARLY  # ADLS: the SAS itself says so (Azurite checks it)
    if stack.store == "adls":  # the table reaches Azurite through a log of its requests
        account = next(iter(stack.emulator.keys))
        relay = RequestLog(f"http://127.0.0.1:{stack.emulator.port}").start()
        stack.front.endpoint_overrides[f"adls.connection-string.{stack.emulator.host(account)}"] = f"{relay.url}/{account}"
        try:
            table = cat.load_table(name)
        finally:
            stack.front.endpoint_overrides.clear()
    else:
        table = cat.load_table(name)
    loaded = time.monotonic()
    location = f"{table.location()}/data/midway.bin"
    with table.io.new_output(location).create(overwrite=True) as out:
        for i in range(10):
            out.write(chunk(i))
        # Part 1 acknowledged, part 2 sent: the token dies now, long before its stated end (renewed at 7.5 s).
        if stack.store == "gcs":
            for grant in stack.emulator.front.grants():
                if grant.bucket == "warehouse" and "/midway" in grant.prefix:
                    stack.emulator.front.expire(grant.token)
            staged: list = []
        else:
            time.sleep(max(0.0, loaded + EARLY + 1.1 - time.monotonic()))
            staged = [b.id for b in adls_blocks(stack, location, "uncommitted")]
            assert staged, "no block was staged before the token died"
        for i in range(10, 16):
            out.write(chunk(i))
        if stack.store == "adls":  # nothing staged twice: what is staged is at most what was written
            assert sum(b.size for b in adls_blocks(stack, location, "uncommitted")) <= 16 * MIB
    assert time.monotonic() - loaded < LIFETIME * 0.75, "the write outlasted the renewal on schedule: it proved nothing"
    with table.io.new_input(location).open() as back:
        assert back.read() == b"".join(chunk(i) for i in range(16))
    row = status(cat, name.split(".")[1])
    assert row["rejections"] >= 1 and row["reactive_refreshes"] >= 1, f"{stack.store}: nothing refused: {row}"
    if stack.store == "gcs":
        assert gcs_uploads_started(stack, location) == 1, "the upload was started again"
    else:  # the blocks staged before the death are in the blob, and no block was staged again once taken
        committed = adls_blocks(stack, location, "committed")
        assert set(staged) <= {b.id for b in committed}
        key = urlsplit(location).path
        taken = [path for method, path, status in relay.log
                 if method == "PUT" and path.partition("?")[0].endswith(key) and "comp=block&" in path + "&"
                 and status == 201]
        assert len(taken) == len(committed), f"{len(taken)} blocks staged for {len(committed)} in the blob"
        relay.stop()
    cat.close()


def test_a_write_that_fails_leaves_nothing_behind(stack):
    cat, name = streaming_table(stack, "failed")
    table = cat.load_table(name)
    location = f"{table.location()}/data/failed.bin"
    with pytest.raises(RuntimeError):
        with table.io.new_output(location).create(overwrite=True) as out:
            for i in range(11):
                out.write(chunk(i))
            raise RuntimeError("the encoder failed")
    assert not table.io.new_input(location).exists()
    cat.close()
