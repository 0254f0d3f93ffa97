"""Policy-driven table maintenance: read the catalog's maintenance policies for each table and run
the matching Iceberg Spark procedures: `plan = pce.maintenance.plan(spark, "lake.db")`,
`print(plan.render())`, `report = pce.maintenance.run(spark, plan)`.

`planning` decides what each policy type runs and what is refused; this module runs the plan. An
unchanged table (policy versions, current snapshot) is skipped; one failing table does not stop the
others. Procedures run in the session's catalog (its refreshing credentials apply), and inside Spark
everything is read through that catalog (`spark.catalog_reader`); only `--dry-run` opens a
`CatalogClient` from the command line's own options.

Why: docs/maintenance.md, section 'Table maintenance from catalog policies'.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pyspark_catalog_ext import events
from pyspark_catalog_ext.catalog.reader import CatalogReader
from pyspark_catalog_ext.errors import redact
from pyspark_catalog_ext.governance.maintenance_plan import Action, Plan, TablePlan, sql_value, table_arg
from pyspark_catalog_ext.governance.planning import (
    PlanState,
    default_state_file,
    plan,
    plan_in,
    plan_with_catalog,
    split_targets,
    state_key,
)
from pyspark_catalog_ext.governance.policy_actions import other_tables_under
from pyspark_catalog_ext.progress import Progress

__all__ = ["Action", "TablePlan", "Plan", "TableResult", "Report", "plan", "plan_with_catalog", "run", "split_targets", "default_state_file"]


@dataclass
class TableResult:
    table: str
    status: str  # ok, failed, skipped, nothing
    files_rewritten: int = 0
    files_added: int = 0
    bytes_rewritten: int = 0
    manifests_rewritten: int = 0
    snapshots_expired: int = 0
    orphans_removed: int = 0
    duration_s: float = 0.0
    actions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    error_class: str | None = None


@dataclass
class Report:
    catalog: str
    tables: list[TableResult]

    @property
    def failed(self) -> list[TableResult]:
        return [t for t in self.tables if t.status == "failed"]

    def as_dict(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "failed": len(self.failed), "tables": [asdict(t) for t in self.tables]}

    def render(self) -> str:
        """The summary table."""
        head = ("table", "status", "files rewritten", "bytes", "snapshots expired", "orphans removed", "duration")
        rows = [head] + [(t.table, t.status, str(t.files_rewritten), str(t.bytes_rewritten), str(t.snapshots_expired),
                          str(t.orphans_removed), f"{t.duration_s:.1f}s") for t in self.tables]
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        fmt = lambda r: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))  # noqa: E731
        lines = [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows[1:]]
        ok = sum(t.status == "ok" for t in self.tables)
        skipped = sum(t.status == "skipped" for t in self.tables)
        lines.append(f"{len(self.tables)} table(s): {ok} maintained, {skipped} skipped, {len(self.failed)} failed")
        for t in self.failed:
            lines.append(f"failed: {t.table}: {t.error}")
        return "\n".join(lines)


def _error_of(exc: BaseException) -> tuple[str, str]:
    """(error class, one-line message) of a Python or Java exception, secrets removed."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        cls, msg = java.getClass().getName(), str(java.getMessage() or "")
        cause = java.getCause()
        while cause is not None and not msg:
            msg = str(cause.getMessage() or "")
            cause = cause.getCause()
    else:
        cls, msg = type(exc).__name__, str(exc)
    return cls, redact(" ".join(msg.split()))[:300]


def _snapshots(client: CatalogReader, ns: Sequence[str], name: str) -> tuple[set[int], int | None]:
    """(ids of the table's snapshots, current snapshot id) as the catalog sees them now."""
    metadata = client.load_table_json((*ns, name)).get("metadata", {})
    snap = metadata.get("current-snapshot-id")
    ids = {int(s["snapshot-id"]) for s in metadata.get("snapshots") or []}
    return ids, (None if snap in (None, -1) else int(snap))


def _run_action(spark: Any, catalog: str, tp: TablePlan, action: Action, result: TableResult) -> dict[str, Any]:
    for key, value in action.table_properties.items():
        spark.sql(f"ALTER TABLE {catalog}.{table_arg(tp.namespace, tp.name)} SET TBLPROPERTIES "
                  f"({sql_value(key)} = {sql_value(value)})")
    args = ", ".join(f"{k} => {sql_value(v)}" for k, v in action.args.items())
    rows = spark.sql(f"CALL {catalog}.system.{action.procedure}({args})").collect()
    out: dict[str, Any] = {}
    if action.procedure == "remove_orphan_files":
        out["orphans_removed"] = len(rows)
        result.orphans_removed += len(rows)
    elif rows:
        out = {k: v for k, v in rows[0].asDict().items() if isinstance(v, (int, float))}
        result.files_rewritten += int(out.get("rewritten_data_files_count", 0))
        result.files_added += int(out.get("added_data_files_count", 0))
        result.bytes_rewritten += int(out.get("rewritten_bytes_count", 0))
        result.manifests_rewritten += int(out.get("rewritten_manifests_count", 0))
    return out


def _advancing(items: Sequence[Any], advance: Callable[[int], None]) -> Iterator[Any]:
    """The items, advancing the bar once each item's loop body is done (whichever way it ended)."""
    for item in items:
        yield item
        advance(1)


def run(spark: Any, what: Plan | str | Sequence[str], *, progress: Callable[[str], None] | None = None,
        state_file: str | Path | None = None, bar: Progress | None = None, **plan_kwargs: Any) -> Report:
    """Run a plan (or plan `what` first, with `plan_kwargs`). Returns a Report; never raises for a
    failing table: see `report.failed`. `progress` gets one line per table step (default stderr);
    `bar` (the CLI's, on a terminal) counts the tables done."""
    from pyspark_catalog_ext.spark.catalog_reader import SparkCatalogReader

    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    catalog = what.catalog if isinstance(what, Plan) else split_targets(what)[0]
    with SparkCatalogReader(spark, catalog) as client:  # the Spark catalog's session, for the plan and the run
        the_plan = what if isinstance(what, Plan) else plan_in(client, catalog, split_targets(what)[1],
                                                                state_file=state_file, **plan_kwargs)
        return _run_plan(spark, client, the_plan, say, state_file, bar)


def _run_plan(spark: Any, client: CatalogReader, the_plan: Plan, say: Callable[[str], None],
              state_file: str | Path | None, bar: Progress | None) -> Report:
    if client.shim:
        from pyspark_catalog_ext.spark.credentials import attach

        attach(spark)  # maintenance outlives credential lifetimes like any job (idempotent)
    chosen_state_file = state_file or the_plan.state_file
    state = PlanState(Path(chosen_state_file) if chosen_state_file else None)
    results: list[TableResult] = []
    table_done = (bar or Progress.silent()).task("maintaining tables", total=len(the_plan.tables))
    for i, tp in enumerate(_advancing(the_plan.tables, table_done), 1):
        tag = f"[{i}/{len(the_plan.tables)}] {tp.table}"
        result = TableResult(table=tp.table, status="ok")
        results.append(result)
        if tp.error:
            result.status, result.error, result.error_class = "failed", tp.error, "ConfigError"
            say(f"{tag}: failed: {tp.error}")
            continue
        if tp.skip or not any(a.runnable for a in tp.actions):
            result.status = "skipped" if tp.skip else "nothing"
            refusals = "; ".join(f"{a.procedure} refused: {a.refused}" for a in tp.actions if a.refused)
            say(f"{tag}: {tp.skip or refusals or 'nothing to run'}")
            continue
        started = time.monotonic()
        try:
            before, _ = _snapshots(client, tp.namespace, tp.name)
            for action in tp.actions:
                if action.procedure == "remove_orphan_files" and action.refused is None:
                    # again now: a table may have been created under the location since the plan
                    action.refused = other_tables_under(client, tp, action.args.get("location", tp.location))
                if not action.runnable:
                    if action.refused:
                        say(f"{tag}: {action.procedure} refused: {action.refused}")
                    continue
                say(f"{tag}: {action.procedure} ({action.policy}) ...")
                t0 = time.monotonic()
                event = {"table": tp.table, "action": action.procedure, "policy": action.policy,
                         "policy_type": action.policy_type}
                events.emit("maintenance.action.started", **event)
                try:
                    counts = _run_action(spark, the_plan.catalog, tp, action, result)
                except Exception as exc:
                    cls, _ = _error_of(exc)
                    events.emit("maintenance.action.finished", **event, outcome="failed", error_class=cls,
                                duration_s=round(time.monotonic() - t0, 3))
                    raise
                _, snap = _snapshots(client, tp.namespace, tp.name)
                events.emit("maintenance.action.finished", **event, outcome="ok", snapshot_id=snap,
                            duration_s=round(time.monotonic() - t0, 3), result=counts)
                result.actions.append({"procedure": action.procedure, "policy": action.policy,
                                       "seconds": round(time.monotonic() - t0, 3), **counts})
                say(f"{tag}: {action.procedure} done in {time.monotonic() - t0:.1f}s {counts}")
            after, snapshot = _snapshots(client, tp.namespace, tp.name)
            result.snapshots_expired = len(before - after)  # existed before the run, gone now
            state.record(state_key(client, tp), tp.versions, snapshot)
        except Exception as exc:  # one table's failure never stops the others
            result.status = "failed"
            result.error_class, result.error = _error_of(exc)
            say(f"{tag}: failed: {result.error_class}: {result.error}")
        finally:
            result.duration_s = time.monotonic() - started
    state.save()
    return Report(catalog=the_plan.catalog, tables=results)
