"""The requests behind a Polaris recording (tests/emulators/observed/polaris-1.4.1.json), sent to a
catalog, and its answers reduced the way the recording reduces them: one value per recorded key.

The recording names its observations, not its requests; each request here is our reading of its
key (e.g. "unknown prefix/warehouse": a namespace listing under a prefix no catalog has). `normalise`
then takes out what differs from run to run or place to place (names' suffixes, uuids, ports,
timestamps, the storage location's base, masked secrets), so a recorded answer and the emulator's
compare as equal values.
"""
from __future__ import annotations

import re
import time
import uuid
from typing import Any
from urllib.parse import quote

import requests

from tests.helpers import REST_ID_SCHEMA

CREDENTIALS_ENDPOINT = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"
SECRET_KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")
VENDED = {"X-Iceberg-Access-Delegation": "vended-credentials"}
NS, OTHER_NS = "cmp", "s2"  # the recording's namespaces
NS_SEP = "\x1f"


def _body(resp: requests.Response) -> Any:
    try:
        return resp.json() if resp.content else ""
    except ValueError:
        return resp.text


def _answer(resp: requests.Response) -> list:
    return [resp.status_code, _body(resp)]


def _vended(prefix: str, body: dict) -> dict[str, Any]:
    """The recording's reductions of a table answer: where the keys are, their expiry, the endpoint."""
    creds = [c.get("config") or {} for c in body.get("storage-credentials") or []]
    config = body.get("config") or {}
    holders = [c for c in creds if c.get("s3.access-key-id")] or ([config] if config.get("s3.access-key-id") else [])
    first = holders[0] if holders else {}
    return {f"{prefix}.keys-in": "storage-credentials" if creds and first is not config else ("config" if first else None),
            f"{prefix}.expiry": bool(first.get("s3.session-token-expires-at-ms")),
            f"{prefix}.session-token": bool(first.get("s3.session-token")),
            f"{prefix}.refresh-endpoint": any(c.get("client.refresh-credentials-endpoint") for c in [config, *creds])}


def _token(base: str, client: tuple[str, str], scope: str | None) -> requests.Response:
    form = {"grant_type": "client_credentials", "client_id": client[0], "client_secret": client[1]}
    if scope:
        form["scope"] = scope
    return requests.post(f"{base}/v1/oauth/tokens", data=form, timeout=30)


def observe(base: str, warehouse: str, admin: tuple[str, str], no_grant: tuple[str, str],
            scope: str = "PRINCIPAL_ROLE:ALL", suffix: str | None = None) -> dict[str, Any]:
    """Every recorded observation of a Polaris catalog at `base` (its catalog `warehouse`)."""
    n = suffix or str(int(time.time() * 1000))
    out: dict[str, Any] = {}
    out["token.scope PRINCIPAL_ROLE:ALL"] = (ok := _token(base, admin, scope)).status_code
    out["token.scope catalog"] = _token(base, admin, "catalog").status_code
    auth = {"Authorization": f"Bearer {ok.json()['access_token']}"}

    config = requests.get(f"{base}/v1/config", params={"warehouse": warehouse}, headers=auth, timeout=30)
    data = config.json()
    defaults, overrides, endpoints = data.get("defaults") or {}, data.get("overrides") or {}, data.get("endpoints") or []
    prefix = overrides.get("prefix") or defaults.get("prefix")
    out.update({
        "config.status": config.status_code, "config.top-level-keys": sorted(data),
        "config.defaults": defaults, "config.overrides": overrides,
        "config.prefix-in": "overrides" if "prefix" in overrides else "defaults",
        "config.endpoints.count": len(endpoints),
        "config.endpoints.has-credentials": CREDENTIALS_ENDPOINT in endpoints,
        "config.endpoints.non-iceberg": [e for e in endpoints if not e.split(" ", 1)[-1].startswith("/v1/")],
        "config.idempotency-key-lifetime": any("idempotency-key-lifetime" in d for d in (data, defaults, overrides)),
        "config.refresh-endpoint": any("client.refresh-credentials-endpoint" in d for d in (defaults, overrides)),
    })
    v1 = f"{base}/v1/{quote(prefix, safe='')}"
    tables = f"{v1}/namespaces/{NS}/tables"

    def get(url: str, **headers: str) -> requests.Response:
        return requests.get(url, headers={**auth, **headers}, timeout=30)

    def send(method: str, url: str, body: Any, **headers: str) -> requests.Response:
        return requests.request(method, url, json=body, headers={**auth, **headers}, timeout=30)

    out["401 no token"] = _answer(requests.get(f"{v1}/namespaces", timeout=30))
    nogrant = _token(base, no_grant, scope)
    out["403 principal without grants"] = _answer(nogrant) if nogrant.status_code != 200 else _answer(requests.get(
        f"{v1}/namespaces", timeout=30, headers={"Authorization": f"Bearer {nogrant.json()['access_token']}"}))
    out["unknown prefix/warehouse"] = _answer(get(f"{base}/v1/{prefix}_unknown_{n}/namespaces"))
    for ns in (NS, OTHER_NS):
        send("POST", f"{v1}/namespaces", {"namespace": [ns]})
    out["409 create existing namespace"] = _answer(send("POST", f"{v1}/namespaces", {"namespace": [NS]}))

    table, staged = f"t_{n}", f"st_{n}"
    create = send("POST", tables, {"name": table, "schema": REST_ID_SCHEMA, "stage-create": False}, **VENDED)
    out["create.status"] = create.status_code
    out.update(_vended("create", create.json()))
    out["409 create existing table"] = _answer(send("POST", tables, {"name": table, "schema": REST_ID_SCHEMA, "stage-create": False}, **VENDED))
    out["create(no stage-create field).status"] = send("POST", tables, {"name": f"t2_{n}", "schema": REST_ID_SCHEMA}, **VENDED).status_code
    load = get(f"{tables}/{table}", **VENDED)
    out["load.status"] = load.status_code
    out.update(_vended("load", load.json()))
    creds = get(f"{tables}/{table}/credentials", **VENDED)
    out["credentials.status"] = creds.status_code
    out["committed-credentials"] = [creds.status_code, sorted(creds.json())]
    out["committed-credentials.entry-keys"] = [sorted(c["config"]) for c in creds.json()["storage-credentials"]]
    out["committed-credentials.prefixes"] = [c["prefix"] for c in creds.json()["storage-credentials"]]
    missing = get(f"{tables}/missing_{n}")
    out["missing-table.status"], out["missing-table.error-type"] = missing.status_code, missing.json()["error"]["type"]
    out["404 missing table"] = _answer(missing)
    out["404 missing namespace"] = _answer(get(f"{v1}/namespaces/nons_{n}"))
    out["404 table in missing namespace"] = _answer(get(f"{v1}/namespaces/nons_{n}/tables/x"))
    out["409 commit failed requirement"] = _answer(send("POST", f"{tables}/{table}", {
        "requirements": [{"type": "assert-table-uuid", "uuid": str(uuid.UUID(int=0))}], "updates": []}))
    out["commit to missing table"] = _answer(send("POST", f"{tables}/missing2_{n}", {"requirements": [], "updates": []}))
    out["remote-signing-load.status"] = get(f"{tables}/{table}", **{"X-Iceberg-Access-Delegation": "remote-signing"}).status_code

    stage = send("POST", tables, {"name": staged, "schema": REST_ID_SCHEMA, "stage-create": True}, **VENDED)
    body = stage.json()
    out["stage-create.status"], out["stage-create.top-level-keys"] = stage.status_code, sorted(body)
    out["stage-create.metadata-location"] = body.get("metadata-location")
    out["stage-create.config"] = body.get("config")
    out["stage-create.config.keys"] = sorted(body.get("config") or {})
    out["stage-create.storage-credentials"] = body.get("storage-credentials")
    out["stage-create.storage-credentials.keys"] = [sorted(c["config"]) for c in body.get("storage-credentials") or []]
    out.update(_vended("stage-create", body))
    out["staged-credentials"] = _answer(staged_creds := get(f"{tables}/{staged}/credentials", **VENDED))
    out["staged-credentials.status"] = staged_creds.status_code
    out["staged-load"] = _answer(staged_load := get(f"{tables}/{staged}", **VENDED))
    out["staged-load.status"] = staged_load.status_code

    out.update(_policies(base, prefix, v1, auth, table, n))
    return out


def _policies(base: str, prefix: str, v1: str, auth: dict, table: str, n: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    policies = f"{base}/polaris/v1/{quote(prefix, safe='')}/namespaces"

    def call(method: str, url: str, body: Any = None, **params: Any) -> requests.Response:
        return requests.request(method, url, json=body, params=params or None, headers=auth, timeout=30)

    def create(ns: str, name: str, type_: str, content: str) -> requests.Response:
        return call("POST", f"{policies}/{ns}/policies", {"name": name, "type": type_, "content": content})

    def attach(ns: str, name: str, target: dict) -> requests.Response:
        return call("PUT", f"{policies}/{ns}/policies/{name}/mappings", {"target": target})

    compaction = '{"version": "2025-02-03", "enable": true, "config": {"target_file_size_bytes": 1000}}'
    out["policy.create"] = _answer(create(NS, f"pc_ns_{n}", "system.data-compaction", compaction))
    out["policy.create duplicate"] = _answer(create(NS, f"pc_ns_{n}", "system.data-compaction", compaction))
    out["policy.create invalid content"] = _answer(create(NS, f"bad_{n}", "system.data-compaction", '{"enable": "yes"}'))
    out["policy.get missing"] = _answer(call("GET", f"{policies}/{NS}/policies/nope_{n}"))
    out["policy.attach ns"] = attach(NS, f"pc_ns_{n}", {"type": "namespace", "path": [NS]}).status_code
    # A catalog-level orphan-file policy defined in the other namespace, at its second version.
    create(OTHER_NS, "orphans_cat", "system.orphan-file-removal", '{"version": "2025-02-03", "enable": false}')
    call("PUT", f"{policies}/{OTHER_NS}/policies/orphans_cat",
         {"content": '{"version":"2025-02-03","enable":true,"max_orphan_file_age_in_days":5}', "current-policy-version": 0})
    attach(OTHER_NS, "orphans_cat", {"type": "catalog", "path": []})
    create(NS, f"pe_tbl_{n}", "system.snapshot-expiry",
           '{"version": "2025-02-03", "enable": true, "config": {"min_snapshot_to_keep": 1}}')
    create(NS, f"pc_tbl_{n}", "system.data-compaction", '{"version": "2025-02-03", "enable": true}')
    out["policy.attach table"] = attach(NS, f"pe_tbl_{n}", {"type": "table-like", "path": [NS, table]}).status_code
    out["policy.attach table 2"] = attach(NS, f"pc_tbl_{n}", {"type": "table-like", "path": [NS, table]}).status_code
    out["policy.attach to missing table"] = _answer(attach(NS, f"pc_tbl_{n}", {"type": "table-like", "path": [NS, f"missing_{n}"]}))
    applicable = f"{base}/polaris/v1/{quote(prefix, safe='')}/applicable-policies"
    out["applicable(table)"] = _answer(call("GET", applicable, namespace=NS, **{"target-name": table}))
    paged = call("GET", applicable, namespace=NS, **{"target-name": table, "page-size": 1}).json()
    out["applicable(table) page-size=1"] = [200, {"n": len(paged["applicable-policies"]), "next-page-token": paged.get("next-page-token")}]
    ns_level = call("GET", applicable, namespace=NS)
    out["applicable(namespace)"] = [ns_level.status_code, [[p["name"], p["inherited"], p["namespace"]]
                                                          for p in ns_level.json()["applicable-policies"]]]
    out["applicable(missing table)"] = _answer(call("GET", applicable, namespace=NS, **{"target-name": f"missing_{n}"}))
    listed = call("GET", f"{policies}/{NS}/policies", **{"page-size": 1}).json()
    out["policy.list page-size=1"] = [200, {"identifiers": len(listed["identifiers"]), "next-page-token": listed.get("next-page-token")}]
    return out


_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_PORT = re.compile(r"(127\.0\.0\.1|localhost):(\d+|PORT)")
_MS = re.compile(r"\b1\d{12}\b")


def normalise(value: Any, suffix: str, base: str, prefix: str) -> Any:
    """`value` (a recorded answer or ours) with the run's and the place's particulars replaced:
    the names' numeric `suffix`, the storage location's `base` (s3://bucket[/path]), the catalog
    `prefix` (as "pcat"), uuids, loopback ports, epoch milliseconds and secrets."""
    if isinstance(value, dict):
        return {k: ("***" if k in SECRET_KEYS and isinstance(v, str) else normalise(v, suffix, base, prefix))
                for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, suffix, base, prefix) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and _MS.fullmatch(str(value)):
        return "<ms>"
    if not isinstance(value, str):
        return value
    text = value.replace(suffix, "<n>")
    base = base.rstrip("/")
    text = "s3://<base>" if text == base else text.replace(base + "/", "s3://<base>/")
    text = re.sub(rf"(?<![\w-]){re.escape(prefix)}(?![\w-])", "pcat", text)
    text = _UUID.sub("<uuid>", text)
    text = _PORT.sub(r"\1:PORT", text)
    return _MS.sub("<ms>", text)
