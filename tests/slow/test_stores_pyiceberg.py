"""PyIceberg jobs on ADLS (Azurite) and GCS (fake-gcs-server behind its token-checking front), through
`pyiceberg_catalog` on Iceberg's REST fixture behind the vending front (tests/stores), with 10 s tokens.

FsspecFileIO (adlfs, gcsfs) is the FileIO tested here: PyArrow's filesystems cannot run against these
emulators (docs/stores.md section 5 has the evidence: Arrow's AzureFileSystem lists through a call
Azurite 3.35 refuses, and Arrow's GCS reader fails on fake-gcs-server's answer to a read at EOF).

- An append loop with one Table object and a slow scan, together over 3 token lifetimes: exact rows,
  renewed on schedule, nothing refused.
- Tokens the store stops taking after 3 s of the stated 10 s: the refused operation is renewed once
  and run again (exact rows); tokens dead on every refresh end in one line; a scope refusal (another
  GCS prefix, another ADLS container) is raised as it came, never retried.
- Two accounts (ADLS) or two buckets (GCS) vended in one table answer: each file gets its own
  prefix's token (the stores take only their own), and the GCS front saw each bucket's token only there.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from pyspark_catalog_ext.credentials import RefreshPolicy
from pyspark_catalog_ext.errors import CredentialRefreshError
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from tests.stores.catalog import store_catalog
from tests.stores.install import StoreUnavailable

pytest.importorskip("adlfs")
pytest.importorskip("gcsfs")

LIFETIME = 10.0  # seconds each vended token lives, as stated
EARLY = 3.0  # the store takes a token this long only, in the early-death tests
# Renew once a quarter of a token's life is left, checked 4 times a second.
POLICY = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.25)
FSSPEC = "pyiceberg.io.fsspec.FsspecFileIO"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
SMALL_FILES = {"write.target-file-size-bytes": "800"}


def rows(start: int, stop: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, stop), pa.int64())}, schema=SCHEMA)


@pytest.fixture(scope="module", params=["adls", "gcs"])
def stack(request):
    try:
        with store_catalog(request.param, lifetime_s=LIFETIME, refresh_tokens=True) as running:
            yield running
    except StoreUnavailable as exc:
        pytest.skip(str(exc))


def catalog(stack):
    cat = pyiceberg_catalog({"uri": stack.uri, "header.X-Iceberg-Access-Delegation": "vended-credentials",
                             "py-io-impl": FSSPEC}, policy=POLICY)
    cat.create_namespace_if_not_exists("db")
    return cat


def ids(table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def status(cat, name: str) -> dict:
    return next(r for r in cat.credentials_status() if r["table"] == f"lake.db.{name}")


def test_append_and_scan_over_three_lifetimes(stack):
    cat = catalog(stack)
    table = cat.create_table("db.held", SCHEMA, properties=SMALL_FILES)
    start, n = time.monotonic(), 0
    while time.monotonic() - start < 2 * LIFETIME + 1:  # one Table object: its FileIO must renew itself
        table.append(rows(n, n + 100))
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
    row = status(cat, "held")
    assert took >= 3 * LIFETIME, f"the job took {took:.1f} s, under 3 lifetimes: it proved nothing"
    assert row["generation"] >= 3 and row["rejections"] == 0, row
    cat.close()


def test_tokens_dying_early_are_renewed_and_the_operation_runs_again(stack):
    cat = catalog(stack)
    cat.create_table("db.early", SCHEMA, properties=SMALL_FILES).append(rows(0, 100))
    stack.front.store_lifetime_s["db.early"] = EARLY
    table = cat.load_table("db.early")
    n, start = 100, time.monotonic()
    while time.monotonic() - start < 2 * EARLY + 1:
        table.append(rows(n, n + 50))
        n += 50
        assert ids(table) == list(range(n))
        time.sleep(1)
    row = status(cat, "early")
    # The refusal itself renews: gcsfs's own retries of a 401 (~30 s with the same token) would let the
    # schedule (by the stated 10 s) renew first.
    assert row["rejections"] >= 1 and row["reactive_refreshes"] >= 1, f"{stack.store}: nothing refused: {row}"
    assert ids(cat.load_table("db.early")) == list(range(n))
    cat.close()


def test_tokens_dead_on_every_refresh_end_in_one_line(stack):
    cat = catalog(stack)
    cat.create_table("db.dead", SCHEMA).append(rows(0, 10))
    stack.front.store_lifetime_s["db.dead"] = 0
    table = cat.load_table("db.dead")
    start = time.monotonic()
    with pytest.raises(CredentialRefreshError) as info:
        table.append(rows(10, 20))
    message = str(info.value)
    assert "\n" not in message and "rejected the keys of lake.db.dead again" in message, message
    # Bounded: at most two renewals (the FileIO's three tries), in seconds; gcsfs's own retries of
    # each 401 would take ~30 s apiece.
    assert time.monotonic() - start < 40
    assert status(cat, "dead")["reactive_refreshes"] <= 2
    cat.close()


def test_a_scope_refusal_is_not_retried(stack):
    cat = catalog(stack)
    table = cat.create_table("db.scoped", SCHEMA)
    if stack.store == "gcs":
        outside = "gs://warehouse/elsewhere/x.bin"  # the table's token covers its own prefix only
    else:
        stack.emulator.create_container("other")
        outside = stack.emulator.location("other", "x.bin")  # the table's SAS is for its own container
    before = stack.front.count(table="db.scoped")
    with pytest.raises(Exception) as info:  # noqa: B017 - the store's own refusal, as each client raises it
        with table.io.new_output(outside).create(overwrite=True) as out:
            out.write(b"x")
    assert not isinstance(info.value, CredentialRefreshError), info.value
    row = status(cat, "scoped")
    assert row["rejections"] == 0 and row["reactive_refreshes"] == 0, row
    assert stack.front.count(table="db.scoped") == before, "a scope refusal asked the catalog"
    cat.close()


def test_each_prefix_gets_its_own_token(stack):
    if stack.store == "gcs":
        stack.emulator.create_bucket("other")
        extra = "gs://other/data"
    else:
        second = sorted(stack.emulator.keys)[1]
        stack.emulator.create_container("data", account=second)
        extra = stack.emulator.location("data", "files", account=second)
    stack.front.extra_prefixes["db.two"] = [extra]
    cat = catalog(stack)
    table = cat.create_table("db.two", SCHEMA)
    table.append(rows(0, 10))
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
