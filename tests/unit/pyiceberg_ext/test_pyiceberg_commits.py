"""PyIceberg commits through loopback fault proxies in front of real SeaweedFS.

Without idempotency (SeaweedFS): a lost answer and a duplicated request are reconciled by table
UUID and snapshot ids, a 503 before forwarding is retried; with the reference Idempotency-Key
server in the chain, a lost answer is repeated under the same key and replayed. Every case ends
with exactly one commit and the exact rows; the refused and undecidable cases raise
CommitFailedError / CommitStateUnknownError.
"""

from __future__ import annotations

import logging
import uuid as uuidlib

import pytest

from pyspark_catalog_ext.errors import CommitFailedError, CommitStateUnknownError
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from tests.helpers import ID_SCHEMA, id_rows
from tests.servers import CatalogProxy, IdempotencyProxy

FAST_RETRY = {"catalog-ext.commit.base-delay-ms": "10", "catalog-ext.commit.max-delay-ms": "50"}


@pytest.fixture(scope="module")
def plain(lakehouse):
    """client -> CatalogProxy (faults) -> SeaweedFS (no idempotency)."""
    with CatalogProxy(lakehouse.info.iceberg_uri) as proxy:
        cat = pyiceberg_catalog(lakehouse, uri=proxy.url, **FAST_RETRY)
        cat.create_namespace_if_not_exists("pyc")
        yield cat, proxy
        cat.close()


@pytest.fixture(scope="module")
def keyed(lakehouse):
    """client -> CatalogProxy (faults) -> IdempotencyProxy -> SeaweedFS."""
    with IdempotencyProxy(lakehouse.info.iceberg_uri, lifetime="PT30M") as idem, CatalogProxy(idem.url) as proxy:
        cat = pyiceberg_catalog(lakehouse, uri=proxy.url, **FAST_RETRY)
        cat.create_namespace_if_not_exists("pyk")
        yield cat, proxy, idem
        cat.close()


@pytest.fixture(scope="module")
def polaris17(lakehouse):
    """client -> CatalogProxy (faults) -> the Polaris 1.7.0 emulator with idempotency on (one lifetime
    advertised; createTable and updateTable without assert-create replayed, nothing else) -> SeaweedFS."""
    from pyspark_catalog_ext.spark.conf import spark_conf
    from tests.emulators import Emulator, connection
    from tests.emulators.behaviour import POLARIS_1_7_IDEMPOTENT as b
    from tests.servers import S3ExpiryProxy

    s3 = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    try:
        with Emulator(b, lakehouse, s3, 900.0) as emu, CatalogProxy(emu.url) as proxy:
            conf = spark_conf(b.profile, "p17", jars=None, **{**connection(b, emu), "uri": proxy.url})
            cat = pyiceberg_catalog(conf, "p17", refresh=False, **FAST_RETRY)
            yield cat, proxy, emu
            cat.close()
    finally:
        s3.stop()


def commit_path(name: str) -> str:
    return rf"/namespaces/[^/]+/tables/{name}$"


def create_with_fault(cat, proxy, ns: str, fault: str, status: int = 503):
    name = f"c_{fault}_{uuidlib.uuid4().hex[:6]}"
    tx = cat.create_table_transaction(f"{ns}.{name}", ID_SCHEMA)
    tx.append(id_rows(0, 100))
    proxy.faults.add(fault, "POST", commit_path(name), status=status)
    tx.commit_transaction()
    return name


def append_with_fault(cat, proxy, ns: str, fault: str, status: int = 503):
    name = f"a_{fault}_{uuidlib.uuid4().hex[:6]}"
    table = cat.create_table(f"{ns}.{name}", ID_SCHEMA)
    table.append(id_rows(0, 100))
    proxy.faults.add(fault, "POST", commit_path(name), status=status)
    table.append(id_rows(100, 200))
    return name


def check_guarded(caplog, proxy, ns: str, name: str, fault: str) -> None:
    """Our guard decided, not PyIceberg's own conflict retry: one commit request sent (two for a 503)."""
    assert "concurrent update" not in caplog.text  # PyIceberg never saw a CommitFailedException
    sent = proxy.count(kind="commit", table=f"{ns}.{name}")
    assert sent == (2 if fault == "error" else 1), sent
    if fault in ("drop", "duplicate"):
        assert "landed although its answer was" in caplog.text  # reconciled by UUID / snapshot ids


def check_once(cat, ns: str, name: str, expected_rows: int, expected_snapshots: int) -> None:
    table = cat.load_table(f"{ns}.{name}")
    ids = sorted(table.scan().to_arrow().column("id").to_pylist())
    assert ids == list(range(expected_rows))  # exact rows: nothing lost, nothing twice
    assert len(table.snapshots()) == expected_snapshots
    assert len(table.inspect.files()) == expected_snapshots  # one data file per commit, no duplicate


@pytest.mark.parametrize("fault", ["drop", "duplicate", "error"])
def test_create_transaction_commit_survives(plain, fault, caplog):
    cat, proxy = plain
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")
    name = create_with_fault(cat, proxy, "pyc", fault)
    assert proxy.faults.pending == 0
    check_guarded(caplog, proxy, "pyc", name, fault)
    check_once(cat, "pyc", name, 100, 1)


@pytest.mark.parametrize("fault", ["drop", "duplicate", "error"])
def test_append_commit_survives(plain, fault, caplog):
    cat, proxy = plain
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")
    name = append_with_fault(cat, proxy, "pyc", fault)
    assert proxy.faults.pending == 0
    sent = proxy.count(kind="commit", table=f"pyc.{name}") - 1  # minus the first append's
    assert sent == (2 if fault == "error" else 1), sent
    assert "concurrent update" not in caplog.text
    if fault in ("drop", "duplicate"):
        assert "landed although its answer was" in caplog.text
    check_once(cat, "pyc", name, 200, 2)


@pytest.mark.parametrize("op", ["create", "append"])
def test_lost_answer_is_replayed_under_the_same_key(keyed, op):
    """A plain commit's lost answer is repeated under its key and replayed. A staged create's commit
    (assert-create) is looked at instead, even where the catalog would replay it: Polaris 1.7.0 does
    not, and nothing in /v1/config says which catalog does (commit-decisions.json `covered`)."""
    cat, proxy, idem = keyed
    assert cat.idempotency_key_lifetime_s == 1800
    replays = idem.replays
    if op == "create":
        name = create_with_fault(cat, proxy, "pyk", "drop")
        check_once(cat, "pyk", name, 100, 1)
    else:
        name = append_with_fault(cat, proxy, "pyk", "drop")
        check_once(cat, "pyk", name, 200, 2)
    sent = [e for e in proxy.log if e["kind"] == "commit" and e["table"] == f"pyk.{name}"]
    if op == "create":
        assert idem.replays == replays and len(sent) == 1  # recognised by its table UUID, not repeated
    else:
        assert idem.replays == replays + 1  # the retry carried the same key and got the stored answer
        assert len(sent) >= 2


def test_a_catalog_declared_to_replay_staged_create_commits_gets_them_repeated_under_the_key(lakehouse, keyed):
    """What a catalog de-duplicates comes from its profile (catalog-ext.commit.deduplicated-operations).
    Declared to replay every operation (the reference server here does), a staged create's commit whose
    answer was lost is repeated under its key and replayed, not looked at as for the narrowest set."""
    from pyspark_catalog_ext.commit.decision import table as decision_table

    _, proxy, idem = keyed
    every = ",".join(decision_table()["deduplicated_operations"]["operations"])
    cat = pyiceberg_catalog(lakehouse, uri=proxy.url, **FAST_RETRY, **{"catalog-ext.commit.deduplicated-operations": every})
    try:
        replays = idem.replays
        name = create_with_fault(cat, proxy, "pyk", "drop")
        check_once(cat, "pyk", name, 100, 1)
        sent = [e for e in proxy.log if e["kind"] == "commit" and e["table"] == f"pyk.{name}"]
        assert idem.replays == replays + 1 and len(sent) == 2  # the repeat carried the key, got the stored answer
    finally:
        cat.close()


def manifests(table) -> list[str]:
    """The manifest and manifest-list files under the table's metadata/ (listed with its current keys)."""
    from pyarrow.fs import FileSelector, FileType
    from pyiceberg.io.pyarrow import PyArrowFileIO

    bucket, _, path = table.location().removeprefix("s3://").partition("/")
    fs = PyArrowFileIO(table.io.properties).fs_by_scheme("s3", bucket)
    infos = fs.get_file_info(FileSelector(f"{bucket}/{path}/metadata", recursive=True, allow_not_found=True))
    return [i.path for i in infos if i.type == FileType.File and i.path.endswith(".avro")]


def test_refused_every_time_is_commit_failed(plain):
    cat, proxy = plain
    name = f"r_{uuidlib.uuid4().hex[:6]}"
    table = cat.create_table(f"pyc.{name}", ID_SCHEMA)
    # 429 proves the catalog did not take it. PyIceberg retries a CommitFailedException itself
    # (commit.retry.num-retries, as Iceberg Java does) and then deletes the files it wrote: our
    # CommitFailedError is one, with the same meaning.
    proxy.faults.add("error", "POST", commit_path(name), status=429, times=1000)
    try:
        with pytest.raises(CommitFailedError, match="nothing was published"):
            table.append(id_rows(0, 10))
    finally:
        proxy.faults.clear()
    assert len(cat.load_table(f"pyc.{name}").snapshots()) == 0
    assert manifests(table) == []  # failed means nothing landed: PyIceberg deleted what it wrote


@pytest.mark.parametrize("status", [502, 503])
def test_gateway_error_every_time_is_unknown(plain, status):
    """A 502/503 may come after the catalog applied the commit (a gateway): as in Spark, never
    'failed' unless the table proves it; out of attempts with nothing visible it is unknown."""
    cat, proxy = plain
    name = f"u{status}_{uuidlib.uuid4().hex[:6]}"
    table = cat.create_table(f"pyc.{name}", ID_SCHEMA)
    proxy.faults.add("error", "POST", commit_path(name), status=status, times=1000)
    try:
        with pytest.raises(CommitStateUnknownError, match="every file is kept"):
            table.append(id_rows(0, 10))
    finally:
        proxy.faults.clear()
    assert len(cat.load_table(f"pyc.{name}").snapshots()) == 0
    assert len(manifests(table)) >= 2  # unknown: its manifest and manifest list are kept (they might be live)


def test_gateway_error_once_is_looked_up_then_repeated(plain, caplog):
    cat, proxy = plain
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")
    name = append_with_fault(cat, proxy, "pyc", "error", status=502)
    assert proxy.count(kind="commit", table=f"pyc.{name}") - 1 == 2
    assert "concurrent update" not in caplog.text
    check_once(cat, "pyc", name, 200, 2)


@pytest.mark.parametrize("status", [400, 501])
def test_bad_request_on_a_snapshot_commit_is_unknown(plain, status):
    """Polaris <= 1.7 answers 400 for a commit whose state it does not know: as in Spark, a 400 on a
    commit that adds a snapshot keeps every file (unknown) unless the table shows the commit. So does
    any 5xx but 502/503/504 (table row 501-pending-unknown): it may have been applied first."""
    cat, proxy = plain
    name = f"b{status}_{uuidlib.uuid4().hex[:6]}"
    table = cat.create_table(f"pyc.{name}", ID_SCHEMA)
    proxy.faults.add("error", "POST", commit_path(name), status=status)
    with pytest.raises(CommitStateUnknownError, match=f"HTTP {status}"):
        table.append(id_rows(0, 10))
    assert len(manifests(table)) >= 2


def test_another_writer_wins_is_commit_failed_and_pyiceberg_retries(plain, caplog):
    """A real conflict (409, our snapshot absent, our requirements broken) is CommitFailedError, so
    PyIceberg's own conflict retry rebuilds the append on the new table state: both appends land."""
    cat, _ = plain
    name = f"w_{uuidlib.uuid4().hex[:6]}"
    cat.create_table(f"pyc.{name}", ID_SCHEMA)
    ours, theirs = cat.load_table(f"pyc.{name}"), cat.load_table(f"pyc.{name}")
    theirs.append(id_rows(100, 200))
    with caplog.at_level(logging.WARNING):
        ours.append(id_rows(0, 100))
    assert "concurrent update" in caplog.text  # PyIceberg saw our CommitFailedException and retried
    check_once(cat, "pyc", name, 200, 2)


@pytest.mark.parametrize("op", ["create", "append"])
def test_pyiceberg_alone_fails_on_a_lost_answer(lakehouse, plain, op):
    """The control: PyIceberg's own RestCatalog raises ConnectionError
    although the commit landed; rerunning a create then finds the table already there. Ours
    (test_create_transaction_commit_survives / test_append_commit_survives) succeeds once."""
    import requests
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import CommitFailedException

    _, proxy = plain
    props = {k: v for k, v in pyiceberg_catalog(lakehouse, uri=proxy.url, refresh=False).properties.items()
             if isinstance(v, str)}
    cat = RestCatalog("plainpy", **props)
    name = f"p_{op}_{uuidlib.uuid4().hex[:6]}"
    if op == "create":
        tx = cat.create_table_transaction(f"pyc.{name}", ID_SCHEMA)
        tx.append(id_rows(0, 10))
        proxy.faults.add("drop", "POST", commit_path(name))
        with pytest.raises(requests.ConnectionError):
            tx.commit_transaction()
        assert cat.load_table(f"pyc.{name}").scan().to_arrow().num_rows == 10  # committed with all its rows
        rerun = cat.create_table_transaction  # the user's natural reaction: run the job again
        with pytest.raises(CommitFailedException, match="already exists"):
            tx = rerun(f"pyc.{name}", ID_SCHEMA)
            tx.append(id_rows(0, 10))
            tx.commit_transaction()
    else:
        table = cat.create_table(f"pyc.{name}", ID_SCHEMA)
        proxy.faults.add("drop", "POST", commit_path(name))
        with pytest.raises(requests.ConnectionError):
            table.append(id_rows(0, 10))
        assert len(cat.load_table(f"pyc.{name}").snapshots()) == 1  # it landed anyway


def test_other_mutations_carry_a_fresh_uuid7_key(keyed):
    cat, _, idem = keyed
    before = set(idem.entries())
    name = f"pyk.m_{uuidlib.uuid4().hex[:6]}"
    cat.create_table(name, ID_SCHEMA)
    cat.drop_table(name)
    keys = set(idem.entries()) - before
    assert len(keys) == 2  # create, drop: one new key each
    assert all(uuidlib.UUID(key).version == 7 for key in keys)


def test_bad_commit_setting_is_one_line():
    from pyspark_catalog_ext.errors import ConfigError
    from pyspark_catalog_ext.pyiceberg_ext import CommitPolicy

    assert CommitPolicy.from_properties({"catalog-ext.commit.max-attempts": "3"}).max_attempts == 3
    with pytest.raises(ConfigError, match=r"^Bad catalog property catalog-ext.commit.base-delay-ms='fast': use a whole number from 0 to 600000$"):
        CommitPolicy.from_properties({"catalog-ext.commit.base-delay-ms": "fast"})
    with pytest.raises(ConfigError, match="max-attempts"):
        CommitPolicy.from_properties({"catalog-ext.commit.max-attempts": "0"})
    with pytest.raises(ConfigError, match=r"^Unknown catalog property catalog-ext.commit.max-atempts; known: "):
        CommitPolicy.from_properties({"catalog-ext.commit.max-atempts": "3"})
    # As in the JVM: 0 means no wait between attempts (it was refused here before the shared spec).
    assert CommitPolicy.from_properties({"catalog-ext.commit.base-delay-ms": "0"}).base_delay_s == 0


# ---- catalog-ext.commit.idempotency: PyIceberg honours it as the JVM does

def _commit_keys(proxy, name: str) -> list:
    return [e["idempotency_key"] for e in proxy.log if e["kind"] == "commit" and e["table"] == name]


def test_idempotency_never_sends_no_key_to_a_server_that_advertises_it(lakehouse, keyed):
    _, proxy, idem = keyed
    cat = pyiceberg_catalog(lakehouse, uri=proxy.url, **FAST_RETRY, **{"catalog-ext.commit.idempotency": "never"})
    try:
        assert cat.idempotency_key_lifetime_s == 1800  # advertised, and still not used
        name = f"pyk.never_{uuidlib.uuid4().hex[:6]}"
        before = set(idem.entries())
        cat.create_table(name, ID_SCHEMA).append(id_rows(0, 10))
        assert _commit_keys(proxy, name) and not any(_commit_keys(proxy, name))
        assert set(idem.entries()) == before  # no create, commit or other mutation carried a key
    finally:
        cat.close()


def test_idempotency_always_sends_keys_but_reconciles_where_not_advertised(lakehouse, plain, caplog):
    _, proxy = plain
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")
    cat = pyiceberg_catalog(lakehouse, uri=proxy.url, **FAST_RETRY, **{"catalog-ext.commit.idempotency": "always"})
    try:
        assert cat.idempotency_key_lifetime_s is None
        name = append_with_fault(cat, proxy, "pyc", "drop")
        keys = _commit_keys(proxy, f"pyc.{name}")
        assert keys and all(k and uuidlib.UUID(k).version == 7 for k in keys)
        # The server never promised to de-duplicate: the lost answer is settled by looking, not by a replay.
        assert "reconciled" in caplog.text
        check_once(cat, "pyc", name, 200, 2)
    finally:
        cat.close()


# ---- a refusal after an attempt that may have been applied is reconciled first

@pytest.mark.parametrize("status", [401, 403, 404])
def test_refusal_after_an_applied_lost_answer_is_success_once(keyed, status, caplog):
    """The first attempt lands but its answer is lost; the keyed retry is refused (401/403/404, as a
    gateway or an expired token would). The table shows ours: success once, every file kept."""
    cat, proxy, _ = keyed
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")
    name = f"a_r{status}_{uuidlib.uuid4().hex[:6]}"
    table = cat.create_table(f"pyk.{name}", ID_SCHEMA)
    table.append(id_rows(0, 100))
    proxy.faults.add("drop", "POST", commit_path(name))
    proxy.faults.add("error", "POST", commit_path(name), status=status)
    table.append(id_rows(100, 200))
    assert proxy.faults.pending == 0
    assert proxy.count(kind="commit", table=f"pyk.{name}") - 1 == 2  # the lost one and the refused one
    assert "concurrent update" not in caplog.text  # PyIceberg never saw a CommitFailedException
    assert f"landed although its answer was HTTP {status}" in caplog.text
    check_once(cat, "pyk", name, 200, 2)
    assert len(manifests(cat.load_table(f"pyk.{name}"))) >= 4  # both commits' manifests and lists


def test_404_after_a_lost_attempt_that_did_not_apply_is_unknown(plain):
    """The first attempt never reached the catalog (a 504 from a gateway: maybe it did), the retry
    gets 404. The table does not show ours and it could still land: unknown, files kept, never
    'failed' (PyIceberg would delete the files and retry)."""
    cat, proxy = plain
    name = f"n404_{uuidlib.uuid4().hex[:6]}"
    table = cat.create_table(f"pyc.{name}", ID_SCHEMA)
    proxy.faults.add("error", "POST", commit_path(name), status=504)
    proxy.faults.add("error", "POST", commit_path(name), status=404)
    try:
        with pytest.raises(CommitStateUnknownError, match="HTTP 404.*every file is kept"):
            table.append(id_rows(0, 10))
    finally:
        proxy.faults.clear()
    assert proxy.count(kind="commit", table=f"pyc.{name}") == 2
    assert len(cat.load_table(f"pyc.{name}").snapshots()) == 0
    assert len(manifests(table)) >= 2  # kept


def test_401_after_a_lost_attempt_with_unreadable_table_is_unknown(plain):
    """401 after a maybe-applied attempt, and the reconciliation load is refused too: unknown."""
    cat, proxy = plain
    name = f"u401_{uuidlib.uuid4().hex[:6]}"
    table = cat.create_table(f"pyc.{name}", ID_SCHEMA)
    proxy.faults.add("error", "POST", commit_path(name), status=504)
    proxy.faults.add("error", "POST", commit_path(name), status=401)
    proxy.faults.add("error", "GET", commit_path(name), status=401, times=1000)
    # The first 504 loads the table once (401 too: cannot tell, retry), then the 401 answer.
    try:
        with pytest.raises(CommitStateUnknownError, match="HTTP 401.*every file is kept"):
            table.append(id_rows(0, 10))
    finally:
        proxy.faults.clear()
    assert len(cat.load_table(f"pyc.{name}").snapshots()) == 0
    assert len(manifests(table)) >= 2


def test_huge_key_lifetime_is_clamped():
    import requests

    from pyspark_catalog_ext.pyiceberg_ext.commits import MAX_KEY_LIFETIME_S, GuardedCommit

    for seconds in (86399999913600.0, float("inf")):  # P999999999D, and beyond
        guard = GuardedCommit(requests.Session(), "http://127.0.0.1:9/x", b"{}", table="t", requirements=(),
                              updates=(), load_metadata=lambda: None, idempotency_lifetime_s=seconds)
        assert guard.key_lifetime_s == MAX_KEY_LIFETIME_S == 7 * 86400
    sane = GuardedCommit(requests.Session(), "http://127.0.0.1:9/x", b"{}", table="t", requirements=(),
                         updates=(), load_metadata=lambda: None, idempotency_lifetime_s=1800.0)
    assert sane.key_lifetime_s == 1800.0


# -- creates, drops and renames whose answer is lost after the catalog applied it ------------------
# The proxy forwards the request (the catalog applies it), then closes the connection unanswered.
# PyIceberg raised requests' raw ConnectionError for each; now the change is looked at: success, once.


def _lose_answer(proxy, method: str, path: str) -> None:
    proxy.faults.add("drop", method, path)


@pytest.mark.parametrize("chain", ["plain", "keyed", "polaris17"])
def test_lost_answers_to_creates_drops_and_renames_are_one_success(request, chain):
    """Without idempotency (plain), behind a catalog that de-duplicates every operation (keyed) and on
    Polaris 1.7.0 with idempotency on, which advertises a lifetime but replays only table creates and
    plain commits (polaris17)."""
    cat, proxy = request.getfixturevalue(chain)[:2]
    ns, tag = f"lost_{chain}", uuidlib.uuid4().hex[:6]
    before = len(proxy.entries())
    _lose_answer(proxy, "POST", r"/namespaces$")
    cat.create_namespace(ns, {"owner": "me"})
    assert proxy.faults.pending == 0
    assert cat.load_namespace_properties(ns)["owner"] == "me"
    sent = [e for e in proxy.entries()[before:] if e["method"] == "POST" and e["path"].split("?")[0].endswith("/namespaces")]
    assert len(sent) == 1  # looked at, never repeated

    name = f"t_{tag}"
    _lose_answer(proxy, "POST", rf"/namespaces/{ns}/tables$")
    table = cat.create_table(f"{ns}.{name}", ID_SCHEMA, properties={"p": "1"})
    assert proxy.faults.pending == 0 and table.name() == (ns, name)
    assert proxy.count(kind="create", table=f"{ns}.{name}") == 1

    _lose_answer(proxy, "POST", commit_path(name))
    table.append(id_rows(0, 10))  # a snapshot commit: replayed under its key (keyed, polaris17) or recognised (plain)
    assert proxy.faults.pending == 0
    assert len(cat.load_table(f"{ns}.{name}").snapshots()) == 1
    _lose_answer(proxy, "POST", r"/tables/rename$")
    renamed = cat.rename_table(f"{ns}.{name}", f"{ns}.{name}_r")
    assert proxy.faults.pending == 0 and renamed.name() == (ns, f"{name}_r")
    assert [t[-1] for t in cat.list_tables(ns)] == [f"{name}_r"]  # exactly one change: renamed once
    assert len(cat.load_table(f"{ns}.{name}_r").snapshots()) == 1

    _lose_answer(proxy, "DELETE", rf"/namespaces/{ns}/tables/{name}_r(\?|$)")
    cat.drop_table(f"{ns}.{name}_r")
    assert proxy.faults.pending == 0 and cat.list_tables(ns) == []
    assert proxy.count(kind="drop", table=f"{ns}.{name}_r") == 1

    _lose_answer(proxy, "DELETE", rf"/namespaces/{ns}(\?|$)")
    cat.drop_namespace(ns)
    assert proxy.faults.pending == 0 and not cat.namespace_exists(ns)


def test_a_lost_create_answer_with_someone_elses_table_there_is_a_one_line_conflict(plain):
    from pyiceberg.exceptions import TableAlreadyExistsError

    from pyspark_catalog_ext.errors import CatalogConflictError

    cat, proxy = plain
    name = f"theirs_{uuidlib.uuid4().hex[:6]}"
    cat.create_table(f"pyc.{name}", ID_SCHEMA, properties={"owner": "them"})
    # Ours is answered 409 upstream and the answer lost: the look finds a table that is not ours.
    _lose_answer(proxy, "POST", r"/namespaces/pyc/tables$")
    with pytest.raises(CatalogConflictError) as caught:
        cat.create_table(f"pyc.{name}", ID_SCHEMA, properties={"owner": "me"})
    assert isinstance(caught.value, TableAlreadyExistsError)  # PyIceberg's type too
    text = str(caught.value)
    assert "exists with other metadata than we sent" in text and "\n" not in text, text


def _metadata_copy(lakehouse, table, location: str) -> str:
    """A copy of `table`'s metadata file naming `location`, written there with the lakehouse's admin keys:
    something to register (the lakehouse refuses a register at another table's location)."""
    from pyiceberg.io import load_file_io
    from pyiceberg.serializers import ToOutputFile

    io = load_file_io({"s3.endpoint": lakehouse.info.s3_endpoint, "s3.access-key-id": lakehouse.info.access_key,
                       "s3.secret-access-key": lakehouse.info.secret_key, "s3.region": "us-east-1",
                       "s3.force-virtual-addressing": "false"})
    path = f"{location}/metadata/00000-{uuidlib.uuid4()}.metadata.json"
    ToOutputFile.table_metadata(table.metadata.model_copy(update={"location": location}), io.new_output(path))
    return path


def test_a_lost_register_answer_is_looked_at(lakehouse, plain):
    """register_table, its answer lost after the catalog applied it: the table is there with the
    metadata location we sent, so success, sent once. Registered already with another metadata file:
    a one-line conflict. PyIceberg raised requests' raw ConnectionError for both."""
    from pyiceberg.exceptions import TableAlreadyExistsError

    from pyspark_catalog_ext.errors import CatalogConflictError

    cat, proxy = plain
    tag = uuidlib.uuid4().hex[:6]
    source = cat.create_table(f"pyc.src_{tag}", ID_SCHEMA)
    source.append(id_rows(0, 10))
    ours = _metadata_copy(lakehouse, cat.load_table(f"pyc.src_{tag}"), f"s3://warehouse/pyc/reg_{tag}")
    before = len(proxy.entries())
    _lose_answer(proxy, "POST", r"/namespaces/pyc/register$")
    table = cat.register_table(f"pyc.reg_{tag}", ours)
    assert proxy.faults.pending == 0 and table.metadata_location == ours
    sent = [e for e in proxy.entries()[before:] if e["method"] == "POST" and e["path"].split("?")[0].endswith("/register")]
    assert len(sent) == 1  # looked at, never repeated

    other = _metadata_copy(lakehouse, cat.load_table(f"pyc.src_{tag}"), f"s3://warehouse/pyc/reg_{tag}")
    _lose_answer(proxy, "POST", r"/namespaces/pyc/register$")  # upstream answers 409, the answer is lost
    with pytest.raises(CatalogConflictError) as caught:
        cat.register_table(f"pyc.reg_{tag}", other)
    assert proxy.faults.pending == 0 and isinstance(caught.value, TableAlreadyExistsError)
    text = str(caught.value)
    assert "exists with another metadata file" in text and "\n" not in text, text
    assert cat.load_table(f"pyc.reg_{tag}").metadata_location == ours


def test_a_staged_create_commit_is_looked_at_not_repeated_on_polaris_1_7(polaris17):
    """Polaris 1.7.0 advertises a lifetime but does not replay a staged create's commit (assert-create):
    its lost answer is looked at (the table UUID), not repeated under the key into a 409."""
    cat, proxy, _ = polaris17
    cat.create_namespace_if_not_exists("p17")
    name = create_with_fault(cat, proxy, "p17", "drop")
    assert proxy.faults.pending == 0
    assert proxy.count(kind="commit", table=f"p17.{name}") == 1, proxy.count(kind="commit", table=f"p17.{name}")
    check_once(cat, "p17", name, 100, 1)
