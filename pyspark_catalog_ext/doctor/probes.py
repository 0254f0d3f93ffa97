"""The catalog probes: the basics (config, auth, namespaces, tables) and the credentials the catalog
vends (presence, scope, clock skew), with the helpers the other catalog probes share. The refresh paths
are in `refresh_probes`, staged commits and Idempotency-Key in `commit_probes`, remote signing in
`signing_probes`, the S3 scope check in `s3scope`, PyIceberg and Spark in `engines`, the server
inventory in `inventory`; `suite` puts them in order.

Tables the probes create in the run's namespace `doctor_<random>`:
`t` (committed, the probe table), `t_drop`, `s_token`, `s_restage`, `s_commit`, `s_idem`
(staged), `pyiceberg`, `spark`.
"""

from __future__ import annotations

import time
from typing import Any

import requests

from pyspark_catalog_ext.catalog.rest import PurgeRequiredError
from pyspark_catalog_ext.doctor.context import (
    ProbeContext,
    VendedCredential,
    create_updates,
    fingerprint,
    split_location,
)
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed, skipped, unsupported
from pyspark_catalog_ext.doctor.stores import store_credentials
from pyspark_catalog_ext.errors import CatalogConflictError, CatalogError, CatalogUnsupportedError

__all__ = ["create_updates"]


def status_of(exc: Exception) -> int | None:
    return getattr(exc, "status", None)


def cached_probe(first: VendedCredential, again: VendedCredential) -> bool:
    """The same keys with the same expiry handed out again: the catalog's credential cache (Polaris
    keeps a table location's keys for the shorter of its cache setting and half their remaining
    lifetime), not a failed renewal."""
    return first.access_key_id == again.access_key_id and first.expires_at_ms == again.expires_at_ms


CACHE_NOTE = ("the catalog caches vended keys (Polaris: for the shorter of its cache setting and half their "
              "remaining lifetime); the refresher asks again after that window")


def store_tokens(body: Any) -> list[dict[str, Any]]:
    """The ADLS and GCS tokens of an answer, described without secrets (the S3 probes count them too:
    a catalog vending for those stores renews them through the same endpoints)."""
    return [c.public() for c in store_credentials(body if isinstance(body, dict) else None)]


# ------------------------------------------------------------------------------- catalog basics
@probe("config", "GET /v1/config and prefix", "basics")
def probe_config(ctx: ProbeContext) -> Outcome:
    body = ctx.client.config()
    ctx.shared["config"] = body
    evidence = {
        "prefix": ctx.client.prefix,
        "defaults_keys": sorted(body.get("defaults") or {}),
        "overrides_keys": sorted(body.get("overrides") or {}),
        "top_level_keys": sorted(body),
        "endpoints_advertised": len(ctx.client.endpoints) if ctx.client.endpoints is not None else None,
        "idempotency_key_lifetime": ctx.client.idempotency_key_lifetime,
    }
    prefix = f"prefix {ctx.client.prefix!r}" if ctx.client.prefix else "no prefix"
    endpoints = f"{len(ctx.client.endpoints)} endpoints advertised" if ctx.client.endpoints is not None else "no endpoint list"
    return passed(f"200; {prefix}; {endpoints}", **evidence)


@probe("auth", "authentication", "basics", needs=("config",))
def probe_auth(ctx: ProbeContext) -> Outcome:
    kind = ctx.client.auth_kind
    token_calls = [e for e in ctx.http + list(ctx.shared.get("preflight_http", [])) if e["operation"] == "oauth_token"]
    ctx.client.namespaces()
    # Does the catalog enforce auth at all? The same listing without credentials must be refused.
    url = ctx.client.url("namespaces")
    t0 = time.perf_counter()
    anon: int | str
    try:
        anon = requests.get(url, timeout=(5, 20), verify=ctx.client._session.verify).status_code
    except requests.RequestException as exc:
        anon = f"error {type(exc).__name__}"
    evidence = {"auth": kind, "token_endpoint_statuses": [e["status"] for e in token_calls],
                "unauthenticated_listing_status": anon,
                "unauthenticated_elapsed_ms": round((time.perf_counter() - t0) * 1000, 1)}
    if anon == 200 and ctx.shared.get("open_catalog"):
        # Declared by the user (--open-catalog): said, not failed, so the probes after it still run.
        return passed("open (declared): the catalog answers unauthenticated requests (200); warning: anyone who "
                      "reaches it can read and change its tables", open_catalog="declared", **evidence)
    if kind != "none" and anon == 200:
        return failed(f"{kind} works, but the catalog also answers unauthenticated requests (200); if it is open on "
                      "purpose, say so with --open-catalog", **evidence)
    refused = f"unauthenticated listing refused ({anon})" if kind != "none" else "no auth configured"
    return passed(f"{kind} accepted; {refused}", **evidence)


@probe("namespaces", "namespace create / list / drop", "basics", needs=("auth",))
def probe_namespaces(ctx: ProbeContext) -> Outcome:
    client, ns = ctx.client, ctx.namespace
    ctx.cleanup.add(f"drop namespace {ns} and its tables", ctx.sweep_namespace)  # before creating it
    try:
        client.make_namespace(ns, {"created-by": "pyspark-catalog-ext doctor"})
    except CatalogUnsupportedError as exc:  # 405/501: the endpoint is read-only (Unity OSS 0.6), not broken
        listed_ok = isinstance(client.namespaces(), list)
        return unsupported(f"the catalog is read-only here (namespace create answered HTTP {exc.status}): reads work, "
                           "writes (CTAS, appends, the probes that create tables) cannot run",
                           namespace=ns, create_status=exc.status, list_ok=listed_ok)
    listed = (ns,) in client.namespaces()
    scratch = f"{ns}_scratch"
    client.make_namespace(scratch)
    try:
        scratch_listed = (scratch,) in client.namespaces()
    finally:
        client.remove_namespace(scratch)
    scratch_gone = (scratch,) not in client.namespaces()
    evidence = {"namespace": ns, "properties_keys": sorted(client.namespace_properties(ns)),
                "listed_after_create": listed and scratch_listed, "gone_after_drop": scratch_gone}
    if not (listed and scratch_listed):
        return failed("created namespace is not listed", **evidence)
    if not scratch_gone:
        return failed("dropped namespace is still listed", **evidence)
    return passed(f"created {ns}, listed, dropped a scratch namespace", **evidence)


@probe("tables", "table create / load / drop", "basics", needs=("namespaces",))
def probe_tables(ctx: ProbeContext) -> Outcome:
    created = ctx.create_table("t")
    ctx.shared["create_t"] = created
    location = (created.get("metadata") or {}).get("location")
    ctx.shared["location_t"] = location
    loaded = ctx.load_table("t")
    ctx.shared["load_t"] = loaded
    same = loaded.get("metadata", {}).get("table-uuid") == created.get("metadata", {}).get("table-uuid")
    ctx.create_table("t_drop")
    purge_only = False
    try:
        ctx.client.remove_table((ctx.namespace, "t_drop"))
    except PurgeRequiredError:  # S3 Tables: a table goes only with its data; that drop is the one users have
        purge_only = True
        ctx.client.remove_table((ctx.namespace, "t_drop"), purge=True)
    gone = not ctx.client.has_table((ctx.namespace, "t_drop"))
    # Spec: creating an existing name is 409. Some servers (SeaweedFS) answer 200 instead.
    existing: int | None
    try:
        ctx.create_table("t")
        existing = 200
    except CatalogConflictError as exc:
        existing = exc.status
    except CatalogError as exc:
        existing = status_of(exc)
    evidence = {"location": location, "metadata_location": created.get("metadata-location"),
                "load_same_uuid": same, "dropped_table_gone": gone, "drop_needs_purge": purge_only,
                "create_existing_status": existing,
                "table_config_keys": sorted(loaded.get("config") or {})}
    if not location:
        return failed("create returned no table location", **evidence)
    if not same:
        return failed("load returned another table than the one created", **evidence)
    if not gone:
        return failed("dropped table still exists", **evidence)
    note = "" if existing == 409 else f"; create on an existing name answers {existing}, not 409"
    if purge_only:
        note += "; a table drops only with its data (plain drop refused): DROP TABLE ... PURGE / purge_table()"
    return passed(f"created, loaded and dropped tables{note}", **evidence)


# ------------------------------------------------------------------------------- vended credentials
@probe("vended-credentials", "vended credentials: present, expiry, lifetime, rotation", "vended", needs=("tables",))
def probe_vended(ctx: ProbeContext) -> Outcome:
    on_create = ctx.credentials(ctx.shared.get("create_t"))
    first = ctx.credentials(ctx.shared.get("load_t"))
    second_load = ctx.load_table("t")
    ctx.shared["load_t2"] = second_load
    second = ctx.credentials(second_load)
    evidence: dict[str, Any] = {
        "delegation_header": ctx.client.access_delegation,
        "on_create": [c.public() for c in on_create],
        "on_load": [c.public() for c in first],
        "sources": sorted({c.source for c in first}),
    }
    if not first:
        stores = sorted({c["store"] for c in store_tokens(ctx.shared.get("load_t"))})
        why = ("the profile sends no X-Iceberg-Access-Delegation header" if not ctx.client.access_delegation
               else "loadTable returned no S3 keys in config or storage-credentials"
               + (f" (it vends for {' and '.join(stores)}: see the store-* probes)" if stores else ""))
        return unsupported(f"no vended credentials: {why}", **evidence)
    cred = first[0]
    rotates = bool(second) and second[0].access_key_id != cred.access_key_id
    evidence["rotates_per_load"] = rotates
    evidence["cached"] = bool(second) and cred.expires_at_ms is not None and cached_probe(cred, second[0])
    evidence["load_fingerprints"] = [fingerprint(cred.access_key_id), fingerprint(second[0].access_key_id) if second else None]
    lifetime = cred.public()["lifetime_s"]
    evidence["lifetime_s"] = lifetime
    ctx.shared["vended"] = cred
    where = " and ".join(evidence["sources"])
    rot = ("new keys on every load" if rotates else f"a second load returned the same keys: {CACHE_NOTE}"
           if evidence["cached"] else "same keys on every load")
    if lifetime is None:
        return passed(f"in {where}; no expiry advertised (s3.session-token-expires-at-ms missing); {rot}", **evidence)
    return passed(f"in {where}; expire in {lifetime} s; {rot}", **evidence)


@probe("credential-scope", "vended credentials scoped to the exact table prefix", "scope", needs=("vended-credentials",))
def probe_scope(ctx: ProbeContext) -> Outcome:
    try:
        import boto3  # noqa: F401

        from pyspark_catalog_ext.doctor.s3scope import check_scope
    except ImportError:
        return skipped("boto3 is not installed (pip install boto3)")
    cred = ctx.credentials(ctx.load_table("t"))[0]
    return check_scope(ctx, cred, ctx.shared["location_t"])


@probe("clock-skew", "clock skew: the Date headers of the catalog and of S3 against this machine", "vended",
       needs=("vended-credentials",))
def probe_clock_skew(ctx: ProbeContext) -> Outcome:
    """Expiries are stated on the catalog's clock and enforced on S3's: past
    `catalog-ext.refresh.max-clock-skew-ms` the refresh schedules by the server's clock instead of ours."""
    from pyspark_catalog_ext.refresh.policy import KNOBS, RefreshPolicy
    from pyspark_catalog_ext.refresh.rejection import skew_from_date

    bound_s = RefreshPolicy.from_properties(ctx.props).max_clock_skew_s
    ctx.client.namespaces()  # one fresh answer: its Date header
    catalog = dict(ctx.client.clock_skew_evidence or {})
    s3: dict[str, Any] = {}
    try:
        from botocore.exceptions import BotoCoreError, ClientError

        cred = ctx.credentials(ctx.load_table("t"))[0]
        bucket, path = split_location(ctx.shared["location_t"])
        sent = time.time()
        try:
            answer = ctx.s3_client(cred).list_objects_v2(Bucket=bucket, Prefix=f"{path}/", MaxKeys=1)
        except ClientError as exc:  # a refusal carries the server's Date too
            answer = exc.response
        headers = (answer.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
        skew = skew_from_date(headers.get("date"), (sent + time.time()) / 2)
        s3 = {"source": "s3", "date": headers.get("date"), "skew_s": None if skew is None else round(skew, 3)}
    except ImportError:
        s3 = {"source": "s3", "error": "boto3 is not installed"}
    except BotoCoreError as exc:
        s3 = {"source": "s3", "error": type(exc).__name__}
    evidence = {"bound_s": bound_s, "knob": KNOBS["max_clock_skew_s"], "resolution_s": 1.0, "catalog": catalog, "s3": s3}
    seen = {name: part["skew_s"] for name, part in (("catalog", catalog), ("S3", s3)) if part.get("skew_s") is not None}
    if not seen:
        return unsupported("neither the catalog nor S3 sent a Date header", **evidence)
    said = ", ".join(f"{name} {skew:+.1f} s" for name, skew in seen.items())
    off = [name for name, skew in seen.items() if abs(skew) > bound_s]
    if off:
        return failed(f"{said} off this machine's clock (Date headers, 1 s resolution): past {bound_s:g} s, so refresh "
                      f"schedules by the {' and '.join(off)} clock; fix NTP here or on the server", **evidence)
    return passed(f"{said} (Date headers, 1 s resolution; bound {bound_s:g} s)", **evidence)
