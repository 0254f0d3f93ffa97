"""ADLS and GCS tokens in a catalog's table answer, where each may be sent, and whether the store takes it.

Iceberg's keys: ADLS `adls.sas-token.<host>` (+ `-expires-at-ms.<host>`), GCS `gcs.oauth2.token`
(+ `-expires-at`), and their refresh endpoints. A token goes only to the endpoint Iceberg's own
FileIO would use for its store (an ADLS SAS for host H to `adls.connection-string.H`, else
`https://H`, for a location on H only; a GCS token to `gcs.service.host`, else Google's), an http(s)
origin without userinfo, through a session of its own: no redirects, no `.netrc` or environment.
The probe object is written, read and deleted with plain HTTP, no SDK.

Why: docs/doctor.md, section 'Doctor' ("Where a store token goes").
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from pyspark_catalog_ext.catalog.storage_keys import (
    ADLS_CONNECTION,
    ADLS_REFRESH_ENDPOINT,
    GCS_REFRESH_ENDPOINT,
    GCS_SERVICE_HOST,
    REFRESH_ENDPOINT,
    STORAGE_REFRESH_TOKEN,
)
from pyspark_catalog_ext.catalog.trust import Origin
from pyspark_catalog_ext.doctor.context import fingerprint
from pyspark_catalog_ext.refresh.vended import store_tokens

__all__ = ["STORES", "StoreCredential", "store_credentials", "refresh_endpoint", "store_endpoint", "check_access"]

STORES = ("adls", "gcs")
GCS_DEFAULT_HOST = "https://storage.googleapis.com"
#: The store's own refresh endpoint key, then the generic one Iceberg falls back to.
REFRESH_KEYS = {"adls": (ADLS_REFRESH_ENDPOINT, REFRESH_ENDPOINT), "gcs": (GCS_REFRESH_ENDPOINT, REFRESH_ENDPOINT)}
_SCHEMES = {"adls": ("abfs", "abfss"), "gcs": ("gs",)}
_PROBE_BODY = b"PAR1 pyspark-catalog-ext doctor store probe PAR1"


@dataclass
class StoreCredential:
    """One vended ADLS SAS (for one account host) or GCS token, from `storage-credentials` or the table `config`."""

    store: str
    prefix: str | None
    source: str  # "storage-credentials" or "config"
    token: str = field(repr=False)
    expires_at_ms: int | None
    host: str | None  # ADLS: the account host the SAS is for
    config: dict[str, str] = field(repr=False)
    table_config: dict[str, str] = field(default_factory=dict, repr=False)
    refresh_token: str | None = field(default=None, repr=False)

    def public(self) -> dict[str, Any]:
        """Secret-free description: store, prefix, key names, expiry, lifetime, token fingerprint."""
        expires = self.expires_at_ms
        return {"store": self.store, "source": self.source, "prefix": self.prefix, "host": self.host,
                "keys": sorted(self.config), "token_fingerprint": fingerprint(self.token),
                "expires_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires / 1000)) if expires else None,
                "lifetime_s": round(expires / 1000 - time.time()) if expires else None,
                "storage_refresh_token": self.refresh_token is not None}


def _from_config(config: dict[str, str], prefix: str | None, source: str, table_config: dict[str, str],
                 refresh_token: str | None) -> list[StoreCredential]:
    return [StoreCredential(t.store, prefix, source, t.token, t.expires_at_ms, t.host, config, table_config, refresh_token)
            for t in store_tokens(config)]


def store_credentials(body: Mapping[str, Any] | None) -> list[StoreCredential]:
    """The ADLS and GCS tokens of a load/create/credentials answer: `storage-credentials` first
    (longest prefix first), then the table `config`."""
    if not body:
        return []
    table_config = {str(k): str(v) for k, v in (body.get("config") or {}).items()}
    entries = [c for c in body.get("storage-credentials") or [] if isinstance(c, Mapping)]
    out: list[StoreCredential] = []
    for cred in sorted(entries, key=lambda c: len(str(c.get("prefix") or "")), reverse=True):
        config = {str(k): str(v) for k, v in (cred.get("config") or {}).items()}
        token = cred.get(STORAGE_REFRESH_TOKEN)
        out += _from_config(config, cred.get("prefix"), "storage-credentials", table_config, str(token) if token else None)
    return out + _from_config(table_config, None, "config", table_config, None)


def store_of(location: str) -> str | None:
    """"adls" for abfs(s)://, "gcs" for gs://, else None."""
    scheme = location.partition("://")[0].lower()
    return next((store for store, schemes in _SCHEMES.items() if scheme in schemes), None)


def for_location(creds: list[StoreCredential], location: str) -> StoreCredential | None:
    """The credential that covers `location`: its store's, the longest covering prefix, then the table
    config's; an ADLS SAS only for a location on its own account host. Covering is by path segment, so
    `.../t` does not cover `.../t2`: stricter than Iceberg's plain string prefix (`Prefixes.longest`),
    since the doctor asks whether a table's own token works on that table, never a sibling's."""
    store = store_of(location)
    host = _adls_parts(location)[1] if store == "adls" else None
    for cred in creds:
        if cred.store != store or (store == "adls" and cred.host != host):
            continue
        if cred.prefix is None or location.rstrip("/") == cred.prefix.rstrip("/") or location.startswith(cred.prefix.rstrip("/") + "/"):
            return cred
    return None


def refresh_endpoint(store: str, body: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(the endpoint, the key that named it) a table answer advertises for `store`, or None."""
    configs = [dict(body.get("config") or {})] if body else []
    configs += [dict(c.get("config") or {}) for c in (body or {}).get("storage-credentials") or [] if isinstance(c, Mapping)]
    for key in REFRESH_KEYS[store]:
        for config in configs:
            if config.get(key):
                return str(config[key]), key
    return None


def _pick(cred: StoreCredential, props: Mapping[str, str], key: str) -> tuple[str | None, str | None]:
    for where, layer in (("storage-credentials" if cred.source == "storage-credentials" else "table config", cred.config),
                         ("table config", cred.table_config), ("catalog properties", props)):
        if layer.get(key):
            return str(layer[key]), where
    return None, None


def store_endpoint(cred: StoreCredential, props: Mapping[str, str]) -> dict[str, Any]:
    """Where `cred`'s token may go: {"endpoint", "from" (which layer named it, None: the store's
    default), "origin"} or, when the endpoint breaks the rule, {"refused": why}."""
    if cred.store == "adls":
        key = ADLS_CONNECTION + str(cred.host)
        endpoint, where = _pick(cred, props, key)
        endpoint = endpoint or f"https://{cred.host}"
    else:
        key = GCS_SERVICE_HOST
        endpoint, where = _pick(cred, props, key)
        endpoint = endpoint or GCS_DEFAULT_HOST
    try:
        origin = Origin.of(endpoint)
    except ValueError as exc:
        return {"key": key, "from": where, "refused": f"{key} is not an endpoint a token is sent to: {exc}"}
    return {"key": key, "from": where, "endpoint": endpoint.rstrip("/"), "origin": str(origin)}


def _adls_parts(location: str) -> tuple[str, str, str]:
    """(container, host, path) of abfs[s]://container@host/path."""
    parts = urlsplit(location)
    container, _, host = parts.netloc.rpartition("@")
    return container, host.lower(), parts.path.strip("/")


def _gcs_parts(location: str) -> tuple[str, str]:
    parts = urlsplit(location)
    return parts.netloc, parts.path.strip("/")


def _error_code(resp: requests.Response) -> str | None:
    """Azure's x-ms-error-code (or the XML's <Code>), GCS's JSON error reason: names, never values."""
    code = resp.headers.get("x-ms-error-code")
    if code:
        return code[:80]
    match = re.search(r"<Code>([A-Za-z]{1,80})</Code>", resp.text[:2000])
    if match:
        return match.group(1)
    try:
        errors = (resp.json().get("error") or {}).get("errors") or []
        reason = errors[0].get("reason") if errors else None
        return str(reason)[:80] if reason else None
    except (ValueError, AttributeError):
        return None


def _requests(cred: StoreCredential, endpoint: str, location: str, leaf: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(operation, method, requests kwargs with url) of the write, read and delete of `leaf` under `location`."""
    if cred.store == "adls":
        container, _, path = _adls_parts(location)
        url = f"{endpoint}/{quote(container)}/{quote(f'{path}/{leaf}'.lstrip('/'))}?{cred.token.lstrip('?')}"
        return [("write", "PUT", {"url": url, "data": _PROBE_BODY, "headers": {"x-ms-blob-type": "BlockBlob"}}),
                ("read", "GET", {"url": url}),
                ("delete", "DELETE", {"url": url})]
    bucket, path = _gcs_parts(location)
    name = f"{path}/{leaf}".lstrip("/")
    auth = {"Authorization": f"Bearer {cred.token}"}
    obj = f"{endpoint}/storage/v1/b/{quote(bucket, safe='')}/o/{quote(name, safe='')}"
    return [("write", "POST", {"url": f"{endpoint}/upload/storage/v1/b/{quote(bucket, safe='')}/o",
                               "params": {"uploadType": "media", "name": name}, "data": _PROBE_BODY,
                               "headers": {**auth, "Content-Type": "application/octet-stream"}}),
            ("read", "GET", {"url": obj, "params": {"alt": "media"}, "headers": auth}),
            ("delete", "DELETE", {"url": obj, "headers": auth})]


def check_access(cred: StoreCredential, endpoint: str, location: str, timeout: float = 20.0,
                 session_factory: Callable[[], requests.Session] = requests.Session) -> dict[str, Any]:
    """Write, read back and delete a probe object under `location` with `cred`'s token at `endpoint`.
    Evidence only (no secret): per request the operation, method, object path, status, error code and
    time; `works` True/False, `refused` (401/403 seen), `transport_error`."""
    leaf = f"data/doctor-probe-{uuid.uuid4()}.parquet"
    session = session_factory()
    session.trust_env = False  # no .netrc password or proxy settings for a server-named host
    steps: list[dict[str, Any]] = []
    try:
        for op, method, kwargs in _requests(cred, endpoint, location, leaf):
            row: dict[str, Any] = {"op": op, "method": method, "object": f"{location.rstrip('/')}/{leaf}"}
            t0 = time.perf_counter()
            try:
                resp = session.request(method, timeout=timeout, allow_redirects=False, **kwargs)
            except requests.RequestException as exc:
                row.update(status=None, error=type(exc).__name__, elapsed_ms=round((time.perf_counter() - t0) * 1000, 1))
                steps.append(row)
                return {"works": False, "transport_error": True, "steps": steps}
            row.update(status=resp.status_code, code=_error_code(resp) if resp.status_code >= 300 else None,
                       elapsed_ms=round((time.perf_counter() - t0) * 1000, 1))
            if op == "read" and resp.status_code == 200:
                row["same_bytes"] = resp.content == _PROBE_BODY
            steps.append(row)
            if op == "write" and resp.status_code >= 300:
                break  # nothing written: nothing to read or delete (a failed read still deletes)
    finally:
        session.close()
    works = len(steps) == 3 and all(s["status"] is not None and s["status"] < 300 for s in steps) \
        and steps[1].get("same_bytes") is True
    return {"works": works, "refused": any(s["status"] in (401, 403) for s in steps), "steps": steps}
