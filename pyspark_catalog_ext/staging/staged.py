"""Staged tables: build a table in several Spark writes, publish it atomically or not at all.

`with stage_create(spark, "lake.db.events", df, partition_by=["days(ts)"]) as staged:
staged.write(df); staged.write(more)` commits in ONE catalog commit (assert-create) at the end of
the block; on an exception it aborts, deleting exactly the files the writes produced. The JVM shim
(`StagedTables`, through `spark.shim_api.ShimJvm.stage`) opens the Iceberg create/replace
transaction through the Spark catalog's own Iceberg catalog, so the commit is guarded
(`CommitGuard`) and the credentials refresh; files of a driver that died before commit or abort are
removed by `pyspark-catalog-ext staged cleanup` (`staging.cleanup`).

Why: docs/staging.md, section 'Staged tables and cleanup'.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark_catalog_ext import events
from pyspark_catalog_ext.errors import (
    CatalogConflictError,
    CatalogError,
    CatalogExtError,
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    StaleTableError,
    redact,
)
from pyspark_catalog_ext.spark.java_errors import java_chain, java_exception_of, translate
from pyspark_catalog_ext.spark.shim_api import JvmStagedTable, ShimJvm, StagedWrite

__all__ = [
    "StagedTable",
    "WriteResult",
    "CommitResult",
    "stage_create",
    "stage_replace",
    "stage_table",
]

log = logging.getLogger(__name__)

#: One `StagedTable.write`: the snapshot it added inside the transaction (the boundary's own answer type).
WriteResult = StagedWrite


@dataclass(frozen=True)
class CommitResult:
    """A published staged table."""

    table: str
    uuid: str
    location: str
    snapshot_ids: tuple[int, ...]


# --------------------------------------------------------------------------- parsing helpers

_TRANSFORM = re.compile(r"^\s*(?P<fn>[A-Za-z_]+)\s*\(\s*(?P<args>[^)]*)\)\s*$")
_TRANSFORM_NAMES = {
    "identity": "identity", "year": "year", "years": "year", "month": "month", "months": "month",
    "day": "day", "days": "day", "date": "day", "hour": "hour", "hours": "hour", "date_hour": "hour",
    "bucket": "bucket", "truncate": "truncate",
}


def _parse_term(text: str, what: str) -> dict[str, Any]:
    """`col`, `days(ts)`, `bucket(16, id)` / `bucket(id, 16)`, `truncate(4, s)` -> a JSON field."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"invalid {what} {text!r}: use a column name or a transform like days(ts), bucket(16, id)")
    m = _TRANSFORM.match(text)
    if not m:
        column = text.strip().strip("`")
        if not re.fullmatch(r"[^\s(),]+", column):
            raise ConfigError(f"invalid {what} {text!r}: use a column name or a transform like days(ts), bucket(16, id)")
        return {"transform": "identity", "column": column}
    fn = _TRANSFORM_NAMES.get(m["fn"].lower())
    args = [a.strip().strip("`") for a in m["args"].split(",") if a.strip()]
    if fn is None:
        raise ConfigError(f"unknown {what} transform {m['fn']!r}: use identity, years, months, days, hours, "
                          "bucket(N, col) or truncate(W, col)")
    if fn in ("bucket", "truncate"):
        nums = [a for a in args if a.isdigit()]
        cols = [a for a in args if not a.isdigit()]
        if len(args) != 2 or len(nums) != 1 or len(cols) != 1 or int(nums[0]) <= 0:
            raise ConfigError(f"invalid {what} {text!r}: {fn} needs a positive number and a column, e.g. {fn}(16, id)")
        return {"transform": fn, "column": cols[0], "arg": int(nums[0])}
    if len(args) != 1:
        raise ConfigError(f"invalid {what} {text!r}: {fn} takes one column")
    return {"transform": fn, "column": args[0]}


def _parse_sort(text: str) -> dict[str, Any]:
    """`col`, `col DESC`, `days(ts) ASC NULLS LAST`."""
    if not isinstance(text, str):
        raise ConfigError(f"invalid sort field {text!r}: use 'col [ASC|DESC] [NULLS FIRST|LAST]'")
    m = re.match(r"^(?P<term>.*?)(?:\s+(?P<dir>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?\s*$", text.strip(), re.I)
    if not m or not m["term"]:
        raise ConfigError(f"invalid sort field {text!r}: use 'col [ASC|DESC] [NULLS FIRST|LAST]'")
    field_ = _parse_term(m["term"], "sort field")
    direction = (m["dir"] or "asc").lower()
    field_["direction"] = direction
    field_["nulls"] = (m["nulls"] or ("last" if direction == "desc" else "first")).lower()
    return field_


def _split_name(spark: Any, table: str) -> tuple[str, list[str], str]:
    """`catalog.ns[.ns2].table` (or `ns.table` in the current catalog) -> parts."""
    parts = [p.strip("`") for p in (table or "").split(".")] if isinstance(table, str) else []
    if len(parts) < 2 or any(not p for p in parts):
        raise ConfigError(f"invalid table name {table!r}: use catalog.namespace.table, e.g. lake.db.events")
    catalogs = _spark_catalog_names(spark)
    if len(parts) >= 3 and parts[0] in catalogs:
        return parts[0], parts[1:-1], parts[-1]
    current = spark.catalog.currentCatalog()
    return current, parts[:-1], parts[-1]


def _spark_catalog_names(spark: Any) -> set[str]:
    names = set()
    for key, _ in spark.sparkContext.getConf().getAll():
        if key.startswith("spark.sql.catalog.") and key.count(".") == 3:
            names.add(key.split(".")[3])
    try:
        for key in ShimJvm(spark).runtime_conf():
            if key.startswith("spark.sql.catalog.") and key.count(".") == 3:
                names.add(key.split(".")[3])
    except Exception:  # noqa: BLE001 - runtime conf is a best effort addition
        pass
    return names


def _java_schema(spark: Any, schema: Any) -> Any:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    if isinstance(schema, DataFrame | StructType):
        return ShimJvm(spark).java_schema(schema)
    if isinstance(schema, str):
        try:
            return ShimJvm(spark).java_schema(schema)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"invalid schema DDL {schema!r}: {_java_message(exc)}") from None
    raise ConfigError("schema must be a DataFrame, a pyspark StructType or a DDL string like 'id BIGINT, v STRING'")


# --------------------------------------------------------------------------- JVM errors


def _java_chain(exc: BaseException) -> list[tuple[str, str]]:
    """(class name, message) of the Java exception behind `exc` (a Py4JJavaError, or PySpark's
    conversion of one) and its causes."""
    try:
        return java_chain(java_exception_of(exc))
    except Exception:  # noqa: BLE001 - the JVM may be gone; then the original error stands
        return []


def _java_message(exc: BaseException) -> str:
    chain = _java_chain(exc)
    text = chain[0][1] if chain else str(exc)
    return redact(" ".join(text.split()))[:400]


def _translate(exc: BaseException, table: str, action: str) -> BaseException:
    """A one-line package error for a Java failure (java_errors' table); the original if it is not a known kind."""
    return translate(java_exception_of(exc), subject=f"{action} {table}") or exc


# --------------------------------------------------------------------------- the staged table


class StagedTable:
    """A table being built in a create or replace transaction. Nothing is visible until `commit()`.

    Use it as a context manager to commit on success and abort on an exception. A failed commit
    is never aborted (its files may be referenced if the commit landed after all); `staged
    cleanup` finds files no committed table references.
    """

    def __init__(self, spark: Any, name: str, java_staged: JvmStagedTable, mode: str,
                 expected_uuid: str | None = None) -> None:
        self._spark = spark
        self.name = name
        self.mode = mode
        self._j = java_staged
        info = java_staged.describe()
        self.uuid: str = info.uuid
        self.location: str = info.location
        self.expected_uuid = expected_uuid

    def __repr__(self) -> str:
        return f"StagedTable({self.name!r}, mode={self.mode!r}, state={self.state!r}, uuid={self.uuid!r})"

    # ---- state
    def describe(self) -> dict[str, Any]:
        """table, mode, uuid, location, state and the snapshot ids written so far."""
        info = self._j.describe()
        return {"table": info.table, "mode": info.mode, "uuid": info.uuid, "location": info.location,
                "state": info.state, "snapshot_ids": list(info.snapshot_ids)}

    @property
    def state(self) -> str:
        """staged, committed, aborted, rejected (commit refused: nothing published) or unknown
        (commit answer lost and undecidable: files kept)."""
        return self._j.describe().state

    @property
    def snapshot_ids(self) -> list[int]:
        return list(self._j.describe().snapshot_ids)

    def written_files(self) -> list[str]:
        """Every file the writes produced so far (data files, manifests, manifest lists)."""
        return self._j.written_files()

    # ---- actions
    def write(self, df: Any) -> WriteResult:
        """Append `df` (columns matched by name) with Spark's Iceberg writer; one snapshot per call."""
        try:
            out = self._j.write(df)
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, "writing to staged table") from None
        return out

    def commit(self) -> CommitResult:
        """Publish every write in one catalog commit (`assert-create`, or `assert-table-uuid` for a replace)."""
        started = time.monotonic()
        events.emit("commit.started", table=self.name, mode=self.mode, uuid=self.uuid)
        try:
            out = self._j.commit()
        except Exception as exc:  # noqa: BLE001
            err = self._error(exc, "committing staged table")
            events.emit("commit.finished", table=self.name, mode=self.mode, uuid=self.uuid,
                        outcome=_commit_outcome(err), error_class=type(err).__name__,
                        duration_s=round(time.monotonic() - started, 3))
            if isinstance(err, CommitFailedError | CatalogConflictError):
                # Known not to have landed: nothing references the written files any more.
                try:
                    self.abort()
                except Exception:  # noqa: BLE001
                    log.warning("staged table %s: cleanup after a rejected commit failed", self.name, exc_info=True)
            raise err from None
        result = CommitResult(self.name, out.uuid, out.location, out.committed_snapshot_ids)
        events.emit("commit.finished", table=self.name, mode=self.mode, uuid=result.uuid, outcome="committed",
                    location=result.location, snapshot_ids=list(result.snapshot_ids),
                    duration_s=round(time.monotonic() - started, 3))
        return result

    def abort(self) -> int:
        """Discard the transaction and delete the files it wrote. Returns how many were deleted."""
        try:
            out = self._j.abort()
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, "aborting staged table") from None
        if out.not_deleted:
            log.warning("staged table %s: %d file(s) could not be deleted; run `pyspark-catalog-ext staged "
                        "cleanup --location %s`", self.name, len(out.not_deleted), self.location)
        return out.deleted

    def __enter__(self) -> StagedTable:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
            return
        try:
            self.abort()
        except Exception:  # noqa: BLE001 - the original exception matters more
            log.warning("staged table %s: abort after an error failed", self.name, exc_info=True)

    def _error(self, exc: BaseException, action: str) -> BaseException:
        err = _translate(exc, self.name, action)
        if err is exc and not isinstance(exc, CatalogExtError):
            return CatalogError(f"{action} {self.name} failed: {_java_message(exc)}")
        return err


def _commit_outcome(err: BaseException) -> str:
    """rejected (nothing published), unknown (undecidable, files kept) or failed."""
    if isinstance(err, CommitStateUnknownError):
        return "unknown"
    return "rejected" if isinstance(err, CommitFailedError | CatalogConflictError) else "failed"


def stage_table(
    spark: Any,
    table: str,
    schema: Any,
    *,
    mode: str = "create",
    partition_by: Sequence[str] = (),
    sort_by: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    location: str | None = None,
    expected_uuid: str | None = None,
) -> StagedTable:
    """Stage `table` ("catalog.ns.table"). `mode`: create, replace or create_or_replace.

    Args:
        schema: a DataFrame (its schema), a pyspark StructType, or a DDL string.
        partition_by: e.g. ["days(ts)", "bucket(16, id)", "region"].
        sort_by: e.g. ["id", "ts DESC NULLS LAST"].
        properties: table properties.
        location: table location (default: the catalog chooses).
        expected_uuid: replace only: the UUID of the table you mean to replace; a different
            table under that name (dropped and recreated since) raises `StaleTableError`, at
            staging and again at commit (`assert-table-uuid`).
    """
    if mode not in ("create", "replace", "create_or_replace"):
        raise ConfigError(f"unknown staging mode {mode!r}: use create, replace or create_or_replace")
    if expected_uuid is not None and mode == "create":
        raise ConfigError("expected_uuid only applies to a replace")
    catalog, namespace, name = _split_name(spark, table)
    full = ".".join([catalog, *namespace, name])
    if mode == "create" and spark.catalog.tableExists(full):
        # Fail fast (some catalogs stage an existing name happily); assert-create guards the commit.
        raise CatalogConflictError(f"cannot stage {full}: the table already exists; use stage_replace() to "
                                   "replace it", status=409)
    options = {
        "catalog": catalog,
        "namespace": namespace,
        "name": name,
        "mode": mode,
        "partition": [_parse_term(p, "partition field") for p in partition_by],
        "sort": [_parse_sort(s) for s in sort_by],
        "properties": {str(k): str(v) for k, v in (properties or {}).items()},
        "location": location,
    }
    jschema = _java_schema(spark, schema)
    action = "staging create of" if mode == "create" else "staging replace of"
    started = time.monotonic()
    events.emit("stage_create.started", table=full, mode=mode)
    try:
        jstaged = ShimJvm(spark).stage(jschema, options)
    except Exception as exc:  # noqa: BLE001
        err = _translate(exc, full, action)
        if err is exc:
            err = CatalogError(f"{action} {full} failed: {_java_message(exc)}")
        events.emit("stage_create.finished", table=full, mode=mode, outcome="failed", error_class=type(err).__name__,
                    duration_s=round(time.monotonic() - started, 3))
        raise err from None
    staged = StagedTable(spark, full, jstaged, mode, expected_uuid)
    events.emit("stage_create.finished", table=full, mode=mode, outcome="staged", uuid=staged.uuid,
                location=staged.location, duration_s=round(time.monotonic() - started, 3))
    if expected_uuid is not None and staged.uuid != str(expected_uuid):
        staged.abort()  # nothing written yet: just drop the transaction
        raise StaleTableError(
            f"cannot replace {full}: its UUID is {staged.uuid}, not the expected {expected_uuid} (the table "
            "was dropped and recreated since you read it); reload the table and decide again")
    return staged


def stage_create(spark: Any, table: str, schema: Any, **kwargs: Any) -> StagedTable:
    """Stage a new table: invisible until `commit()` (`assert-create`)."""
    return stage_table(spark, table, schema, mode="create", **kwargs)


def stage_replace(spark: Any, table: str, schema: Any, *, expected_uuid: str | None = None,
                  or_create: bool = False, **kwargs: Any) -> StagedTable:
    """Stage a full replacement of an existing table (new schema/spec/data, same UUID and history),
    guarded by `assert-table-uuid`. `or_create=True` creates it when missing."""
    return stage_table(spark, table, schema, mode="create_or_replace" if or_create else "replace",
                       expected_uuid=expected_uuid, **kwargs)
