"""The refresh-path probes: the ways the package renews a table's credentials (the server's refresh
endpoint, `GET .../credentials`, a staged table's storage-refresh-token, re-staging).

Tables: `s_token`, `s_restage` (staged).
"""

from __future__ import annotations

from typing import Any

from pyspark_catalog_ext.catalog.storage_keys import REFRESH_ENDPOINT
from pyspark_catalog_ext.doctor.context import ProbeContext, fingerprint, one_line
from pyspark_catalog_ext.doctor.probes import CACHE_NOTE, cached_probe, status_of, store_tokens
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed, unsupported
from pyspark_catalog_ext.doctor.stores import store_credentials
from pyspark_catalog_ext.errors import CatalogError, CatalogNotFoundError, CatalogUnsupportedError


def _refresh_endpoint_of(body: dict[str, Any] | None) -> str | None:
    if not body:
        return None
    for cfg in [body.get("config") or {}] + [c.get("config") or {} for c in body.get("storage-credentials") or []]:
        if cfg.get(REFRESH_ENDPOINT):
            return str(cfg[REFRESH_ENDPOINT])
    return None


# ------------------------------------------------------------------------------- refresh paths
@probe("refresh-endpoint", "server refresh endpoint (client.refresh-credentials-endpoint)", "refresh", needs=("tables",))
def probe_refresh_endpoint(ctx: ProbeContext) -> Outcome:
    sources = {"load": ctx.shared.get("load_t"), "create": ctx.shared.get("create_t")}
    url = None
    found_in = None
    for name, body in sources.items():
        url = _refresh_endpoint_of(body)
        if url:
            found_in = name
            break
    if not url and ctx.client.properties.get(REFRESH_ENDPOINT):
        url, found_in = ctx.client.properties[REFRESH_ENDPOINT], "config"
    evidence: dict[str, Any] = {"advertised_in": found_in, "endpoint": url}
    if not url:
        return unsupported("no client.refresh-credentials-endpoint in /v1/config or the table config", **evidence)
    try:
        body = ctx.client.get_url(url)
    except CatalogError as exc:
        evidence["status"] = status_of(exc)
        return failed(f"advertised refresh endpoint failed: {one_line(exc, 160)}", **evidence)
    ctx.secrets.add_load_result(body if isinstance(body, dict) else None)
    creds = ctx.credentials(body if isinstance(body, dict) else None)
    evidence["credentials"] = [c.public() for c in creds] + store_tokens(body)
    if not evidence["credentials"]:
        return failed("refresh endpoint answered without credentials", **evidence)
    return passed(f"advertised in {found_in}; returns credentials", **evidence)


@probe("credentials-endpoint", "GET .../tables/{t}/credentials", "refresh", needs=("tables",))
def probe_credentials_endpoint(ctx: ProbeContext) -> Outcome:
    advertised = ctx.client.supports_endpoint("GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials")
    evidence: dict[str, Any] = {"advertised": advertised}
    try:
        body = ctx.client.load_credentials_json((ctx.namespace, "t"))
    except (CatalogUnsupportedError, CatalogNotFoundError) as exc:
        evidence["status"] = status_of(exc)
        if isinstance(exc, CatalogUnsupportedError) or getattr(exc, "kind", None) == "endpoint":
            return unsupported(f"endpoint missing (HTTP {status_of(exc)})", **evidence)
        return failed(f"endpoint answered 404 for an existing table: {one_line(exc, 160)}", **evidence)
    ctx.secrets.add_load_result(body)
    creds = ctx.credentials(body)
    evidence["status"] = 200
    evidence["credentials"] = [c.public() for c in creds] + store_tokens(body)
    if not evidence["credentials"]:
        return failed("200 but no credentials in storage-credentials", **evidence)
    unlisted = "; served although /v1/config does not list it" if advertised is False else ""
    return passed(f"200; {len(creds)} credential(s){unlisted}", **evidence)


@probe("storage-refresh-token", "storage-refresh-token on a staged table", "refresh", needs=("namespaces",))
def probe_refresh_token(ctx: ProbeContext) -> Outcome:
    try:
        staged = ctx.stage_table("s_token")
    except CatalogError as exc:
        return unsupported(f"stage-create refused (HTTP {status_of(exc)})", status=status_of(exc))
    # (the token, a fingerprint of the key or store token it came with): S3 keys first, then ADLS and GCS tokens
    tokens = [(c.refresh_token, fingerprint(c.access_key_id)) for c in ctx.credentials(staged) if c.refresh_token]
    tokens += [(c.refresh_token, fingerprint(c.token)) for c in store_credentials(staged) if c.refresh_token]
    load_t = ctx.shared.get("load_t")
    on_load = any(c.refresh_token for c in ctx.credentials(load_t)) or any(c.refresh_token for c in store_credentials(load_t))
    evidence: dict[str, Any] = {"token_on_stage_create": bool(tokens), "token_on_load": on_load}
    if not tokens:
        return unsupported("no storage-refresh-token on storage-credentials", **evidence)
    token, was = tokens[0]
    try:
        body = ctx.client.load_credentials_json((ctx.namespace, "s_token"), storage_refresh_token=token)
    except CatalogError as exc:
        evidence["status"] = status_of(exc)
        return failed(f"token refresh failed: {one_line(exc, 160)}", **evidence)
    ctx.secrets.add_load_result(body)
    fresh = ctx.credentials(body)
    evidence["status"] = 200
    evidence["credentials"] = [c.public() for c in fresh] + store_tokens(body)
    if not evidence["credentials"]:
        return failed("refresh answered without credentials", **evidence)
    now = [fingerprint(c.access_key_id) for c in fresh] + [c["token_fingerprint"] for c in store_tokens(body)]
    rotated = now[0] != was
    evidence["fresh_keys"] = rotated
    return passed(f"refreshed a staged table's credentials ({'new' if rotated else 'same'} keys)", **evidence)


@probe("re-stage", "re-stage the same name and location for fresh credentials", "refresh", needs=("vended-credentials",))
def probe_restage(ctx: ProbeContext) -> Outcome:
    try:
        first = ctx.stage_table("s_restage")
    except CatalogError as exc:
        return unsupported(f"stage-create refused (HTTP {status_of(exc)})", status=status_of(exc))
    location = (first.get("metadata") or {}).get("location")
    creds1 = ctx.credentials(first)
    evidence: dict[str, Any] = {"location": location, "first": [c.public() for c in creds1]}
    if not creds1:
        return failed("stage-create vended no credentials", **evidence)
    try:
        again = ctx.stage_table("s_restage", location=location)
    except CatalogError as exc:
        evidence["status"] = status_of(exc)
        return unsupported(f"staging the same name again is refused (HTTP {status_of(exc)})", **evidence)
    creds2 = ctx.credentials(again)
    location2 = (again.get("metadata") or {}).get("location")
    evidence.update({"status": 200, "second_location": location2, "second": [c.public() for c in creds2],
                     "same_location": location2 == location,
                     "fresh_keys": bool(creds2) and creds2[0].access_key_id != creds1[0].access_key_id,
                     "cached": bool(creds2) and creds1[0].expires_at_ms is not None and cached_probe(creds1[0], creds2[0])})
    if location2 != location:
        return failed(f"re-stage moved the table to {location2}", **evidence)
    if not creds2:
        return failed("re-stage vended no credentials", **evidence)
    if evidence["cached"]:
        return passed(f"200; the same location and, at once, the same keys: {CACHE_NOTE}", **evidence)
    if not evidence["fresh_keys"]:
        return failed("re-stage returned the same keys with another expiry (no refresh)", **evidence)
    return passed("200; fresh credentials at the same location", **evidence)
