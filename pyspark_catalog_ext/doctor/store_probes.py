"""The ADLS and GCS probes: per store the catalog vends for (recognised from Iceberg's keys, see
`stores`), the credentials and their lifetime, the refresh strategy a committed and a staged table
have, and whether the vended token works against the store. On a probe table elsewhere (S3) they are
skipped; on an ADLS or GCS table without a token, `unsupported`. The S3 probes are in `probes`,
`refresh_probes`, `signing_probes` and `s3scope`.

Tables: the probe table `t` (committed) and `s_store` (staged)."""

from __future__ import annotations

from typing import Any

from pyspark_catalog_ext.doctor.context import ProbeContext, one_line
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed, skipped, unsupported
from pyspark_catalog_ext.doctor.stores import (
    StoreCredential,
    check_access,
    for_location,
    refresh_endpoint,
    store_credentials,
    store_endpoint,
    store_of,
)
from pyspark_catalog_ext.errors import CatalogError

__all__ = ["STAGED_404"]

STAGED_404 = "the endpoint answers 404 for a staged table (apache/iceberg#13554)"
#: What no store probe shows, said in every store probe's evidence.
NOT_PROBED = ("the token's scope outside the table (only S3 keys get the scope probe)",
              "whether the store takes a token past its stated expiry",
              "ADLS calls of the DFS API only (the probe uses the Blob API: Put, Get and Delete Blob)",
              "a token vended for another prefix than the table's (no probe object is written outside the table)",
              "the Iceberg release your jobs run: on 1.10 a renewed ADLS SAS reaches only files opened after the "
              "renewal (no client hook; docs/stores.md)",
              "PyIceberg jobs: they renew ADLS and GCS tokens with their own strategies (docs/pyiceberg.md), proven "
              "with FsspecFileIO only; the strategies listed are the Spark shim's")


def _stores(creds: list[StoreCredential]) -> list[str]:
    return sorted({c.store for c in creds})


@probe("store-credentials", "ADLS / GCS credentials: which stores, lifetime, rotation", "stores", needs=("tables",))
def probe_store_credentials(ctx: ProbeContext) -> Outcome:
    first = store_credentials(ctx.shared.get("load_t"))
    evidence: dict[str, Any] = {"credentials": [c.public() for c in first], "not_probed": list(NOT_PROBED)}
    if not first:
        location = str(ctx.shared.get("location_t") or "")
        if store_of(location) is None:  # an S3 (or other) table: no store of these to ask about
            return skipped(f"the probe table is at {location.partition('://')[0] or 'an unknown'}://, not on ADLS or GCS",
                           **evidence)
        return unsupported(f"no {store_of(location)} token in the table answer (adls.sas-token.<host>, gcs.oauth2.token)",
                           **evidence)
    ctx.shared["store_creds"] = first
    again = store_credentials(ctx.load_table("t"))
    said = []
    for store in _stores(first):
        mine = [c for c in first if c.store == store]
        lifetimes = [c.public()["lifetime_s"] for c in mine]
        rotated = {c.token for c in mine}.isdisjoint({c.token for c in again if c.store == store})
        evidence[store] = {"lifetime_s": lifetimes, "new_token_on_load": rotated, "sources": sorted({c.source for c in mine})}
        life = "no expiry stated" if None in lifetimes else f"expires in {min(lifetimes)} s"
        tokens = len({c.token for c in mine})
        said.append(f"{store}: {tokens} token{'s' if tokens > 1 else ''} in {' and '.join(evidence[store]['sources'])}, {life}, "
                    f"{'new' if rotated else 'the same'} token on a second load")
    return passed("; ".join(said), **evidence)


def _refreshes(ctx: ProbeContext, store: str, call: Any) -> tuple[bool, dict[str, Any]]:
    """Run one refresh `call` (-> answer); (it returned a token of `store`, evidence)."""
    try:
        body = call()
    except CatalogError as exc:
        return False, {"status": getattr(exc, "status", None), "error": ctx.secrets.scrub(one_line(exc, 200))}
    ctx.secrets.add_load_result(body if isinstance(body, dict) else None)
    fresh = [c for c in store_credentials(body if isinstance(body, dict) else None) if c.store == store]
    return bool(fresh), {"status": 200, "credentials": [c.public() for c in fresh]}


def _strategies(ctx: ProbeContext, store: str, phase: str, table: str, answer: dict[str, Any]) -> dict[str, Any]:
    """Each strategy the Spark shim's refresh would try for `store` on this table, in its order
    (docs/refresh.md), tried once: (works: it returned a token of `store`)."""
    ident = (ctx.namespace, table)
    out: dict[str, Any] = {}
    tokens = [c.refresh_token for c in store_credentials(answer) if c.store == store and c.refresh_token]
    if tokens:
        ok, ev = _refreshes(ctx, store, lambda: ctx.client.load_credentials_json(ident, storage_refresh_token=tokens[0]))
        out["storage-refresh-token"] = {"works": ok, **ev}
    named = refresh_endpoint(store, answer)
    if named:
        url, key = named
        ok, ev = _refreshes(ctx, store, lambda: ctx.client.get_url(url, key))
        out["endpoint"] = {"works": ok, "key": key, **ev}
    if phase == "staged":
        location = (answer.get("metadata") or {}).get("location")
        ok, ev = _refreshes(ctx, store, lambda: ctx.stage_table(table, location=location))
        out["re-stage"] = {"works": ok, **ev}
    else:
        ok, ev = _refreshes(ctx, store, lambda: ctx.client.load_credentials_json(ident))
        out["credentials-endpoint"] = {"works": ok, **ev}
        ok, ev = _refreshes(ctx, store, lambda: ctx.load_table(table))
        out["reload"] = {"works": ok, **ev}
    return out


def _said(phase: str, tried: dict[str, Any]) -> str:
    working = [name for name, ev in tried.items() if ev["works"]]
    staged_404 = phase == "staged" and (tried.get("endpoint") or {}).get("status") == 404
    return f"{phase}: {', '.join(working) or 'none'}" + (f" ({STAGED_404})" if staged_404 else "")


#: Strategies a catalog advertises: one that does not renew is broken (the others are the package's own tries).
_ADVERTISED = ("storage-refresh-token", "endpoint")


@probe("store-refresh", "ADLS / GCS token refresh for committed and staged tables", "stores", needs=("store-credentials",))
def probe_store_refresh(ctx: ProbeContext) -> Outcome:
    stores = _stores(ctx.shared["store_creds"])
    answers: dict[str, tuple[str, dict[str, Any]] | None] = {"committed": ("t", ctx.shared.get("load_t") or {})}
    evidence: dict[str, Any] = {"order": "the Spark shim tries them in this order (docs/refresh.md); PyIceberg jobs renew with their own (docs/pyiceberg.md)", "not_probed": list(NOT_PROBED)}
    try:
        answers["staged"] = ("s_store", ctx.stage_table("s_store"))
    except CatalogError as exc:
        answers["staged"] = None
        evidence["stage_create_status"] = getattr(exc, "status", None)
    said, broken, missing = [], [], []
    for store in stores:
        per: dict[str, dict[str, Any]] = {}
        phases = []
        for phase, answer in answers.items():
            if answer is None:
                phases.append(f"{phase}: not known (stage-create refused, HTTP {evidence['stage_create_status']})")
                missing.append(f"{store} {phase}")
                continue
            tried = per[phase] = _strategies(ctx, store, phase, *answer)
            phases.append(_said(phase, tried))
            # An advertised strategy that does not renew is broken, but for the staged endpoint's 404: Iceberg's gap.
            broken += [f"{store} {phase} {name} ({ev.get('status') or ev.get('error')})" for name, ev in tried.items()
                       if name in _ADVERTISED and not ev["works"]
                       and not (phase == "staged" and name == "endpoint" and ev.get("status") == 404)]
            if not any(ev["works"] for ev in tried.values()):
                missing.append(f"{store} {phase}")
        # Iceberg alone (no shim) renews only through the endpoint, and a staged table's is a 404.
        per["iceberg_alone"] = {phase: "endpoint" if (per.get(phase, {}).get("endpoint") or {}).get("works") else "none"
                                for phase in ("committed", "staged")}
        evidence[store] = per
        said.append(f"{store}: {'; '.join(phases)}")
    summary = "; ".join(said)
    if broken:
        return failed(f"advertised but does not renew: {', '.join(broken)}; {summary}", **evidence)
    if missing:
        return unsupported(f"{summary}; without a strategy the tokens of {', '.join(missing)} tables end at their expiry",
                           **evidence)
    return passed(summary, **evidence)


@probe("store-access", "ADLS / GCS: the vended token writes, reads and deletes under the table", "stores",
       needs=("store-credentials",))
def probe_store_access(ctx: ProbeContext) -> Outcome:
    location = str(ctx.shared.get("location_t") or "")
    creds = store_credentials(ctx.load_table("t"))
    cred = for_location(creds, location)
    evidence: dict[str, Any] = {"location": location, "not_probed": list(NOT_PROBED)}
    if cred is None:
        stores = ", ".join(_stores(creds))
        return failed(f"the answer vends for {stores}, but no token covers the table location {location}", **evidence)
    where = store_endpoint(cred, ctx.props)
    evidence.update(store=cred.store, credential=cred.public(), endpoint=where)
    if "refused" in where:
        return failed(f"{cred.store}: token not sent: {where['refused']}", **evidence)
    check = check_access(cred, where["endpoint"], location)
    evidence["access"] = check
    steps = check["steps"]
    shown = ", ".join(f"{s['method']} {s['status'] if s['status'] is not None else s.get('error')}"
                      + (f" {s['code']}" if s.get("code") else "") for s in steps)
    at = f"{where['origin']}" + (f" (named by {where['key']} in the {where['from']})" if where["from"] else " (the store's default)")
    if check.get("transport_error"):
        return failed(f"{cred.store}: cannot reach the store at {at}: {shown}", **evidence)
    if check["refused"]:
        return failed(f"{cred.store}: the store refused the vended token at {at}: {shown}", **evidence)
    if not check["works"]:
        return failed(f"{cred.store}: write, read back and delete did not all work at {at}: {shown}; "
                      "whether the token works is not known", **evidence)
    return passed(f"{cred.store}: the vended token wrote, read back and deleted a probe object under the table at {at}",
                  **evidence)
