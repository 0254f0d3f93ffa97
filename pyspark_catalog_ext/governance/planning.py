"""Maintenance planning: which Iceberg procedures each table's maintenance policies ask for, and why
(`maintenance` runs the plan and is the face users call).

Policy type -> procedure (Iceberg 1.10): data-compaction -> rewrite_data_files, metadata-compaction
-> rewrite_manifests, snapshot-expiry -> expire_snapshots, orphan-file-removal ->
remove_orphan_files, only inside the table's own location and where no other table keeps paths
(checked when planning and again right before the call, `other_tables_under`). An unchanged table
is skipped (`PlanState`). The rules are policy_actions.py; the plan's model and SQL, maintenance_plan.py.

Why: docs/maintenance.md, section 'Table maintenance from catalog policies'.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.catalog.reader import CatalogReader
from pyspark_catalog_ext.errors import (
    CatalogExtError,
    CatalogNotFoundError,
    ConfigError,
    PolicyApiUnavailableError,
)
from pyspark_catalog_ext.governance.maintenance_plan import Plan, TablePlan
from pyspark_catalog_ext.governance.policies import (
    MAINTENANCE_TYPES,
    FilePolicySource,
    PolarisPolicySource,
    PolicySource,
    effective_policies,
)
from pyspark_catalog_ext.governance.policy_actions import actions_for, refuse_shared_locations
from pyspark_catalog_ext.spark.shim_api import SHIM_CATALOG_IMPL

__all__ = ["PlanState", "default_state_file", "plan", "plan_in", "plan_with_catalog", "split_targets", "state_key"]

MAX_STATE_ENTRIES = 10_000  # the state file keeps the most recent tables only
MAX_NAMESPACE_DEPTH = 16


# --------------------------------------------------------------------------- state


class PlanState:
    """Policy versions + snapshot of each table after its last successful run (bounded JSON file)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        if path and path.exists():
            try:
                self.entries = json.loads(path.read_text()).get("tables", {})
            except (OSError, ValueError):
                self.entries = {}  # a damaged state only costs one extra run

    def unchanged(self, key: str, versions: Mapping[str, str], snapshot_id: int | None) -> bool:
        entry = self.entries.get(key)
        return entry is not None and bool(entry) and entry.get("versions") == dict(versions) and entry.get("snapshot_id") == snapshot_id

    def record(self, key: str, versions: Mapping[str, str], snapshot_id: int | None) -> None:
        self.entries[key] = {"versions": dict(versions), "snapshot_id": snapshot_id, "at": time.time()}
        if len(self.entries) > MAX_STATE_ENTRIES:
            newest = sorted(self.entries.items(), key=lambda kv: kv[1].get("at", 0))[-MAX_STATE_ENTRIES:]
            self.entries = dict(newest)

    def save(self) -> None:
        if not self.path:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"tables": self.entries}))
        os.replace(tmp, self.path)


def default_state_file() -> Path:
    from pyspark_catalog_ext.spark.jvm_deps.jars import cache_dir

    return cache_dir() / "maintenance" / "state.json"


# --------------------------------------------------------------------------- planning


def split_targets(targets: str | Sequence[str]) -> tuple[str, list[list[str]]]:
    names = [targets] if isinstance(targets, str) else list(targets)
    if not names:
        raise ConfigError("no target: pass a catalog (lake), a namespace (lake.db) or tables (lake.db.t)")
    parts = [n.split(".") for n in names]
    catalogs = {p[0] for p in parts}
    if len(catalogs) != 1 or any(not all(p) for p in parts):
        raise ConfigError(f"targets {', '.join(names)} must be names in one Spark catalog, such as lake.db.t")
    return parts[0][0], [p[1:] for p in parts]


def _walk(client: CatalogReader, parent: tuple[str, ...] | None = None, depth: int = 0) -> Iterable[tuple[str, ...]]:
    if depth > MAX_NAMESPACE_DEPTH:
        return
    for ns in client.namespaces(parent or ()):
        yield tuple(ns)
        yield from _walk(client, tuple(ns), depth + 1)


def _tables(client: CatalogReader, rest: list[list[str]]) -> list[tuple[tuple[str, ...], str]]:
    found: dict[tuple[tuple[str, ...], str], None] = {}
    for parts in rest:
        if not parts:  # the whole catalog
            for ns in _walk(client):
                found.update({(t[:-1], t[-1]): None for t in client.tables(ns)})
            continue
        if len(parts) >= 2 and client.has_table(parts):
            found[(tuple(parts[:-1]), parts[-1])] = None
        elif client.has_namespace(parts):
            for ns in [tuple(parts), *_walk(client, tuple(parts))]:
                found.update({(t[:-1], t[-1]): None for t in client.tables(ns)})
        else:
            raise CatalogNotFoundError(f"no table or namespace {'.'.join(parts)} in the catalog; check the name")
    return list(found)


def _plan_with_client(client: CatalogReader, catalog: str, targets: list[list[str]], source: PolicySource, source_name: str,
                      state: PlanState, force: bool, now: datetime) -> Plan:
    tables: list[TablePlan] = []
    for ns, name in _tables(client, targets):
        tp = TablePlan(table=".".join([catalog, *ns, name]), namespace=list(ns), name=name)
        tables.append(tp)
        try:
            metadata = client.load_table_json((*ns, name)).get("metadata", {})
            tp.location = metadata.get("location", "")
            snap = metadata.get("current-snapshot-id")
            tp.snapshot_id = None if snap in (None, -1) else int(snap)
            chosen = effective_policies(source.applicable(ns, name))
            tp.versions = {t: f"{p.namespace and '.'.join(p.namespace) + '.' or ''}{p.name}@v{p.version}"
                           for t, p in sorted(chosen.items())}
            for policy_type in MAINTENANCE_TYPES:
                if policy_type in chosen:
                    tp.actions += actions_for(chosen[policy_type], tp, now)
            refuse_shared_locations(client, tp)
        except PolicyApiUnavailableError:
            raise  # the same for every table: one clear error instead of one per table
        except CatalogExtError as exc:
            tp.error, tp.actions = str(exc), []
            continue
        if not force and tp.actions and state.unchanged(state_key(client, tp), tp.versions, tp.snapshot_id):
            tp.skip = "policy versions and current snapshot unchanged since the last successful run"
    return Plan(catalog=catalog, tables=tables, source=source_name, state_file=str(state.path) if state.path else None)


def state_key(client: CatalogReader, tp: TablePlan) -> str:
    return f"{client.safe_uri}|{client.warehouse or ''}|{'.'.join([*tp.namespace, tp.name])}"


def _source(client: CatalogReader, catalog: str, policy_file: str | Path | None,
            source: PolicySource | None) -> tuple[PolicySource, str]:
    if source is not None:
        return source, type(source).__name__
    if policy_file:
        return FilePolicySource(policy_file), f"file {policy_file}"
    if not client.shim:  # a Spark catalog without the shim has no session to GET through
        raise PolicyApiUnavailableError(
            f"Spark catalog {catalog!r} does not use catalog-impl={SHIM_CATALOG_IMPL}, so its Polaris policies "
            "cannot be read through Spark; pass a policy file (--policy-file / policy_file=) or configure the catalog "
            "with pyspark_catalog_ext.configure(...)")
    return PolarisPolicySource(client), f"{client.safe_uri} applicable-policies"


def plan(spark: Any, targets: str | Sequence[str], *, policy_file: str | Path | None = None,
         source: PolicySource | None = None, state_file: str | Path | None = None,
         force: bool = False, now: datetime | None = None) -> Plan:
    """What maintenance the policies ask for on `targets` (a catalog "lake", a namespace
    "lake.db", or table names "lake.db.t", all in one Spark catalog of `spark`).

    Policies come from the catalog's Polaris policy API unless `policy_file` (or a `source`) is
    given. Tables unchanged since their last successful run (per `state_file`, default in the
    cache dir) are marked skipped unless `force`.
    """
    from pyspark_catalog_ext.spark.catalog_reader import SparkCatalogReader

    catalog, rest = split_targets(targets)
    with SparkCatalogReader(spark, catalog) as client:  # Spark's own catalog session: no secret leaves the JVM
        return plan_in(client, catalog, rest, policy_file=policy_file, source=source, state_file=state_file,
                        force=force, now=now)


def plan_with_catalog(client: CatalogReader, targets: str | Sequence[str], *, policy_file: str | Path | None = None,
                      source: PolicySource | None = None, state_file: str | Path | None = None, force: bool = False,
                      now: datetime | None = None) -> Plan:
    """`plan` through a catalog client of our own instead of a Spark session (no Spark needed: the
    CLI's `--dry-run`). `targets` name the client's catalog as `plan`'s name the Spark catalog."""
    catalog, rest = split_targets(targets)
    return plan_in(client, catalog, rest, policy_file=policy_file, source=source, state_file=state_file,
                    force=force, now=now)


def plan_in(client: CatalogReader, catalog: str, rest: list[list[str]], *, policy_file: str | Path | None = None,
             source: PolicySource | None = None, state_file: str | Path | None = None, force: bool = False,
             now: datetime | None = None) -> Plan:
    src, name = _source(client, catalog, policy_file, source)
    state = PlanState(Path(state_file) if state_file else default_state_file())
    return _plan_with_client(client, catalog, rest, src, name, state, force, now or datetime.now(timezone.utc).replace(tzinfo=None))
