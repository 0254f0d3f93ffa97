"""Maintenance planning: which Iceberg procedures each table's maintenance policies ask for, and why
(`maintenance` runs the plan and is the face users call).

Policy type -> procedure (Iceberg 1.10):

- system.data-compaction -> rewrite_data_files (strategy, sort_order, where, options)
- system.metadata-compaction -> rewrite_manifests (spec_id, use_caching)
- system.snapshot-expiry -> expire_snapshots (older_than, retain_last); max_ref_age_days is the
  table property history.expire.max-ref-age-ms, which expire_snapshots honours
- system.orphan-file-removal -> remove_orphan_files, only inside the table's own location, with a
  positive age (default 3 days) and prefix listing; anything doubtful is refused with the reason:
  a location with `.`/`..` segments, or one where another table keeps paths (a nested table:
  Iceberg would delete its files, which only its own metadata references). Checked when planning
  and again right before the call (`other_tables_under`).

A table whose policy versions and current snapshot are the same as after its last successful run
is skipped (`PlanState`: a small bounded JSON file).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pyspark_catalog_ext.catalog.locations import dot_segments, tables_under
from pyspark_catalog_ext.catalog.reader import CatalogReader
from pyspark_catalog_ext.errors import (
    CatalogExtError,
    CatalogNotFoundError,
    CleanupRefused,
    ConfigError,
    PolicyApiUnavailableError,
)
from pyspark_catalog_ext.governance.policies import (
    DATA_COMPACTION,
    MAINTENANCE_TYPES,
    METADATA_COMPACTION,
    ORPHAN_FILE_REMOVAL,
    SNAPSHOT_EXPIRY,
    ApplicablePolicy,
    FilePolicySource,
    OrphanFileRemovalContent,
    PolarisPolicySource,
    PolicySource,
    effective_policies,
    parse_content,
)
from pyspark_catalog_ext.spark.shim_api import SHIM_CATALOG_IMPL

__all__ = ["Action", "Plan", "PlanState", "TablePlan", "default_state_file", "other_tables_under", "plan", "plan_in", "plan_with_catalog",
           "split_targets", "sql_value", "state_key", "table_arg"]

DEFAULT_ORPHAN_AGE_DAYS = 3.0  # files younger than this may belong to a job still writing
MAX_STATE_ENTRIES = 10_000  # the state file keeps the most recent tables only
MAX_NAMESPACE_DEPTH = 16

# Iceberg 1.10 rewrite_data_files options (RewriteDataFiles + its file rewriters).
REWRITE_OPTIONS = frozenset({
    "target-file-size-bytes", "min-file-size-bytes", "max-file-size-bytes", "min-input-files", "rewrite-all",
    "max-file-group-size-bytes", "max-files-to-rewrite", "delete-file-threshold", "delete-ratio-threshold",
    "max-concurrent-file-group-rewrites", "partial-progress.enabled", "partial-progress.max-commits",
    "partial-progress.max-failed-commits", "use-starting-sequence-number", "rewrite-job-order",
    "remove-dangling-deletes", "output-spec-id", "shuffle-partitions-per-file", "compression-factor",
})
STRATEGIES = {"bin-pack": "binpack", "binpack": "binpack", "sort": "sort", "z-order": "sort", "zorder": "sort"}


# --------------------------------------------------------------------------- plan model


@dataclass
class Action:
    """One procedure call decided by one policy."""

    policy_type: str
    policy: str  # name@vN
    origin: str  # where the policy applies from
    procedure: str  # rewrite_data_files, ..., or "" when nothing runs
    args: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    unknown_keys: list[str] = field(default_factory=list)
    refused: str | None = None  # why a (deleting) action will not run
    table_properties: dict[str, str] = field(default_factory=dict)  # set before the call

    @property
    def runnable(self) -> bool:
        return bool(self.procedure) and self.refused is None


@dataclass
class TablePlan:
    table: str  # catalog.ns.table
    namespace: list[str]
    name: str
    location: str = ""
    snapshot_id: int | None = None
    actions: list[Action] = field(default_factory=list)
    skip: str | None = None  # why the whole table is skipped
    error: str | None = None  # the policies could not be read or validated
    versions: dict[str, str] = field(default_factory=dict)


@dataclass
class Plan:
    catalog: str
    tables: list[TablePlan]
    source: str
    state_file: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "policy_source": self.source, "tables": [asdict(t) for t in self.tables]}

    def render(self) -> str:
        """The dry-run text: table, policy and origin, action with parameters, why."""
        lines = [f"maintenance plan for catalog {self.catalog} (policies from {self.source})"]
        for t in self.tables:
            head = f"{t.table}"
            if t.error:
                lines.append(f"{head}: ERROR {t.error}")
                continue
            if t.skip:
                lines.append(f"{head}: skip ({t.skip})")
                continue
            if not t.actions:
                lines.append(f"{head}: nothing to do (no maintenance policy applies)")
                continue
            lines.append(f"{head}:")
            for a in t.actions:
                lines.append(f"  {a.policy_type} {a.policy} [{a.origin}]")
                if a.procedure:
                    args = ", ".join(f"{k} => {sql_value(v)}" for k, v in a.args.items())
                    props = "".join(f" after setting {k}={v}" for k, v in a.table_properties.items())
                    state = f"REFUSED: {a.refused}" if a.refused else "run"
                    lines.append(f"    {state}: CALL {self.catalog}.system.{a.procedure}({args}){props}")
                lines.append(f"    why: {a.reason}")
                if a.unknown_keys:
                    lines.append(f"    ignored unknown config keys: {', '.join(a.unknown_keys)}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- policies -> actions


def _norm(key: str) -> str:
    return key.strip().lower().replace("_", "-")


def _days_ago(days: float, now: datetime) -> str:
    return (now - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _actions_for(policy: ApplicablePolicy, table: TablePlan, now: datetime) -> list[Action]:
    content = parse_content(policy)
    base: dict[str, Any] = dict(policy_type=policy.policy_type, policy=f"{policy.name}@v{policy.version}", origin=policy.origin)
    ident = table_arg(table.namespace, table.name)
    if not content.enable:
        return [Action(procedure="", reason="the policy is disabled (enable=false)", **base)]
    config = dict(content.config)
    unknown: list[str] = []
    if policy.policy_type == DATA_COMPACTION:
        args: dict[str, Any] = {"table": ident}
        options: dict[str, str] = {}
        why = ["compact small data files"]
        for key, value in config.items():
            k = _norm(key)
            if k == "compaction-strategy" or k == "strategy":
                strategy = STRATEGIES.get(str(value).lower())
                if strategy is None:
                    raise ConfigError(f"policy {policy.name}: compaction_strategy {value!r} is not one of {', '.join(STRATEGIES)}")
                args["strategy"] = strategy
            elif k in ("sort-order", "where"):
                args[k.replace("-", "_")] = str(value)
            elif k in REWRITE_OPTIONS:
                options[k] = _str(value)
            else:
                unknown.append(key)
        if "target-file-size-bytes" in options:
            why.append(f"towards {options['target-file-size-bytes']}-byte files")
        if args.get("strategy") == "sort" and "sort_order" not in args:
            why.append("sorted by the table's sort order")
        if options:
            args["options"] = options
        return [Action(procedure="rewrite_data_files", args=args, reason=", ".join(why), unknown_keys=unknown, **base)]
    if policy.policy_type == METADATA_COMPACTION:
        args = {"table": ident}
        for key, value in config.items():
            k = _norm(key)
            if k == "spec-id":
                args["spec_id"] = int(value)
            elif k == "use-caching":
                args["use_caching"] = _bool(value, key, policy)
            else:
                unknown.append(key)
        return [Action(procedure="rewrite_manifests", args=args, reason="rewrite manifests for faster planning",
                       unknown_keys=unknown, **base)]
    if policy.policy_type == SNAPSHOT_EXPIRY:
        args = {"table": ident}
        props: dict[str, str] = {}
        why = []
        for key, value in config.items():
            k = _norm(key)
            if k == "max-snapshot-age-days":
                days = _positive(value, key, policy)
                args["older_than"] = _Timestamp(_days_ago(days, now))
                why.append(f"snapshots older than {days:g} days")
            elif k == "min-snapshot-to-keep":
                args["retain_last"] = int(value)
                if args["retain_last"] < 1:
                    raise ConfigError(f"policy {policy.name}: min_snapshot_to_keep must be >= 1")
                why.append(f"keeping at least {args['retain_last']}")
            elif k == "max-ref-age-days":
                props["history.expire.max-ref-age-ms"] = str(int(_positive(value, key, policy) * 86_400_000))
                why.append(f"branches/tags older than {value} days")
            elif k == "max-concurrent-deletes":
                args["max_concurrent_deletes"] = int(value)
            elif k == "clean-expired-metadata":
                args["clean_expired_metadata"] = _bool(value, key, policy)
            else:
                unknown.append(key)
        if "older_than" not in args:
            why.append("snapshots older than the table's history.expire.max-snapshot-age-ms (Iceberg default 5 days)")
        return [Action(procedure="expire_snapshots", args=args, reason="expire " + ", ".join(why),
                       unknown_keys=unknown, table_properties=props, **base)]
    if policy.policy_type == ORPHAN_FILE_REMOVAL:
        assert isinstance(content, OrphanFileRemovalContent)
        return _orphan_actions(content, table, now, base)
    return []


def _orphan_actions(content: OrphanFileRemovalContent, table: TablePlan, now: datetime, base: dict) -> list[Action]:
    """remove_orphan_files deletes what no snapshot references: it runs only where we are sure."""
    unknown: list[str] = []
    refused: str | None = None
    days = content.max_orphan_file_age_in_days
    if days is None:
        days = DEFAULT_ORPHAN_AGE_DAYS
    elif days <= 0:
        refused = f"max_orphan_file_age_in_days={days:g} is not positive: files of a running job could be deleted"
    args: dict[str, Any] = {"table": table_arg(table.namespace, table.name),
                            "older_than": _Timestamp(_days_ago(max(days, 0), now)),
                            "prefix_listing": True}  # S3FileIO lists by prefix; Hadoop has no s3:// here
    for key, value in content.config.items():
        k = _norm(key)
        if k == "prefix-mismatch-mode":
            mode = str(value).upper()
            if mode == "DELETE":
                refused = refused or "prefix_mismatch_mode=DELETE would delete files whose scheme/authority differ from the metadata's"
            elif mode not in ("ERROR", "IGNORE"):
                raise ConfigError(f"prefix_mismatch_mode {value!r} must be ERROR or IGNORE")
            args["prefix_mismatch_mode"] = mode
        elif k == "max-concurrent-deletes":
            args["max_concurrent_deletes"] = int(value)
        else:
            unknown.append(key)
    locations = content.locations or [table.location]
    actions = []
    for location in locations:
        why = f"delete files older than {days:g} days under {location} that no snapshot references"
        reason = refused or _unsafe_location(location, table.location)
        call = dict(args)
        if location != table.location:
            call["location"] = location
        actions.append(Action(procedure="remove_orphan_files", args=call, reason=why, unknown_keys=unknown,
                              refused=reason, **base))
    return actions


def _unsafe_location(location: str, table_location: str) -> str | None:
    """Why deleting under `location` is unsafe, or None: only the table's own location qualifies."""
    if not table_location:
        return "the table's location is unknown"
    dots = dot_segments(location)
    if dots:
        return dots
    loc, own = location.rstrip("/"), table_location.rstrip("/")
    parts = urlsplit(loc)
    if not parts.scheme or not parts.netloc:
        return f"{location!r} is not a full URI such as s3://bucket/path"
    if not parts.path.strip("/"):
        return f"{location} is a bucket root: other tables' files could be deleted"
    if loc != own and not loc.startswith(own + "/"):
        return f"{location} is outside the table's location {table_location}: other tables' files could be deleted"
    return None


def other_tables_under(client: CatalogReader, tp: TablePlan, location: str) -> str | None:
    """Why remove_orphan_files under `location` would delete another table's files, or None.
    The same "whose files are here" as `staged cleanup` (catalog.locations.tables_under)."""
    try:
        others = sorted(set(tables_under(client, location)) - {".".join([*tp.namespace, tp.name])})
    except CleanupRefused as exc:
        return str(exc).split(": ", 1)[-1]
    if others:
        return (f"table(s) {', '.join(others[:3])}{' ...' if len(others) > 3 else ''} keep files under {location}: "
                "remove_orphan_files would delete them; move the nested table(s) or narrow the policy's locations")
    return None


def _refuse_shared_locations(client: CatalogReader, tp: TablePlan) -> None:
    """Refuses each remove_orphan_files action whose location holds another table's files."""
    for action in tp.actions:
        if action.procedure == "remove_orphan_files" and action.refused is None:
            action.refused = other_tables_under(client, tp, action.args.get("location", tp.location))


def _str(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _bool(value: Any, key: str, policy: ApplicablePolicy) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise ConfigError(f"policy {policy.name}: {key} must be true or false, got {value!r}")


def _positive(value: Any, key: str, policy: ApplicablePolicy) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1
    if isinstance(value, bool) or number <= 0:
        raise ConfigError(f"policy {policy.name}: {key} must be a positive number of days, got {value!r}")
    return number


class _Timestamp(str):
    """A timestamp argument (rendered as a SQL TIMESTAMP literal)."""


def _quote(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part) else "`" + part.replace("`", "``") + "`"


def table_arg(namespace: Sequence[str], name: str) -> str:
    return ".".join(_quote(p) for p in [*namespace, name])


def sql_value(value: Any) -> str:
    if isinstance(value, _Timestamp):
        return f"TIMESTAMP '{value}'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, Mapping):
        return "map(" + ", ".join(f"{sql_value(str(k))}, {sql_value(str(v))}" for k, v in value.items()) + ")"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


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
    from pyspark_catalog_ext.spark.jars import cache_dir

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
                    tp.actions += _actions_for(chosen[policy_type], tp, now)
            _refuse_shared_locations(client, tp)
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
