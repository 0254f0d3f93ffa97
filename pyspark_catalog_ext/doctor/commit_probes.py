"""The commit probes: a staged create committed with assert-create, and whether the catalog honours
an Idempotency-Key on a repeated commit (advertised lifetime, replay per operation).

Tables: `s_commit`, `s_idem` (staged).
"""

from __future__ import annotations

from typing import Any

from pyspark_catalog_ext.commit.idempotency import uuid7
from pyspark_catalog_ext.doctor.context import ProbeContext, create_updates, one_line
from pyspark_catalog_ext.doctor.probes import status_of
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed, unsupported
from pyspark_catalog_ext.errors import CatalogConflictError, CatalogError


# ------------------------------------------------------------------------------- staging
@probe("stage-commit", "stage-create, then commit with assert-create", "staging", needs=("namespaces",))
def probe_stage_commit(ctx: ProbeContext) -> Outcome:
    client, ns = ctx.client, ctx.namespace
    try:
        staged = ctx.stage_table("s_commit")
    except CatalogError as exc:
        return unsupported(f"stage-create refused (HTTP {status_of(exc)})", status=status_of(exc))
    invisible = not client.has_table((ns, "s_commit"))
    unlisted = "s_commit" not in {t[-1] for t in client.tables(ns)}
    updates = create_updates(staged["metadata"])
    committed = client.commit_table_json((ns, "s_commit"), [{"type": "assert-create"}], updates)
    visible = client.has_table((ns, "s_commit"))
    loaded = ctx.load_table("s_commit")
    same_uuid = loaded["metadata"].get("table-uuid") == staged["metadata"].get("table-uuid")
    try:
        client.commit_table_json((ns, "s_commit"), [{"type": "assert-create"}], updates)
        replay: Any = 200
    except CatalogConflictError as exc:
        replay = exc.status
    except CatalogError as exc:
        replay = status_of(exc) or one_line(exc, 80)
    evidence = {"invisible_before_commit": invisible and unlisted, "commit_metadata_location": committed.get("metadata-location"),
                "visible_after_commit": visible, "same_uuid": same_uuid, "replay_status": replay}
    if not (invisible and unlisted):
        return failed("staged table is visible before its commit", **evidence)
    if not (visible and same_uuid):
        return failed("committed table is not visible (or has another uuid)", **evidence)
    if replay != 409:
        return failed(f"replaying the assert-create commit answered {replay}, expected 409", **evidence)
    return passed("invisible until commit, visible after; replay 409", **evidence)


# ------------------------------------------------------------------------------- idempotency
@probe("idempotency-advertised", "Idempotency-Key: idempotency-key-lifetime in /v1/config", "idempotency", needs=("config",))
def probe_idempotency_advertised(ctx: ProbeContext) -> Outcome:
    lifetime = ctx.client.idempotency_key_lifetime
    evidence = {"idempotency_key_lifetime": lifetime, "lifetime_s": ctx.client.idempotency_key_lifetime_s}
    if not lifetime:
        return unsupported("/v1/config advertises no idempotency-key-lifetime", **evidence)
    return passed(f"lifetime {lifetime}", **evidence)


@probe("idempotency-replay", "Idempotency-Key: which operations a repeat is replayed for", "idempotency", needs=("namespaces",))
def probe_idempotency_replay(ctx: ProbeContext) -> Outcome:
    """Where a lifetime is advertised, each operation of `idempotency.OPERATIONS` is sent twice with one key:
    all replayed passes, some replayed is "partial" and passes too (the guard repeats under the key only what
    the catalog covers and looks at the rest, so an uncovered operation is no failure), none replayed fails.
    Without a lifetime only the staged create's commit is repeated (as before: its 409 is the evidence)."""
    from pyspark_catalog_ext.doctor.idempotency import OPERATIONS, REPLAYED, measure

    client, ns = ctx.client, ctx.namespace
    advertised = bool(client.idempotency_key_lifetime)
    if advertised:
        operations = measure(ctx)
        replayed = [op for op in OPERATIONS if operations[op] == REPLAYED]
        others = "; ".join(f"{op} {operations[op]}" for op in OPERATIONS if operations[op] != REPLAYED)
        evidence: dict[str, Any] = {"advertised": True, "operations": operations}
        if not replayed:
            return failed(f"idempotency-key-lifetime is advertised, but no operation is replayed: {others}", **evidence)
        if others:
            return passed(f"partial: replayed for {', '.join(replayed)}; {others}", **evidence)
        return passed(f"replayed for every operation probed ({', '.join(OPERATIONS)})", **evidence)
    try:
        staged = ctx.stage_table("s_idem")
    except CatalogError as exc:
        return unsupported(f"stage-create refused (HTTP {status_of(exc)})", status=status_of(exc))
    key = str(uuid7())
    updates = create_updates(staged["metadata"])
    first = client.commit_table_json((ns, "s_idem"), [{"type": "assert-create"}], updates, idempotency_key=key)
    evidence = {"advertised": False, "first_status": 200}
    try:
        second = client.commit_table_json((ns, "s_idem"), [{"type": "assert-create"}], updates, idempotency_key=key)
    except CatalogConflictError as exc:
        evidence["second_status"] = exc.status
        return unsupported(f"the same Idempotency-Key was executed again ({exc.status})", **evidence)
    evidence["second_status"] = 200
    same = second.get("metadata-location") == first.get("metadata-location")
    evidence["same_answer"] = same
    if not same:
        return failed("the second commit returned another metadata-location", **evidence)
    return passed("second commit with the same key returned the stored 2xx", **evidence)
