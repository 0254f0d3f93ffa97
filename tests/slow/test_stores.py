"""ADLS and GCS on the emulated stores (tests/stores): Azurite, fake-gcs-server behind its token front,
Iceberg's REST fixture 1.11.0 on them behind a front that vends short-lived SAS and GCS tokens.

Each Spark job runs on the package's user path (`configure(store=...)`: the shim's FileIO for the
store, the store's SDK bundle) in a process of its own (tests/stores/store_job.py). One job per store
(2 executor JVMs) serves every test but the Iceberg 1.10 create, which runs on another Spark line:
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
ROWS = 4  # single-row files of a staged create, each row 0.8 lifetimes slow: the job spans 3.2 lifetimes
FILES = 6  # single-row files the renewal test reads, one task each, 3 per executor, each 1 lifetime slow
# The session's refresh policy: renew once 1/4 of a token's life is left (the shim's hard margin for short
# tokens), checked every second.
RENEWAL_POLICY = {"min_ahead_s": 0, "lifetime_fraction": 0.25, "check_interval_s": 1}

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


@pytest.fixture(scope="module")
def session(stack) -> dict:
    """The module's Spark work per store in one session on 2 executor JVMs (a session's start costs
    more than most steps under load): a committed round trip, a staged SQL CTAS and a staged
    `writeTo().create()` whose tasks span 3.2 token lifetimes with a storage-refresh-token on every
    credential, then a committed table of single-row files read over 3 lifetimes from a catalog that
    advertises its refresh endpoint instead (Polaris's style). Tokens live LIFETIME seconds. The
    job's report, its steps by action."""
    stack.front.lifetime_s = LIFETIME
    stack.front.refresh_tokens = True
    stack.front.advertise_refresh_endpoint = False
    stack.front.endpoint_tables = {"db.renewals"}
    slow_ms = int(0.8 * LIFETIME * 1000)
    steps = [{"action": "roundtrip", "table": "round_trip", "rows": 100, "ms": 0},
             {"action": "ctas-sql", "table": "staged_ctas_sql", "rows": ROWS, "ms": slow_ms},
             {"action": "writeto", "table": "staged_writeto", "rows": ROWS, "ms": slow_ms},
             {"action": "files", "table": "renewals", "rows": FILES, "ms": 0},
             {"action": "read", "table": "renewals", "rows": FILES, "ms": LIFETIME * 1000}]
    try:
        kind, report = job(stack, "", "", steps=steps, master="local-cluster[2,1,1024]", policy=RENEWAL_POLICY)
    finally:
        stack.front.refresh_tokens = False
        stack.front.endpoint_tables = set()
    assert kind == "RESULT", summarize(report.get("error", ""))
    assert report["executors"] == 2, report
    return {**report, "steps": {step["action"]: done for step, done in zip(steps, report["steps"], strict=True)}}


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


class TooManyRequests(Exception):
    """More than one catalog request per table per token renewal."""


def test_one_catalog_request_per_table_per_renewal(stack, session):
    """A read of a committed table over 3 token lifetimes on 2 executor JVMs, the refresh endpoint
    advertised: the executors get their tokens from the driver (plugin RPC), and the catalog is asked
    once per renewal the refresh policy schedules (every 0.75 lifetimes here), plus one. Two
    executors suffice: each asking on its own would double that. (Plain Iceberg asks 13 to 34 times
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
