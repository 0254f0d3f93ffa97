"""The Polaris emulators against a real Polaris 1.4.1's recorded answers
(tests/emulators/observed/polaris-1.4.1.json, recorded from outside: Polaris cannot run here).

Every recorded answer is compared with the emulator's, in front of the real SeaweedFS: the 1.4.1
family must agree with each one; the 1.7.0 and main families may differ only where their
Behaviour says why (DELIBERATE). The README beside the recording adds what the JSON does not hold
(the credential cache, no Date header, notifications refused by an internal catalog, a staged
table's metrics report answered 404): checked below too.
"""
from __future__ import annotations

import json
import time

import pytest
import requests

from tests.emulators import Emulator
from tests.emulators.behaviour import POLARIS_1_4, POLARIS_1_7, POLARIS_1_7_IDEMPOTENT, POLARIS_MAIN, Behaviour
from tests.emulators.emulator import NO_GRANT_CLIENT
from tests.emulators.observe import normalise as _normalise
from tests.emulators.observe import observe
from tests.helpers import REST_ID_SCHEMA, ROOT
from tests.servers import S3ExpiryProxy

RECORDING = ROOT / "tests" / "emulators" / "observed" / "polaris-1.4.1.json"
RECORDED = json.loads(RECORDING.read_text())["observed"]
RECORDED_SUFFIX = "1795738614192"  # the recording's names: t_<suffix>, st_<suffix>, ...
# A real 1.7.0 with polaris.idempotency.enabled=true, recorded by the same driver (same names but its suffix).
RECORDING_1_7 = json.loads((RECORDING.parent / "polaris-1.7.0.json").read_text())
RECORDED_BASE = "s3://polaris/pcat"  # its catalog's default-base-location
LIFETIME = 6.0  # seconds a vended key lives here (the cache checks wait for half of it)

# (family id, recorded key) -> why that family's emulator answers otherwise, on purpose.
DELIBERATE = {
    (POLARIS_MAIN.id, "config.idempotency-key-lifetime"): POLARIS_MAIN.refs["idempotency"],
    (POLARIS_MAIN.id, "config.top-level-keys"): "idempotency-key-lifetime sits at the top of /v1/config ("
                                                + POLARIS_MAIN.refs["idempotency"] + ")",
}
# Where a real 1.7.0 answered otherwise than 1.4.1 (observed/polaris-1.7.0.json, `differs_from_1.4.1` but the
# idempotency keys and the policies' order): the 1.7.0 and main emulators answer as 1.7.0 did.
AS_1_7_0 = ("committed-credentials.entry-keys", "config.endpoints.count", "config.overrides", "stage-create.config",
            "stage-create.config.keys", "stage-create.storage-credentials", "stage-create.storage-credentials.keys")
DELIBERATE.update({(b.id, key): "as a real Polaris 1.7.0 answered (tests/emulators/observed/polaris-1.7.0.json)"
                   for b in (POLARIS_1_7, POLARIS_MAIN) for key in AS_1_7_0})


@pytest.fixture(scope="module")
def s3(lakehouse):
    proxy = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    yield proxy
    proxy.stop()


def _observed(b: Behaviour, lakehouse, s3, recording: dict | None = None) -> tuple[dict, dict]:
    """(recorded, ours), both normalised, for every recorded key (of the 1.4.1 recording unless another is given)."""
    with Emulator(b, lakehouse, s3, 600.0) as emu:
        suffix = str(int(time.time() * 1000))
        ours = observe(emu.url, b.warehouse, (emu.info.access_key, emu.info.secret_key), NO_GRANT_CLIENT,
                       scope=b.scope or "catalog", suffix=suffix)
    base = f"s3://{lakehouse.info.warehouse}"
    observed, recorded_suffix = (recording["observed"], recording["suffix"]) if recording else (RECORDED, RECORDED_SUFFIX)
    recorded = {k: _normalise(v, recorded_suffix, RECORDED_BASE, "pcat") for k, v in observed.items()}
    return recorded, {k: _normalise(v, suffix, base, b.prefix) for k, v in ours.items()}


def _differences(recorded: dict, ours: dict) -> dict[str, str]:
    assert set(ours) == set(recorded), ("keys the driver does not reproduce", sorted(set(recorded) ^ set(ours)))
    return {k: f"recorded {json.dumps(recorded[k])[:300]} / emulator {json.dumps(ours[k])[:300]}"
            for k in recorded if recorded[k] != ours[k]}


def test_the_polaris_1_4_1_emulator_gives_every_recorded_answer(lakehouse, s3):
    recorded, ours = _observed(POLARIS_1_4, lakehouse, s3)
    differences = _differences(recorded, ours)
    assert not differences, "\n".join(f"{k}: {v}" for k, v in differences.items())
    assert len(recorded) == 68  # every key of the recording was compared (a new key needs its request in observe.py)


def test_the_polaris_1_7_0_emulator_with_idempotency_on_gives_every_recorded_answer(lakehouse, s3):
    recorded, ours = _observed(POLARIS_1_7_IDEMPOTENT, lakehouse, s3, RECORDING_1_7)
    # The one answer that is not in a stable order: 1.7.0 lists applicable policies unsorted (README).
    for side in (recorded, ours):
        side["applicable(table)"] = json.loads(json.dumps(side["applicable(table)"], sort_keys=True))
        body = side["applicable(table)"][1] if isinstance(side["applicable(table)"], list) else None
        if isinstance(body, dict) and isinstance(body.get("applicable-policies"), list):
            body["applicable-policies"].sort(key=lambda p: json.dumps(p, sort_keys=True))
    differences = _differences(recorded, ours)
    assert not differences, "\n".join(f"{k}: {v}" for k, v in differences.items())
    assert len(recorded) == 68


@pytest.mark.parametrize("b", [POLARIS_1_7, POLARIS_MAIN], ids=lambda b: b.id)
def test_the_other_polaris_emulators_differ_only_where_they_say_why(b, lakehouse, s3):
    recorded, ours = _observed(b, lakehouse, s3)
    differences = _differences(recorded, ours)
    declared = {key for family, key in DELIBERATE if family == b.id}
    assert set(differences) == declared, {k: v for k, v in differences.items() if k not in declared} or (
        "declared but equal (drop the declaration)", declared - set(differences))


# ------------------------------------------------------------------------------- the README's observations
def _bearer(emu: Emulator) -> dict:
    form = {"grant_type": "client_credentials", "client_id": emu.info.access_key,
            "client_secret": emu.info.secret_key, "scope": emu.b.scope}
    return {"Authorization": "Bearer " + requests.post(f"{emu.url}/v1/oauth/tokens", data=form, timeout=30).json()["access_token"]}


def _keys(answer: dict) -> set[str]:
    return {c["config"]["s3.access-key-id"] for c in answer["storage-credentials"]}


@pytest.mark.parametrize("b", [POLARIS_1_4, POLARIS_1_7, POLARIS_MAIN], ids=lambda b: b.id)
def test_the_credential_cache_hands_out_the_same_keys_until_half_their_lifetime(b, lakehouse, s3):
    """Load, /credentials and re-stage answer the keys minted first while Polaris's cache entry lives
    (the shorter of its setting and half their remaining lifetime), with their first expiry; then new keys."""
    with Emulator(b, lakehouse, s3, LIFETIME) as emu:
        auth = {**_bearer(emu), "X-Iceberg-Access-Delegation": "vended-credentials"}
        tables = f"{emu.url}/v1/{b.prefix}/namespaces/cache/tables"
        requests.post(f"{emu.url}/v1/{b.prefix}/namespaces", json={"namespace": ["cache"]}, headers=auth, timeout=30)
        name = f"t_{int(time.time() * 1000)}"
        created = requests.post(tables, json={"name": name, "schema": REST_ID_SCHEMA, "stage-create": False}, headers=auth, timeout=30).json()
        minted = time.time()
        first = _keys(created)
        expiry = {c["config"]["s3.session-token-expires-at-ms"] for c in created["storage-credentials"]}
        loaded = requests.get(f"{tables}/{name}", headers=auth, timeout=30).json()
        refreshed = requests.get(f"{tables}/{name}/credentials", headers=auth, timeout=30).json()
        assert time.time() - minted < LIFETIME / 2, "too slow to be inside the cache window: rerun"
        assert _keys(loaded) == _keys(refreshed) == first
        assert {c["config"]["s3.session-token-expires-at-ms"] for c in refreshed["storage-credentials"]} == expiry
        assert all(c["config"].get("expiration-time") == (c["config"]["s3.session-token-expires-at-ms"]
                                                          if b.expiration_time else None)
                   for c in refreshed["storage-credentials"])
        staged = {"name": f"s_{name}", "schema": REST_ID_SCHEMA, "stage-create": True}
        restaged = [_keys(requests.post(tables, json=staged, headers=auth, timeout=30).json()) for _ in range(2)]
        assert restaged[0] == restaged[1] and restaged[0] != first  # another location, its own entry
        time.sleep(max(0.0, minted + LIFETIME / 2 + 0.2 - time.time()))
        assert _keys(requests.get(f"{tables}/{name}", headers=auth, timeout=30).json()) != first
        assert emu.cache_hits >= 3


@pytest.mark.parametrize("b", [POLARIS_1_4, POLARIS_1_7, POLARIS_MAIN], ids=lambda b: b.id)
def test_no_date_header_a_staged_metrics_report_404_and_remote_signing_400(b, lakehouse, s3):
    with Emulator(b, lakehouse, s3, 600.0) as emu:
        auth = {**_bearer(emu), "X-Iceberg-Access-Delegation": "vended-credentials"}
        tables = f"{emu.url}/v1/{b.prefix}/namespaces/readme/tables"
        assert "Date" not in requests.post(f"{emu.url}/v1/{b.prefix}/namespaces", json={"namespace": ["readme"]},
                                           headers=auth, timeout=30).headers
        name = f"st_{int(time.time() * 1000)}"
        staged = requests.post(tables, json={"name": name, "schema": REST_ID_SCHEMA, "stage-create": True}, headers=auth, timeout=30)
        assert staged.status_code == 200 and "Date" not in staged.headers
        report = {"report-type": "commit-report", "table-name": f"readme.{name}", "snapshot-id": 1, "sequence-number": 1,
                  "operation": "append", "metrics": {}}
        metrics = requests.post(f"{tables}/{name}/metrics", json=report, headers=auth, timeout=30)
        assert (metrics.status_code, metrics.json()["error"]["type"]) == (404, "NoSuchTableException")
        signing = requests.get(f"{tables}/{name}", headers={**auth, "X-Iceberg-Access-Delegation": "remote-signing"}, timeout=30)
        assert signing.status_code == 400
        assert signing.json()["error"]["message"] == "Unsupported access delegation mode: remote-signing"


def test_notifications_to_the_internal_catalog_of_1_4_1_are_refused(lakehouse, s3):
    with Emulator(POLARIS_1_4, lakehouse, s3, 600.0) as emu:
        url = f"{emu.url}/v1/{POLARIS_1_4.prefix}/namespaces/readme/tables/t/notifications"
        answer = requests.post(url, json={"notification-type": "VALIDATE", "payload": {}}, headers=_bearer(emu), timeout=30)
        assert answer.status_code == 400
        assert answer.json()["error"]["message"] == "Cannot update internal catalog via notifications"


# ------------------------------------------------------------------------------- PyIceberg on the cache
def test_pyiceberg_counts_a_renewal_only_when_polaris_hands_out_new_keys(lakehouse, s3):
    """A policy that renews at 40 % of the keys' life asks inside Polaris's cache window (half their
    life): the same keys come back. That is no renewal: it is asked again after the window, and every
    renewal counted brought keys the table did not have. Scans across four lifetimes never meet a dead key."""
    import pyarrow as pa

    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
    from pyspark_catalog_ext.refresh import RefreshPolicy
    from pyspark_catalog_ext.spark.conf import spark_conf
    from tests.emulators import connection

    b = POLARIS_1_4
    s3.max_age_seconds = LIFETIME
    try:
        with Emulator(b, lakehouse, s3, LIFETIME) as emu:
            policy = RefreshPolicy(check_interval_s=0.1, min_ahead_s=0, lifetime_fraction=0.6)
            cat = pyiceberg_catalog(spark_conf(b.profile, "pol", jars=None, **connection(b, emu)), "pol", policy=policy)
            cat.create_namespace_if_not_exists("cache")
            name = f"cache.py_{int(time.time() * 1000)}"
            schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
            table = cat.create_table(name, schema)
            table.append(pa.table({"id": pa.array(range(5), pa.int64())}, schema=schema))
            keys_seen = set()
            started = time.monotonic()
            while time.monotonic() - started < 4 * LIFETIME:
                assert table.scan().to_arrow().num_rows == 5
                keys_seen.add(table.io.properties.get("s3.access-key-id"))
                time.sleep(0.1)
            cat.close()
            (row,) = [r for r in cat.credentials_status() if r["table"].endswith(name.split(".")[1])]
            minted = emu.keys_cached[table.metadata.location.rstrip("/")]  # key sets Polaris handed out for it
            assert row.get("cached_answers", 0) >= 1, row  # asked inside the cache window, and said so
            renewals = sum(row["refreshes_by_strategy"].values())
            # every key set installed (the first, then each counted renewal) is one Polaris minted: none twice
            assert renewals >= 2 and row["generation"] == renewals + 1 <= minted, (minted, row)
            assert len(keys_seen) >= 3 and s3.total_rejected == 0, (keys_seen, s3.rejected)
    finally:
        s3.max_age_seconds = None


def test_the_token_endpoint_takes_client_credentials_as_http_basic_too(lakehouse, s3):
    """RFC 6749 2.3.1: a token endpoint takes a client's id and secret as HTTP Basic as well as in the
    form (DuckDB's iceberg extension sends Basic); a wrong secret is refused either way."""
    with Emulator(POLARIS_1_7, lakehouse, s3, 600.0) as emu:
        client_id, secret = emu.info.credential.split(":", 1)
        form = {"grant_type": "client_credentials", "scope": emu.b.scope}
        url = f"{emu.url}/v1/oauth/tokens"
        assert requests.post(url, data=form, auth=(client_id, secret), timeout=30).status_code == 200
        assert requests.post(url, data=form, auth=(client_id, secret + "x"), timeout=30).status_code == 401
        assert requests.post(url, data=form, timeout=30).status_code == 401
