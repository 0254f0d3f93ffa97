"""PyIceberg jobs whose keys S3 rejects before the lifetime the catalog stated, on the real stack.

SeaweedFS behind the catalog proxy (which states LIFETIME-second keys, or no lifetime at all) and
an S3 proxy that answers ExpiredToken earlier than that: after a fixed share of the lifetime, after
a random share per key, or at once (every refresh dead). Each job must end with exact rows, the
rejected requests retried with renewed keys, and at most one extra catalog request per table per
rejection wave; keys dead on every refresh end in one line; a scope refusal is never retried. A
catalog on another clock is scheduled by its clock.
"""

from __future__ import annotations

import dataclasses
import re
import time

import pyarrow as pa
import pytest

from pyspark_catalog_ext import events
from pyspark_catalog_ext.errors import CredentialRefreshError, CredentialsRejectedError
from pyspark_catalog_ext.pyiceberg_ext import GuardedRestCatalog
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.refresh import RefreshPolicy
from tests.helpers import ID_PART_SCHEMA, expiring_proxies, id_part_rows
from tests.servers.s3_early_rejection import CatalogProxyWithoutExpiry, EarlyRejectionS3Proxy, SkewedCatalogProxy

LIFETIME = 3.0  # seconds the catalog proxy states for every key
SHARE = 0.5  # the fixed mode: keys die after half of that
RANDOM_SHARES = (0.3, 0.6)  # each key dies well before its renewal at 80 % of the lifetime (POLICY)
# Proactive renewal would come at 80 % of the stated lifetime: too late for keys that die earlier.
# The jobs here count what each rejection wave costs, not the reactive rate limit (its rows in
# refresh-scenarios.json do): a loaded machine stretches a scan over more waves than the default 6 a minute.
POLICY = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.2, reactive_max_per_minute=30)
FILEIOS = {"pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO", "fsspec": "pyiceberg.io.fsspec.FsspecFileIO"}
FILE_PER_50_ROWS = {"write.target-file-size-bytes": "800"}
SCAN_DELAY = {"pyarrow": 0.04, "fsspec": 0.08}  # per S3 request: the scan of 100 files spans several deaths
# Both FileIOs write S3 through one resumable upload (one PutObject per small file, files in parallel,
# clients from one shared botocore session): at 0.16 s an append of 40 files could finish before its
# keys died, and prove nothing.
WRITE_DELAY = {"pyarrow": 0.3, "fsspec": 0.3}
FILES = 100


@pytest.fixture(scope="module")
def catalog_proxy(lakehouse):
    with expiring_proxies(lakehouse, LIFETIME, s3_class=EarlyRejectionS3Proxy,
                          s3_options={"error_code": "ExpiredToken"}) as proxies:
        yield proxies.catalog


@pytest.fixture(scope="module")
def s3_proxy(catalog_proxy):
    return catalog_proxy.s3_proxy


@pytest.fixture(scope="module")
def unstated_proxy(lakehouse, s3_proxy):
    """The same keys without a stated expiry (the refresher assumes its default hour)."""
    with expiring_proxies(lakehouse, LIFETIME, s3_proxy=s3_proxy, catalog_class=CatalogProxyWithoutExpiry) as proxies:
        yield proxies.catalog


@pytest.fixture(scope="module")
def many_files(lakehouse, catalog_proxy, s3_proxy):
    """db_early.many: FILES data files of 50 rows, written with admin keys (setup only)."""
    s3_proxy.max_age_seconds = None
    cat = make_catalog(lakehouse, catalog_proxy, "pyarrow")
    cat.create_namespace_if_not_exists("db_early")
    if cat.table_exists("db_early.many"):
        cat.drop_table("db_early.many")
    cat.create_table("db_early.many", ID_PART_SCHEMA, properties=FILE_PER_50_ROWS).append(id_part_rows(0, FILES * 50))
    cat.close()
    return FILES * 50


@pytest.fixture
def seen():
    got: list[events.Event] = []
    sink = events.subscribe(got.append)
    yield got
    events.unsubscribe(sink)


def make_catalog(lakehouse, proxy, io: str, policy: RefreshPolicy = POLICY, **kw) -> GuardedRestCatalog:
    return pyiceberg_catalog(lakehouse, uri=proxy.url, policy=policy, **{"py-io-impl": FILEIOS[io]}, **kw)


def status_of(cat, name: str) -> dict:
    return next(r for r in cat.credentials_status() if r["table"].endswith(name) and not r["staged"])


def warm(cat, table) -> None:
    """One renewal before measuring: SeaweedFS's 404 on GET .../credentials is paid (and remembered) here."""
    cat.refresher.refresh(table.io.entry)


def catalog_requests(proxy, name: str) -> int:
    return proxy.count(kind="load", table=name) + proxy.count(kind="credentials", table=name)


def early(s3_proxy, mode: str, delay: float) -> None:
    s3_proxy.max_age_seconds = LIFETIME
    s3_proxy.share, s3_proxy.random_shares = (SHARE, None) if mode == "fixed" else (1.0, RANDOM_SHARES) \
        if mode == "random" else (1.0, None)
    s3_proxy.delay_seconds = delay


def calm(s3_proxy) -> None:
    s3_proxy.max_age_seconds, s3_proxy.delay_seconds, s3_proxy.share, s3_proxy.random_shares = None, 0, 1.0, None
    s3_proxy.deny_prefixes.clear()


def expired_keys(s3_proxy) -> set[tuple]:
    return set(s3_proxy.rejected_keys.get("ExpiredToken", set()))


def check_waves(cat, proxy, s3_proxy, name: str, before: dict, *, job: str, io: str, mode: str) -> dict:
    """Each renewal cost one catalog request, and the rejection path at most one per wave (a wave:
    the requests S3 refused for one set of keys)."""
    row = status_of(cat, name)
    renewals = sum(row["refreshes_by_strategy"].values()) - before["renewals"]
    requests = catalog_requests(proxy, name) - before["requests"]
    waves = len(expired_keys(s3_proxy) - before["keys"])
    reactive = row["reactive_refreshes"] - before["reactive"]
    retried = row["rejections"] - before["rejections"]
    assert requests == renewals, (requests, renewals)
    assert waves >= 1 and retried >= 1, f"S3 rejected nothing ({waves}, {retried}): the job proved nothing"
    # A wave whose keys a renewal had already replaced needs no request: the retry takes the new keys.
    assert reactive <= waves, (reactive, waves, row)
    numbers = {"job": job, "io": io, "mode": mode, "waves": waves, "retried": retried, "reactive_refreshes": reactive,
               "extra_requests_per_wave": round(reactive / waves, 2), "renewals": renewals,
               "wait_max_s": row["reactive_wait_max_s"], "learned_lifetime_s": row["learned_lifetime_s"]}
    print("early-rejection:", numbers)
    return row


def snapshot(cat, proxy, s3_proxy, name: str) -> dict:
    row = status_of(cat, name)
    return {"renewals": sum(row["refreshes_by_strategy"].values()), "requests": catalog_requests(proxy, name),
            "keys": expired_keys(s3_proxy), "reactive": row["reactive_refreshes"], "rejections": row["rejections"]}


@pytest.mark.parametrize("mode", ["fixed", "random", "unstated"])
@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_scan_and_append_survive_keys_dying_early(lakehouse, catalog_proxy, unstated_proxy, s3_proxy, many_files,
                                                  seen, io, mode):
    proxy = unstated_proxy if mode == "unstated" else catalog_proxy
    cat = make_catalog(lakehouse, proxy, io)
    name = f"db_early.append_{io}_{mode}"
    try:
        table = cat.load_table("db_early.many")
        warm(cat, table)
        before = snapshot(cat, proxy, s3_proxy, "db_early.many")
        early(s3_proxy, mode, SCAN_DELAY[io])
        started = time.monotonic()
        result = table.scan().to_arrow()
        elapsed = time.monotonic() - started
        s3_proxy.delay_seconds = 0
        assert sorted(result.column("id").to_pylist()) == list(range(many_files))
        assert elapsed > LIFETIME, f"the scan took {elapsed:.1f}s: too short to prove anything"
        check_waves(cat, proxy, s3_proxy, "db_early.many", before, job="scan", io=io, mode=mode)

        calm(s3_proxy)
        cat.close()
        cat = make_catalog(lakehouse, proxy, io)  # a new catalog: nothing learned yet
        if cat.table_exists(name):
            cat.drop_table(name)
        target = cat.create_table(name, ID_PART_SCHEMA, properties=FILE_PER_50_ROWS)
        warm(cat, target)
        before = snapshot(cat, proxy, s3_proxy, name)
        early(s3_proxy, mode, WRITE_DELAY[io])
        target.append(id_part_rows(0, 2000))  # 40 files
        s3_proxy.delay_seconds = 0
        check_waves(cat, proxy, s3_proxy, name, before, job="append", io=io, mode=mode)
        calm(s3_proxy)
        assert sorted(cat.load_table(name).scan().to_arrow().column("id").to_pylist()) == list(range(2000))

        rejected = [e for e in seen if e.type == "credentials.rejected"]
        assert all(e.fields["error_code"] == "ExpiredToken" for e in rejected)
        assert all(e.fields["reactive_refresh"] for e in rejected)  # within the rate limit
        if mode == "unstated":
            assert all(e.fields["stated_lifetime_ms"] is None for e in rejected)  # present, null: none stated
        else:
            assert all(abs(e.fields["stated_lifetime_ms"] - LIFETIME * 1000) < 500 for e in rejected)
        # A lifetime is learned from keys rejected younger than stated (how early a stream notices depends
        # on when it next reads: on a loaded machine, after the stated lifetime; the dead-keys test is exact).
        learned = [e for e in seen if e.type == "credentials.lifetime-learned"]
        assert all(e.fields["observed_lifetime_ms"] < (e.fields["stated_lifetime_ms"] or 3_600_000) for e in learned)
    finally:
        calm(s3_proxy)
        cat.close()


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_keys_dead_on_every_refresh_end_in_one_line(lakehouse, catalog_proxy, s3_proxy, many_files, io):
    """Every key S3 sees is dead at once: the read fails in one line after one reactive refresh."""
    cat = make_catalog(lakehouse, catalog_proxy, io)
    try:
        table = cat.load_table("db_early.many")
        path = table.inspect.files().column("file_path")[0].as_py()
        warm(cat, table)
        before = snapshot(cat, catalog_proxy, s3_proxy, "db_early.many")
        s3_proxy.max_age_seconds, s3_proxy.share = LIFETIME, 0.0
        started = time.monotonic()
        with pytest.raises(CredentialsRejectedError) as info:
            table.io.new_input(path).open().read()
        took = time.monotonic() - started
        message = str(info.value)
        assert "\n" not in message and "lake.db_early.many" in message, message
        assert re.search(r"stated lifetime \d+\.\d s, observed \d+\.\d s", message), message
        assert "catalog-ext.refresh.max-clock-skew-ms" in message, message
        assert took < 10, f"{took:.1f}s to give up"
        row = status_of(cat, "db_early.many")
        # One reactive refresh: keys fetched after it (by it or by a background renewal) that die no older
        # than the warmed keys had lived, before any store accepted such keys, end it (refreshing-cannot-help).
        # Two when the retry's keys outlived those (a loaded machine took 1.8 s to send it); the send
        # bound (sends-per-call) ends any longer chain in the same one line.
        assert 1 <= row["reactive_refreshes"] - before["reactive"] <= 2, row
        # Keys dead younger than 1 s were revoked, not short-lived: they teach no lifetime (learn-lifetime).
        assert row["learned_lifetime_s"] is None or row["learned_lifetime_s"] < LIFETIME, row
        assert catalog_requests(catalog_proxy, "db_early.many") - before["requests"] == \
            sum(row["refreshes_by_strategy"].values()) - before["renewals"]  # (+ a background renewal, if one fell due)
        print("early-rejection:", {"job": "dead keys", "io": io, "seconds_to_error": round(took, 2)})
        # A whole scan ends the same way (whichever reader thread fails first), or at the rate limit.
        with pytest.raises(CredentialRefreshError):
            table.scan().to_arrow()
    finally:
        calm(s3_proxy)
        cat.close()


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_read_buffer_hands_pyarrow_the_delegates_buffer_and_reopens_after_an_expiry(lakehouse, catalog_proxy, s3_proxy,
                                                                                    many_files, io):
    """PyArrow reads a Python file through `read_buffer` when it has one: a PyArrow delegate's own
    buffer comes back as it is (no copy into bytes); keys S3 rejects between two reads are renewed and
    the read goes on at its offset."""
    cat = make_catalog(lakehouse, catalog_proxy, io)
    try:
        table = cat.load_table("db_early.many")
        path = table.inspect.files().column("file_path")[0].as_py()
        with table.io.new_input(path).open() as whole:
            expected = whole.read()
        warm(cat, table)
        with table.io.new_input(path).open() as stream:
            first = stream.read_buffer(100)
            time.sleep(1.0)
            rejected = s3_proxy.rejected_codes["ExpiredToken"]
            # Keys older than 0.6 s die: the stream's keys now, renewed ones only after the read.
            s3_proxy.max_age_seconds, s3_proxy.share = LIFETIME, 0.2
            rest = stream.read_buffer()
        assert bytes(first) + bytes(rest) == expected
        assert stream.tell() == len(expected)
        if io == "pyarrow":  # (s3fs read the whole small file into its cache at the first read)
            assert isinstance(first, pa.Buffer) and isinstance(rest, pa.Buffer)
            assert s3_proxy.rejected_codes["ExpiredToken"] > rejected, "S3 rejected nothing: the test proved nothing"
    finally:
        calm(s3_proxy)
        cat.close()


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_scope_refusal_is_not_retried(lakehouse, catalog_proxy, s3_proxy, many_files, seen, io):
    """AccessDenied (a key outside what the keys may read) is raised as it came: no refresh, no retry."""
    cat = make_catalog(lakehouse, catalog_proxy, io)
    try:
        table = cat.load_table("db_early.many")
        path = table.inspect.files().column("file_path")[0].as_py()
        warm(cat, table)
        before = snapshot(cat, catalog_proxy, s3_proxy, "db_early.many")
        s3_proxy.deny_prefixes.add(path.split("://", 1)[1])
        refused = s3_proxy.rejected_codes["AccessDenied"]
        with pytest.raises(OSError) as info:
            table.io.new_input(path).open().read()
        assert not isinstance(info.value, CredentialRefreshError)
        row = status_of(cat, "db_early.many")
        assert row["rejections"] == 0 and row["reactive_refreshes"] == before["reactive"] == 0, row
        # Only the background renewals of its 3 s keys reached the catalog, none for the refusal.
        assert catalog_requests(catalog_proxy, "db_early.many") - before["requests"] == \
            sum(row["refreshes_by_strategy"].values()) - before["renewals"]
        assert not [e for e in seen if e.type == "credentials.rejected"]
        # The refused request (a HEAD: no code in it), plus one ranged GET asking S3 why: AccessDenied.
        assert s3_proxy.rejected_codes["AccessDenied"] - refused == 2
    finally:
        calm(s3_proxy)
        cat.close()


def test_a_catalog_on_another_clock_is_scheduled_by_its_clock(lakehouse, many_files, seen):
    """The catalog and S3 run 60 s ahead: keys stated to live 3 s look like 63 s here. Past
    max-clock-skew-ms the refresher reads "now" on the catalog's clock (its Date header) and renews in
    time, with reactive refresh off; the control (a bound above the skew) is rejected."""
    skew = 60.0
    with expiring_proxies(lakehouse, LIFETIME, s3_class=EarlyRejectionS3Proxy,
                          s3_options={"clock": lambda: time.time() + skew},
                          catalog_class=SkewedCatalogProxy, skew_seconds=skew) as (proxy, s3):
        off = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.6, reactive_max_per_minute=0)
        for bound_s, survives in ((5.0, True), (3600.0, False)):
            policy = dataclasses.replace(off, max_clock_skew_s=bound_s)
            cat = make_catalog(lakehouse, proxy, "pyarrow", policy=policy)
            try:
                table = cat.load_table("db_early.many")
                s3.max_age_seconds, s3.delay_seconds = LIFETIME, SCAN_DELAY["pyarrow"]
                if survives:
                    result = table.scan().to_arrow()
                    # Reactive refresh is off: keys still current when refused would fail the scan. A
                    # request a loaded machine sent after its keys were renewed on schedule is refused
                    # and runs again with the new ones, so a refusal or two may be seen, no refresh.
                    assert result.num_rows == many_files and status_of(cat, "db_early.many")["reactive_refreshes"] == 0
                    assert abs(cat.refresher.skew_applied_s - skew) < 2
                    assert status_of(cat, "db_early.many")["generation"] >= 3
                else:
                    with pytest.raises(CredentialRefreshError, match="reactive-max-per-minute is 0"):
                        table.scan().to_arrow()
            finally:
                s3.max_age_seconds, s3.delay_seconds = None, 0
                cat.close()
    skews = [e for e in seen if e.type == "clock.skew"]
    assert skews and skews[0].fields["server"] == "catalog" and abs(skews[0].fields["skew_ms"] - skew * 1000) < 2000


def test_doctor_reports_clock_skew_with_evidence(lakehouse):
    """`doctor`'s clock-skew probe: a catalog 60 s ahead fails it with both Date headers as evidence
    (S3 here is SeaweedFS itself, on our clock); the report still validates against its schema."""
    import json

    import jsonschema

    from pyspark_catalog_ext.doctor.report import SCHEMA_PATH
    from tests.conftest import run_cli

    info = lakehouse.info
    with SkewedCatalogProxy(info.iceberg_uri, skew_seconds=60.0) as proxy:
        proc = run_cli("doctor", "--json", "--profile", "seaweedfs", "--uri", proxy.url, "--warehouse", info.warehouse,
                       "--credential", info.credential,
                       "--skip", "spark,pyiceberg,inventory,scope,refresh,staging,idempotency,signing", timeout=180)
    report = json.loads(proc.stdout)
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    probe = next(p for p in report["probes"] if p["id"] == "clock-skew")
    assert probe["status"] == "fail", probe
    evidence = probe["evidence"]
    assert abs(evidence["catalog"]["skew_s"] - 60) < 2 and evidence["catalog"]["date"], evidence
    assert abs(evidence["s3"]["skew_s"]) < 2 and evidence["s3"]["date"], evidence
    assert evidence["knob"] == "catalog-ext.refresh.max-clock-skew-ms" and evidence["bound_s"] == 5.0
    assert re.search(r"catalog \+(59|60|61)\.\d s", probe["summary"]), probe["summary"]


def _client_error(code: str, status: int, op: str = "GetObject"):
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}, op)


@pytest.mark.parametrize(("code", "status", "expired"), [
    ("ExpiredToken", 403, True), ("InvalidAccessKeyId", 403, True), ("InvalidToken", 400, True),
    ("TokenRefreshRequired", 400, True), ("AccessDenied", 403, False), ("SignatureDoesNotMatch", 403, False),
    ("ExpiredToken", 500, False),
])
def test_the_code_s3_sent_decides(code, status, expired):
    """With a code (s3fs keeps botocore's ClientError as the cause of its PermissionError), no probe is needed."""
    from pyspark_catalog_ext.refresh.rejection import rejection_of

    translated = PermissionError("Forbidden")
    translated.__cause__ = _client_error(code, status)
    rejection = rejection_of(translated)
    assert rejection is not None and rejection.code == code and rejection.expired is expired


def test_a_refusal_without_a_code_is_asked_about_not_guessed():
    """A HEAD's 403 (botocore puts "403" where the code goes) and PyArrow's words are codeless: the FileIO
    probes them; PyArrow's "not found", or an error that is not S3's, is no refusal at all."""
    from pyspark_catalog_ext.refresh.rejection import rejection_of

    head = rejection_of(_client_error("403", 403, "HeadObject"))
    assert head is not None and head.code is None and not head.expired
    for text in ["When reading information for key 'k' in bucket 'b': AWS Error ACCESS_DENIED during HeadObject "
                 "operation: No response body.",
                 "AWS Error UNKNOWN (HTTP status 403) during CreateMultipartUpload operation: x",
                 "AWS Error INTERNAL_FAILURE during GetObject operation: Failed to flush response stream (eof: 0, bad: 1)"]:
        codeless = rejection_of(OSError(text))
        assert codeless is not None and codeless.code is None and not codeless.expired, text
    assert not rejection_of(_client_error("NoSuchKey", 404)).expired  # coded: no probe, not an expiry
    assert rejection_of(OSError("AWS Error NO_SUCH_KEY during GetObject operation")) is None
    assert rejection_of(OSError(28, "No space left on device")) is None
