"""One scripted conversation with an Iceberg REST catalog, reduced to what this package reads from
the answers (status codes, where the prefix and the keys sit, expiry, error types, what a staged
table gets). Run against a real server and against our emulator of its family, the two reductions
must agree except where a named, referenced exception says why (tests/slow/test_real_catalogs.py).
"""
from __future__ import annotations

import time
from typing import Any

import requests

from tests.helpers import REST_ID_SCHEMA

KEY_FIELDS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")
EXPIRY_FIELDS = ("s3.session-token-expires-at-ms", "expiration-time")
SIGNER_FIELDS = ("s3.signer.uri", "s3.signer.endpoint")


def bearer(uri: str, credential: str) -> dict[str, str]:
    """An OAuth2 client-credentials token from `<uri>/v1/oauth/tokens`, as an Authorization header."""
    client_id, secret = credential.split(":", 1)
    answer = requests.post(uri.rstrip("/") + "/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": "catalog"})
    answer.raise_for_status()
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


def _keys(answer: dict[str, Any]) -> dict[str, Any]:
    """Where a table answer carries S3 keys, and whether it says when they expire."""
    creds = [c.get("config") or {} for c in answer.get("storage-credentials") or []]
    where = "storage-credentials" if any(KEY_FIELDS[0] in c for c in creds) else (
        "config" if KEY_FIELDS[0] in (answer.get("config") or {}) else "none")
    fields = {**(answer.get("config") or {}), **{k: v for c in creds for k, v in c.items()}}
    return {"keys-in": where, "session-token": bool(fields.get("s3.session-token")),
            "expiry": any(k in fields for k in EXPIRY_FIELDS),
            "refresh-endpoint": "client.refresh-credentials-endpoint" in fields}


def converse(uri: str, warehouse: str, headers: dict[str, str], namespace: str) -> dict[str, Any]:
    """The scripted requests; returns {observation: value}."""
    out: dict[str, Any] = {}
    config_answer = requests.get(uri.rstrip("/") + "/v1/config", params={"warehouse": warehouse}, headers=headers,
                                 timeout=30)
    out["config.status"] = config_answer.status_code
    config = config_answer.json()
    defaults, overrides = config.get("defaults") or {}, config.get("overrides") or {}
    prefix = overrides.get("prefix") or defaults.get("prefix")
    out["config.prefix-in"] = "overrides" if "prefix" in overrides else "defaults" if "prefix" in defaults else "none"
    out["config.idempotency-key-lifetime"] = "idempotency-key-lifetime" in {**config, **defaults, **overrides}
    out["config.refresh-endpoint"] = "client.refresh-credentials-endpoint" in {**defaults, **overrides}
    base = uri.rstrip("/") + "/v1" + (f"/{prefix}" if prefix else "")
    suffix = str(int(time.time() * 1000))
    vended = {**headers, "X-Iceberg-Access-Delegation": "vended-credentials"}
    signing = {**headers, "X-Iceberg-Access-Delegation": "remote-signing"}
    requests.post(f"{base}/namespaces", json={"namespace": [namespace]}, headers=headers, timeout=30)  # 409 if there
    tables = f"{base}/namespaces/{namespace}/tables"

    def create(name: str, stage: bool, hdrs: dict[str, str]) -> requests.Response:
        return requests.post(tables, json={"name": name, "schema": REST_ID_SCHEMA, "stage-create": stage}, headers=hdrs,
                             timeout=30)

    staged = create(f"staged_{suffix}", True, vended)
    out["stage-create.status"] = staged.status_code
    out.update({f"stage-create.{k}": v for k, v in _keys(staged.json()).items()} if staged.ok else {})
    out["staged-load.status"] = requests.get(f"{tables}/staged_{suffix}", headers=headers, timeout=30).status_code
    out["staged-credentials.status"] = requests.get(f"{tables}/staged_{suffix}/credentials", headers=headers,
                                                    timeout=30).status_code
    created = create(f"t_{suffix}", False, vended)
    out["create.status"] = created.status_code
    out.update({f"create.{k}": v for k, v in _keys(created.json()).items()} if created.ok else {})
    loaded = requests.get(f"{tables}/t_{suffix}", headers=vended, timeout=30)
    out["load.status"] = loaded.status_code
    out.update({f"load.{k}": v for k, v in _keys(loaded.json()).items()} if loaded.ok else {})
    out["credentials.status"] = requests.get(f"{tables}/t_{suffix}/credentials", headers=headers, timeout=30).status_code
    missing = requests.get(f"{tables}/missing_{suffix}", headers=headers, timeout=30)
    out["missing-table.status"] = missing.status_code
    out["missing-table.error-type"] = ((missing.json() if missing.headers.get("Content-Type", "").startswith(
        "application/json") else {}).get("error") or {}).get("type")
    signed = requests.get(f"{tables}/t_{suffix}", headers=signing, timeout=30)
    out["remote-signing-load.status"] = signed.status_code
    if signed.ok:
        conf = signed.json().get("config") or {}
        out["remote-signing-load.keys-in"] = _keys(signed.json())["keys-in"]
        out["remote-signing-load.signer"] = "s3.signer" if any(k in conf for k in SIGNER_FIELDS) else (
            "remote-signing-config" if signed.json().get("remote-signing-config") else "none")
    return out


def differences(real: dict[str, Any], emulated: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{observation: (real, emulated)} where the two disagree."""
    return {k: (real.get(k), emulated.get(k)) for k in sorted(set(real) | set(emulated)) if real.get(k) != emulated.get(k)}
