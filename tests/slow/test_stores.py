"""ADLS and GCS on the emulated stores (tests/stores): Azurite, fake-gcs-server behind its token front,
Iceberg's REST fixture 1.11.0 on them behind a front that vends short-lived SAS and GCS tokens.

Each Spark job runs on the package's user path (`configure(store=...)`: the shim's FileIO for the
store, the store's SDK bundle) in a process of its own (tests/stores/store_job.py). One job per store
(4 executor JVMs) serves every test but the Iceberg 1.10 create, which runs on another Spark line:
Spark's start costs more than most steps under load.

A job that fails the way plain Iceberg does raises `StoreRefusal` with the store's one-line answer.
"""
from __future__ import annotations

import math
import re

import pytest

from tests.slow.test_stack_matrix import spark_venv
from tests.stores.catalog import store_catalog
from tests.stores.install import StoreUnavailable
from tests.stores.store_job import run_job, summarize

ICEBERG = "1.11.0"
LIFETIME = 10  # seconds each vended token lives in the expiry tests
EXECUTORS = 4  # executor JVMs of the per-store session
ROWS = 4  # single-row files of a staged create, each row 0.8 lifetimes slow: the job spans 3.2 lifetimes
FILES = 3 * EXECUTORS  # single-row files the renewal test reads, one task each, 3 per executor, each 1 lifetime slow
# The session's refresh policy: renew once 1/4 of a token's life is left (the shim's hard margin for short
# tokens), checked every second.
RENEWAL_POLICY = {"min_ahead_s": 0, "lifetime_fraction": 0.25, "check_interval_s": 1}
# Keys that die early: the store takes early_keys' tokens EARLY_STORE_S seconds while the answer states
# LIFETIME; the create's 2 tasks each write their row after EARLY_MS, past the store's end and before the
# renewal the stated lifetime schedules (0.75 LIFETIME). dead_keys' tokens are dead from the start.
EARLY_STORE_S = 3
EARLY_MS = 5_000

# How each store refuses a token today, as the job reports it.
REFUSALS = {
    # Azurite answers an expired SAS 403 AuthorizationFailure (Azure: 403 AuthenticationFailed).
    "adls": re.compile(r"403 Authori[sz]ationFailure|403 AuthenticationFailed"),
    # google-auth treats a token with under 3 minutes left as expired and, with no refresh handler,
    # refuses to send it; past that, the front answers 401 as GCS does.
    "gcs": re.compile(r"OAuth2Credentials instance does not support refreshing|401 Unauthorized|Invalid Credentials"),
}
NOT_FOUND = re.compile(r"NoSuchTableException|404|[Nn]ot [Ff]ound|Table does not exist")


class StoreRefusal(Exception):
    """The store (or its client) refused the vended token: the failure the shim must prevent."""


def refused(store: str, report: dict, pattern: re.Pattern | None = None) -> StoreRefusal:
    """`StoreRefusal` when the failed job's error matches `pattern` (default: the store's refusal);
    any other failure is a real one (AssertionError)."""
    pattern = pattern or REFUSALS[store]
    said = summarize(report["error"])  # "BlobStorageException: 403 AuthorizationFailure", or the cause's first line
    assert pattern.search(said + "\n" + report["error"]), f"{store}: the job failed otherwise than expected: {said}"
    return StoreRefusal(f"{store}: {said} after {report['seconds']:.0f} s")


@pytest.fixture(scope="module", params=["adls", "gcs"])
def stack(request):
    try:
        with store_catalog(request.param, lifetime_s=900) as running:
            yield running
    except StoreUnavailable as exc:
        pytest.skip(str(exc))


def job(stack, action: str, table: str, *, rows: int = ROWS, ms: int = 0, iceberg: str = ICEBERG,
        master: str = "local[2]", steps: list[dict] | None = None, policy: dict | None = None) -> tuple[str, dict]:
    """One step in a job of its own, or `steps` in one session (reported as a list, with the
    registry's status, the plugin's counts and the executor JVMs seen); `policy`: RefreshPolicy's
    arguments."""
    # Iceberg 1.10 has no runtime for Spark 4.x: its jobs run on a Spark 3.5 venv.
    python = spark_venv("3.5") if iceberg.startswith("1.10.") else None
    args = {"mode": "package", "store": stack.store, "uri": stack.uri, "iceberg": iceberg, "master": master,
            **({"policy": policy} if policy else {})}
    work = {"steps": steps} if steps else {"action": action, "table": table, "rows": rows, "ms": ms}
    return run_job({**args, **work}, python=python)


def other_prefix(stack) -> str:
    """A second prefix the catalog vends for in the same table answer: another storage account (ADLS)
    or another bucket (GCS), made here."""
    if stack.store == "adls":
        stack.emulator.create_container("other", account="pcestore2")
        return stack.emulator.location("other", "two", account="pcestore2")
    stack.emulator.create_bucket("other")
    return stack.emulator.location("other", "two")


@pytest.fixture(scope="module")
def session(stack) -> dict:
    """The module's Spark work per store in one session on EXECUTORS executor JVMs (a session's start costs
    more than most steps under load): a committed round trip, a staged SQL CTAS and a staged
    `writeTo().create()` whose tasks span 3.2 token lifetimes with a storage-refresh-token on every
    credential, then a committed table of single-row files read over 3 lifetimes from a catalog that
    advertises its refresh endpoint instead (Polaris's style); a table whose data files go to a second
    prefix the answer vends for (another account or bucket); on GCS, a table whose data path is outside
    its token's scope but inside its vended prefix as a string; last, a staged create whose keys the
    store refuses before their stated expiry, and a table whose keys are dead on every refresh.
    Tokens live LIFETIME seconds. The job's report, its steps by name (else by action)."""
    stack.front.lifetime_s = LIFETIME
    stack.front.refresh_tokens = True
    stack.front.advertise_refresh_endpoint = False
    stack.front.endpoint_tables = {"db.renewals"}
    stack.front.store_lifetime_s = {"db.early_keys": EARLY_STORE_S, "db.dead_keys": 0}
    other = other_prefix(stack)
    stack.front.extra_prefixes = {"db.two_prefixes": [other]}
    slow_ms = int(0.8 * LIFETIME * 1000)
    steps = [{"action": "roundtrip", "table": "round_trip", "rows": 100, "ms": 0},
             {"action": "ctas-sql", "table": "staged_ctas_sql", "rows": ROWS, "ms": slow_ms},
             {"action": "writeto", "table": "staged_writeto", "rows": ROWS, "ms": slow_ms},
             {"action": "files", "table": "renewals", "rows": FILES, "ms": 0},
             {"action": "read", "table": "renewals", "rows": FILES, "ms": LIFETIME * 1000},
             {"name": "two-prefixes", "action": "roundtrip", "table": "two_prefixes", "rows": 100,
              "data_path": other + "/data"},
             # one row: one data file, one upload whatever the task count
             *([{"name": "scope", "action": "roundtrip", "table": "scope_t", "rows": 1,
                 "data_path": f"{stack.warehouse}/db/scope_t_data"}] if stack.store == "gcs" else []),
             # last: a key rejected early teaches the catalog's lifetime, which would pace the steps after it
             {"name": "early-keys", "action": "writeto", "table": "early_keys", "rows": 2, "parts": 2, "ms": EARLY_MS},
             {"name": "dead-keys", "action": "roundtrip", "table": "dead_keys", "rows": 10, "ms": 0}]
    try:
        kind, report = job(stack, "", "", steps=steps, master=f"local-cluster[{EXECUTORS},1,1024]",
                           policy=RENEWAL_POLICY)
    finally:
        stack.front.refresh_tokens = False
        stack.front.endpoint_tables = set()
        stack.front.store_lifetime_s = {}
        stack.front.extra_prefixes = {}
    assert kind == "RESULT", summarize(report.get("error", ""))
    assert report["executors"] == EXECUTORS, report
    return {**report, "steps": {step.get("name", step["action"]): done
                                for step, done in zip(steps, report["steps"], strict=True)}}


def test_committed_table_round_trip(stack, session):
    """A committed table's write and read with short-lived vended tokens."""
    step = session["steps"]["roundtrip"]
    assert step["kind"] == "RESULT", summarize(step["error"])
    assert (step["rows"], step["sum"]) == (100, 3 * sum(range(100)))
    assert stack.front.vended, "the front vended nothing: the job did not ask for vended credentials"


@pytest.mark.parametrize("action", ["ctas-sql", "writeto"])
def test_staged_create_outlives_three_token_lifetimes(stack, session, action):
    """A SQL CTAS and a writeTo().create() whose tasks span 3.2 token lifetimes, with a
    storage-refresh-token on every credential: exact rows. (Plain Iceberg fails both: /credentials
    has nothing for a staged table, apache/iceberg#13554; ADLS then answers 403 once the SAS expires,
    GCS fails at the first write: google-auth will not send a token with under 3 min left.)"""
    step = session["steps"][action]
    if step["kind"] == "FAILED":
        raise refused(stack.store, step)
    assert step["seconds"] >= 3 * LIFETIME, f"the create took {step['seconds']:.0f} s: not 3 token lifetimes"
    assert (step["rows"], step["sum"]) == (ROWS, 3 * sum(range(ROWS)))


def test_adls_staged_create_on_iceberg_110_with_refresh_endpoint(stack):
    """Iceberg 1.10.2, a catalog that advertises its refresh endpoint (committed tables only, as
    Polaris): a short staged CTAS, well within the token's life, still writes its rows. (Plain
    Iceberg 1.10's VendedAdlsCredentialProvider ignores the SAS it was handed and asks the endpoint
    first, a 404 for a staged table; fixed in 1.11.0 by apache/iceberg#13966. The shim never hands
    ADLSFileIO the endpoint.)"""
    if stack.store != "adls":
        pytest.skip("an ADLS-only failure")
    stack.front.lifetime_s = 900
    stack.front.advertise_refresh_endpoint = True
    try:
        kind, report = job(stack, "ctas-sql", "staged_110", iceberg="1.10.2")
    finally:
        stack.front.advertise_refresh_endpoint = False
    if kind == "FAILED":
        raise refused(stack.store, report, NOT_FOUND)
    assert (report["rows"], report["sum"]) == (ROWS, 3 * sum(range(ROWS)))


def test_a_table_on_adls_without_the_azure_bundle_fails_in_one_line(stack):
    """`configure()` without store=: the jars carry no Azure SDK, and the catalog hands out a table on
    abfss://. Its first file fails in the one line that names the scheme, ADLS and what adds the
    bundle (before the shim routed by scheme: inside the AWS SDK, "Unable to load region")."""
    if stack.store != "adls":
        pytest.skip("the ADLS case; GCS takes the same path (RefreshingResolvingFileIOTest)")
    location = stack.emulator.location("warehouse", "no_bundle").replace("abfs://", "abfss://", 1)
    kind, report = run_job({"mode": "package", "store": "adls", "name_store": False, "uri": stack.uri, "iceberg": ICEBERG,
                            "master": "local[1]", "action": "roundtrip", "table": "no_bundle", "rows": 1, "location": location})
    assert kind == "FAILED", report
    assert (report["type"], report["error"]) == (
        "ConfigError", "catalog-ext: tables on abfss:// are on ADLS, whose SDK (Iceberg's iceberg-azure-bundle) is not on the "
        "classpath: add it with configure(store=\"adls\") or `pyspark-catalog-ext spark-conf --store adls`")


class TooManyRequests(Exception):
    """More than one catalog request per table per token renewal."""


def test_one_catalog_request_per_table_per_renewal(stack, session):
    """A read of a committed table over 3 token lifetimes on EXECUTORS executor JVMs, the refresh endpoint
    advertised: the executors get their tokens from the driver (plugin RPC), and the catalog is asked
    once per renewal the refresh policy schedules (every 0.75 lifetimes here), plus one: each executor
    asking on its own would multiply that. (Plain Iceberg asks 13 to 34 times
    per lifetime: every executor refreshes on its own, GCS per client and ADLS per FileIO, and with
    tokens this short the SDKs renew on nearly every request.)"""
    made, read = session["steps"]["files"], session["steps"]["read"]
    assert made["kind"] == "RESULT", summarize(made["error"])
    if read["kind"] == "FAILED":
        raise refused(stack.store, read)
    assert (read["rows"], read["sum"]) == (FILES, 3 * sum(range(FILES)))
    assert session["plugin"]["served"] >= 2 and session["plugin"]["refused"] == 0, session["plugin"]
    during = [e for e in stack.front.entries() if e["kind"] == "credentials" and e["table"] == "db.renewals"
              and read["read_started"] <= e["time"] <= read["read_ended"]]
    seconds = read["read_ended"] - read["read_started"]
    renewals = math.ceil(seconds / (LIFETIME * (1 - RENEWAL_POLICY["lifetime_fraction"])))
    assert seconds >= 3 * LIFETIME, f"the read took {seconds:.0f} s: not 3 token lifetimes"
    assert during, "the read asked the catalog for nothing: its tokens were not renewed"
    print(f"{stack.store}: {len(during)} /credentials requests over {seconds:.0f} s ({seconds / LIFETIME:.1f} lifetimes, "
          f"{renewals} scheduled renewals); executor requests served by the driver: {session['plugin']['served']}")
    if len(during) > renewals + 1:
        raise TooManyRequests(f"{len(during)} /credentials requests over {seconds:.0f} s: {renewals} renewals")


def catalog_requests(stack, table: str, step: dict) -> list[dict]:
    """The catalog's credential requests for `table` while `step` ran."""
    return [e for e in stack.front.entries() if e["kind"] == "credentials" and e["table"] == table
            and step["started"] <= e["time"] <= step["ended"]]


def events_of(session: dict, kind: str, table: str) -> list[dict]:
    return [e for e in session["events"] if e["type"] == kind and str(e.get("table", "")).endswith(table)]


def test_keys_that_die_early_are_renewed_once_and_the_create_completes(stack, session):
    """The store refuses the tokens of a staged writeTo().create() long before their stated expiry
    (ADLS: 403 AuthorizationFailure past the SAS's own se=; GCS: 401), while both its tasks, on two
    executor JVMs, write: the reactive path renews through the driver's registry, once for both
    executors, and the create completes with exact rows."""
    step = session["steps"]["early-keys"]
    if step["kind"] == "FAILED":
        raise refused(stack.store, step)
    assert (step["rows"], step["sum"]) == (2, 3 * sum(range(2)))
    rejected = events_of(session, "credentials.rejected", "db.early_keys")
    assert rejected, "the store refused no token of the table early: nothing was tested"
    assert all(e["reactive_refresh"] and e["key_age_ms"] < LIFETIME * 1000 for e in rejected), rejected
    asked = catalog_requests(stack, "db.early_keys", step)
    print(f"{stack.store}: {len(rejected)} rejection waves, {len(asked)} catalog requests during the create "
          f"({step['seconds']:.0f} s)")
    # One renewal per wave for both executors: two tasks' requests for one wave would come within
    # milliseconds of each other. Scheduled renewals may come besides (the rejections teach a short
    # lifetime), seconds apart; a loaded machine makes the create outlast more of them.
    assert len(asked) >= len(rejected), f"{len(asked)} catalog requests for {len(rejected)} rejection waves"
    times = sorted(e["time"] for e in asked)
    assert all(later - earlier >= 0.25 for earlier, later in zip(times, times[1:], strict=False)), (
        f"catalog requests {[round(t - times[0], 3) for t in times]} s apart: a wave renewed more than once")


def test_keys_dead_on_every_refresh_end_in_one_line(stack, session):
    """Tokens the store refuses from the start, renewed or not: the write ends in the registry's
    one-line failure after one reactive renewal (single flight for every executor), not in a loop of
    renewals. (The catalog may be asked on schedule besides: the rejections teach the registry a
    lifetime of a second or two.)"""
    step = session["steps"]["dead-keys"]
    assert step["kind"] == "FAILED", "a write with tokens dead from the start succeeded"
    said = re.search(r"(?:Azure storage|GCS) rejected the storage credentials of table \S+ again [^\n]*", step["error"])
    assert said, f"not the registry's one-line failure: {summarize(step['error'])}"
    renewed = events_of(session, "credentials.rejected", "db.dead_keys")
    asked = catalog_requests(stack, "db.dead_keys", step)
    print(f"{stack.store}: dead keys: {len(renewed)} reactive renewal, {len(asked)} catalog requests "
          f"(scheduled ones included), failed after {step['seconds']:.0f} s")
    # Ended by "rejected ... again" (above), before the reactive rate limit (6 here): usually in one wave.
    # Keys fetched after a wave (by it or by the schedule) and rejected no older than the wave's keys
    # had lived, or younger than a second, end it; the driver judges every executor's report so (an
    # executor hears only of its own waves). Keys a starved task used a second or more after their
    # fetch renew once more.
    assert 1 <= len(renewed) < 6, f"{len(renewed)} reactive renewals: the renewed keys' rejection did not end it"


GCS_BUCKET = re.compile(r"/b/([^/]+)(?:/o(?:/([^/?]+))?)?")


def test_two_prefixes_in_one_answer_each_get_their_own_token(stack, session):
    """A table answer vending for two prefixes (two storage accounts, or two buckets), the table's
    data files under the second: each prefix's requests carry that prefix's own token, never the
    other's, as the stores saw them (Azurite checks each SAS against its own account's key and holds
    the data files in the second account; the GCS front names the token each request carried)."""
    step = session["steps"]["two-prefixes"]
    assert step["kind"] == "RESULT", summarize(step["error"])
    assert (step["rows"], step["sum"]) == (100, 3 * sum(range(100)))
    vended = {v["prefix"] for v in stack.front.vended if v["table"] == "db.two_prefixes"}
    assert len(vended) == 2, vended
    if stack.store == "adls":
        files = [b.name for b in stack.emulator.service("pcestore2").get_container_client("other").list_blobs("two/data/")]
        assert files, "no data file in the second account"
        return
    grants = {g.label: g for g in stack.emulator.front.grants()}
    seen = [e for e in stack.emulator.front.entries() if step["started"] <= e["time"] <= step["ended"]
            and e["token"] in grants and GCS_BUCKET.search(e["route"])]
    by_bucket: dict[str, set[str]] = {}
    for e in seen:
        bucket = GCS_BUCKET.search(e["route"])[1]
        grant = grants[e["token"]]
        by_bucket.setdefault(bucket, set()).add(f"{grant.bucket}/{grant.prefix}")
        assert e["status"] != 403, f"a request to {e['route']} carried a token for {grant.bucket}/{grant.prefix}"
    assert by_bucket.get("other") == {"other/two/"}, f"tokens each bucket was sent: {by_bucket}"
    # the table's own prefix, and the catalog server's own (whole-store) token for its metadata
    assert by_bucket.get("warehouse", set()) - {"None/"} == {"warehouse/catalog/db/two_prefixes/"}, by_bucket


def test_a_scope_refusal_is_never_retried(stack, session):
    """GCS: a data path inside the table's vended prefix as a string (`…/scope_t_data` under
    `…/scope_t`, the longest-prefix rule) but outside its token's scope: the store answers 403, the
    write fails with it, the request is not sent again and the catalog is not asked for new tokens."""
    if stack.store != "gcs":
        pytest.skip("Azurite's container SAS covers every path of its container: no scope to leave")
    step = session["steps"]["scope"]
    assert step["kind"] == "FAILED", "a write outside its token's scope succeeded"
    assert re.search(r"403|[Ff]orbidden", step["error"]), summarize(step["error"])
    refused_at = [e["route"] for e in stack.emulator.front.entries()
                  if step["started"] <= e["time"] <= step["ended"] and e["status"] == 403]
    # the one data file's upload (its name is in the query), then the other tasks' and the abort's
    # requests for their files, each its own object
    uploads = [r for r in refused_at if r.startswith("/upload/")]
    others = [r for r in refused_at if not r.startswith("/upload/")]
    assert len(uploads) == 1 and len(others) == len(set(others)), f"a refused request was sent again: {refused_at}"
    assert not catalog_requests(stack, "db.scope_t", step), "the catalog was asked for new tokens on a 403"
    assert not events_of(session, "credentials.rejected", "db.scope_t")


def test_azurite_checks_sas_expiry_scope_and_kind():
    """The facts docs/stores.md states about Azurite 3.35.0, pinned: a live container SAS works; an
    expired one, another account's, and a directory SAS (sr=d) are all refused 403 AuthorizationFailure
    (Azure names an expired SAS AuthenticationFailed)."""
    import time

    import requests

    from tests.stores.azurite import Azurite

    try:
        azurite = Azurite().start()
    except StoreUnavailable as exc:
        pytest.skip(str(exc))
    try:
        azurite.create_container("facts")
        sas, expires_ms = azurite.container_sas("pcestore1", "facts", 3)
        blob = f"{azurite.endpoint('pcestore1')}/facts/a/b.txt"
        put = requests.put(f"{blob}?{sas}", data=b"x", headers={"x-ms-blob-type": "BlockBlob"})
        assert put.status_code == 201, put.text
        assert requests.get(f"{blob}?{sas}").content == b"x"
        other = requests.get(f"{azurite.endpoint('pcestore2')}/facts/a/b.txt?{sas}")
        directory = requests.get(f"{blob}?{sas.replace('sr=c', 'sr=d')}&sdd=1")
        time.sleep(max(0.0, expires_ms / 1000 - time.time()) + 1.5)
        expired = requests.get(f"{blob}?{sas}")
        for resp in (other, directory, expired):
            assert (resp.status_code, resp.headers.get("x-ms-error-code")) == (403, "AuthorizationFailure"), resp.text
    finally:
        azurite.stop()


def test_gcs_resumable_upload_comes_back_through_the_front():
    """fake-gcs-server runs with -external-url: a resumable upload's session URI points at the front,
    so the upload's data goes through it (and is counted there)."""
    import requests

    from tests.stores.gcs import FakeGcs

    try:
        gcs = FakeGcs().start()
    except StoreUnavailable as exc:
        pytest.skip(str(exc))
    try:
        gcs.create_bucket("facts")
        token = gcs.front.mint(60, bucket="facts", prefix="t/").token
        auth = {"Authorization": f"Bearer {token}"}
        start = requests.post(f"{gcs.url}/upload/storage/v1/b/facts/o", params={"uploadType": "resumable", "name": "t/x"},
                              json={"name": "t/x"}, headers=auth)
        assert start.status_code == 200, start.text
        session = start.headers["Location"]
        assert session.startswith(gcs.url + "/"), session
        assert requests.put(session, data=b"hello", headers=auth).status_code == 200
        got = requests.get(f"{gcs.url}/download/storage/v1/b/facts/o/t%2Fx", params={"alt": "media"}, headers=auth)
        assert got.content == b"hello"
        puts = [e for e in gcs.front.entries() if e["method"] == "PUT"]
        assert len(puts) == 1 and puts[0]["status"] == 200
    finally:
        gcs.stop()
