"""The doctor on catalogs that vend ADLS and GCS tokens: Iceberg's REST fixture on Azurite and on
fake-gcs-server behind its token-checking front, with the vending catalog before it
(tests/stores/catalog.py). No Spark: the store probes need none.

One store stack per store serves every test of the module; each test sets the front's switches
(refresh tokens, the refresh endpoint, neither; tokens the store refuses; refresh tokens already
expired) before its doctor run. Every run's report, as JSON and as text, and the CLI's output, must
hold none of the tokens the front handed out."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from pyspark_catalog_ext.doctor.report import report_dict, summary_lines
from pyspark_catalog_ext.doctor.runner import DoctorReport, run_doctor
from tests.conftest import run_cli
from tests.realservers.artifacts import rest_fixture_version
from tests.stores.catalog import FIXTURE_POM, StoreStack, store_catalog
from tests.stores.install import AZURITE_VERSION, FAKE_GCS_VERSION

#: Only the catalog basics and the store and refresh probes: no engines, no Spark.
SKIP = ["pyiceberg,spark,inventory,signing,idempotency"]
LIFETIME_S = 600
SWITCHES = {"tokens": {"refresh_tokens": True, "advertise_refresh_endpoint": False},
            "endpoint": {"refresh_tokens": False, "advertise_refresh_endpoint": True},
            "neither": {"refresh_tokens": False, "advertise_refresh_endpoint": False}}


@pytest.fixture(scope="module", params=["adls", "gcs"])
def stack(request) -> Iterator[StoreStack]:
    with store_catalog(request.param, lifetime_s=LIFETIME_S) as st:
        yield st


def _doctor(st: StoreStack, switches: str, **front: Any) -> tuple[DoctorReport, dict[str, tuple[str, str]]]:
    settings = {**SWITCHES[switches], "lifetime_s": LIFETIME_S, "token_ttl_seconds": 3600, **front}
    for name, value in settings.items():
        setattr(st.front, name, value)
    report = run_doctor("seaweedfs", uri=st.uri, warehouse=st.warehouse, credential="doctor:client-secret-0001",
                        open_catalog=True, skip=SKIP)
    shown = json.dumps(report_dict(report), default=str) + "\n".join(summary_lines(report))
    leaked = [token[:6] for token in st.front.secrets_handed_out if token in shown]
    assert st.front.secrets_handed_out and not leaked, f"vended tokens in the report: {leaked}"
    assert "client-secret-0001" not in shown
    return report, {r.id: (r.status, r.summary) for r in report.results}


def _check_matrix(st: StoreStack, switches: str, report: DoctorReport) -> None:
    """The support matrix's store row holds what this run's store probes said (CATALOG_EXT_RECORD_MATRIX=1 records it)."""
    from pyspark_catalog_ext.doctor.matrix import RECORD_ENV, check_emulated
    from pyspark_catalog_ext.doctor.store_matrix import STORES_DIR, store_record

    emulator = (f"Azurite {AZURITE_VERSION}" if st.store == "adls"
                else f"fake-gcs-server {FAKE_GCS_VERSION.lstrip('v')} behind a token-checking front")
    meta = {"store": st.store, "emulator": emulator, "catalog": "iceberg-rest-fixture", "release": rest_fixture_version(FIXTURE_POM)}
    diff = check_emulated(st.store, f"doctor-{switches}", store_record(report_dict(report)), meta,
                          record=os.environ.get(RECORD_ENV) == "1", directory=STORES_DIR,
                          command=f"{RECORD_ENV}=1 ./dev test tests/slow/test_store_doctor.py")
    assert diff is None, diff


def test_refresh_tokens_renew_committed_and_staged_tables_and_the_token_works(stack: StoreStack) -> None:
    report, got = _doctor(stack, "tokens")
    store = stack.store
    assert got["store-credentials"][0] == "pass" and got["store-credentials"][1].startswith(f"{store}: "), got["store-credentials"]
    lifetimes = [c["lifetime_s"] for c in next(r for r in report.results if r.id == "store-credentials").evidence["credentials"]]
    assert lifetimes and all(LIFETIME_S - 60 <= s <= LIFETIME_S for s in lifetimes), lifetimes
    assert got["store-refresh"] == ("pass", f"{store}: committed: storage-refresh-token, reload; "
                                             "staged: storage-refresh-token, re-stage")
    assert got["store-access"][0] == "pass" and "wrote, read back and deleted" in got["store-access"][1], got["store-access"]
    # The S3 probes see the store's refresh tokens too, and say the catalog vends no S3 keys (not a failure).
    assert got["storage-refresh-token"][0] == "pass", got["storage-refresh-token"]
    assert got["vended-credentials"][0] == "unsupported" and f"vends for {store}" in got["vended-credentials"][1]
    assert report.cleanup_ok, report.cleanup
    _check_matrix(stack, "tokens", report)


def test_the_endpoint_renews_committed_tables_and_staged_ones_get_404(stack: StoreStack) -> None:
    report, got = _doctor(stack, "endpoint")
    assert got["store-refresh"] == ("pass", f"{stack.store}: committed: endpoint, credentials-endpoint, reload; staged: re-stage "
                                            "(the endpoint answers 404 for a staged table (apache/iceberg#13554))")
    evidence = next(r for r in report.results if r.id == "store-refresh").evidence[stack.store]
    assert evidence["iceberg_alone"] == {"committed": "endpoint", "staged": "none"}
    assert got["refresh-endpoint"][0] == "pass" and got["credentials-endpoint"][0] == "pass", got
    _check_matrix(stack, "endpoint", report)


def test_neither_leaves_the_package_its_reload_and_re_stage(stack: StoreStack) -> None:
    report, got = _doctor(stack, "neither")
    assert got["store-refresh"] == ("pass", f"{stack.store}: committed: reload; staged: re-stage"), got["store-refresh"]
    evidence = next(r for r in report.results if r.id == "store-refresh").evidence[stack.store]
    assert evidence["iceberg_alone"] == {"committed": "none", "staged": "none"}
    assert got["store-access"][0] == "pass", got["store-access"]
    _check_matrix(stack, "neither", report)


def test_a_staged_table_no_strategy_renews_is_unsupported(stack: StoreStack) -> None:
    """The front vends nothing when the staged table is staged again: no strategy is left for it."""
    real = stack.front.credentials_for
    staged: list[str] = []

    def once_for_the_staged_table(table: str, location: str) -> list:
        if table.endswith("s_store"):
            staged.append(table)
            if len(staged) > 1:
                return []
        return real(table, location)

    stack.front.credentials_for = once_for_the_staged_table  # type: ignore[method-assign]
    try:
        _, got = _doctor(stack, "neither")
    finally:
        del stack.front.credentials_for
    status, summary = got["store-refresh"]
    assert status == "unsupported" and summary.startswith(f"{stack.store}: committed: reload; staged: none; without a strategy "
                                                          f"the tokens of {stack.store} staged tables end at their expiry"), summary


def test_a_token_the_store_refuses_is_reported_as_not_working(stack: StoreStack) -> None:
    """The front vends tokens that expired a minute ago: Azurite answers 403, the GCS front 401."""
    _, got = _doctor(stack, "neither", lifetime_s=-60)
    status, summary = got["store-access"]
    refused = "403 AuthorizationFailure" if stack.store == "adls" else "401 authError"
    assert status == "fail" and "the store refused the vended token" in summary and refused in summary, got["store-access"]


def test_a_refresh_token_that_does_not_renew_fails(stack: StoreStack) -> None:
    _, got = _doctor(stack, "tokens", token_ttl_seconds=-60)
    status, summary = got["store-refresh"]
    assert status == "fail" and summary.startswith("advertised but does not renew: "), got["store-refresh"]
    assert f"{stack.store} committed storage-refresh-token" in summary and f"{stack.store} staged storage-refresh-token" in summary


def test_the_cli_prints_no_vended_token(stack: StoreStack) -> None:
    for name, value in {**SWITCHES["tokens"], "lifetime_s": LIFETIME_S, "token_ttl_seconds": 3600}.items():
        setattr(stack.front, name, value)
    proc = run_cli("doctor", "--json", "--profile", "seaweedfs", "--uri", stack.uri, "--warehouse", stack.warehouse,
                   "--credential", "doctor:client-secret-0001", "--open-catalog", "--skip", SKIP[0], timeout=300)
    report = json.loads(proc.stdout)
    statuses = {p["id"]: p["status"] for p in report["probes"]}
    assert statuses["store-access"] == "pass" and statuses["store-refresh"] == "pass", (statuses, proc.stderr[-1500:])
    output = proc.stdout + proc.stderr
    assert not [t[:6] for t in stack.front.secrets_handed_out if t in output] and "client-secret-0001" not in output


def test_a_store_endpoint_with_userinfo_gets_no_token(stack: StoreStack) -> None:
    """The answer names the store's endpoint as http://user@<attacker>: refused before anything is sent."""
    from tests.servers.scripted_catalog import Scripted

    attacker = Scripted()
    real = stack.front.endpoints
    key = "gcs.service.host" if stack.store == "gcs" else next(k for k in real() if k.startswith("adls.connection-string."))
    stack.front.endpoints = lambda: {**real(), key: attacker.uri.replace("http://", "http://user@")}  # type: ignore[method-assign]
    try:
        _, got = _doctor(stack, "neither")
    finally:
        del stack.front.endpoints
        attacker.close()
    status, summary = got["store-access"]
    assert status == "fail" and f"token not sent: {key} is not an endpoint a token is sent to" in summary, got["store-access"]
    assert attacker.requests() == []


def test_the_json_report_follows_its_schema(stack: StoreStack) -> None:
    import jsonschema

    from pyspark_catalog_ext.doctor.report import load_schema

    report, _ = _doctor(stack, "tokens")
    jsonschema.validate(json.loads(json.dumps(report_dict(report), default=str)), load_schema())


def test_a_store_origin_gets_the_store_token_and_never_the_catalogs_credentials(stack: StoreStack) -> None:
    """The answer names the store's endpoint on another loopback origin: the probe's requests there carry
    the vended store token (Iceberg sends it there too) and nothing of the catalog's (its OAuth2 token,
    its client secret)."""
    from tests.servers.scripted_catalog import Scripted

    elsewhere = Scripted()  # answers 404 to everything: the probe fails after its write
    real = stack.front.endpoints
    key = "gcs.service.host" if stack.store == "gcs" else next(k for k in real() if k.startswith("adls.connection-string."))
    stack.front.endpoints = lambda: {**real(), key: elsewhere.uri}  # type: ignore[method-assign]
    try:
        _, got = _doctor(stack, "neither")
    finally:
        del stack.front.endpoints
        elsewhere.close()
    seen = elsewhere.requests()
    assert seen and got["store-access"][0] == "fail", got["store-access"]
    sent = " ".join(f"{s.path}?{s.query} {s.headers} {s.body!r}" for s in seen)
    vended = {t for t in stack.front.secrets_handed_out if t in sent}
    store_tokens = {r["token"] for r in stack.front.vended}
    assert vended and vended <= store_tokens, "something other than a vended store token reached the store origin"
    assert "client-secret-0001" not in sent and "doctor:" not in sent
