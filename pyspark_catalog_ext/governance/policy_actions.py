"""Policy -> procedure: the actions each maintenance policy asks of one table, with their reasons, and
the refusals of remove_orphan_files anywhere but the table's own location. The table of policy
types and procedures is planning.py's docstring.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from pyspark_catalog_ext.catalog.locations import dot_segments, tables_under
from pyspark_catalog_ext.catalog.reader import CatalogReader
from pyspark_catalog_ext.errors import CleanupRefused, ConfigError
from pyspark_catalog_ext.governance.maintenance_plan import Action, TablePlan, Timestamp, table_arg
from pyspark_catalog_ext.governance.policies import (
    DATA_COMPACTION,
    METADATA_COMPACTION,
    ORPHAN_FILE_REMOVAL,
    SNAPSHOT_EXPIRY,
    ApplicablePolicy,
    OrphanFileRemovalContent,
    parse_content,
)

__all__ = ["other_tables_under"]

DEFAULT_ORPHAN_AGE_DAYS = 3.0  # files younger than this may belong to a job still writing

# Iceberg 1.10 rewrite_data_files options (RewriteDataFiles + its file rewriters).
REWRITE_OPTIONS = frozenset({
    "target-file-size-bytes", "min-file-size-bytes", "max-file-size-bytes", "min-input-files", "rewrite-all",
    "max-file-group-size-bytes", "max-files-to-rewrite", "delete-file-threshold", "delete-ratio-threshold",
    "max-concurrent-file-group-rewrites", "partial-progress.enabled", "partial-progress.max-commits",
    "partial-progress.max-failed-commits", "use-starting-sequence-number", "rewrite-job-order",
    "remove-dangling-deletes", "output-spec-id", "shuffle-partitions-per-file", "compression-factor",
})
STRATEGIES = {"bin-pack": "binpack", "binpack": "binpack", "sort": "sort", "z-order": "sort", "zorder": "sort"}


# --------------------------------------------------------------------------- policies -> actions


def _norm(key: str) -> str:
    return key.strip().lower().replace("_", "-")


def _days_ago(days: float, now: datetime) -> str:
    return (now - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def actions_for(policy: ApplicablePolicy, table: TablePlan, now: datetime) -> list[Action]:
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
                args["older_than"] = Timestamp(_days_ago(days, now))
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
                            "older_than": Timestamp(_days_ago(max(days, 0), now)),
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


def refuse_shared_locations(client: CatalogReader, tp: TablePlan) -> None:
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

