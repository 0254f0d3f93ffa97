"""Staged tables: build a table in several Spark writes, publish it atomically or not at all.

```python
from pyspark_catalog_ext.staging import stage_create

with stage_create(spark, "lake.db.events", df, partition_by=["days(ts)"]) as staged:
    staged.write(df)            # as many writes as needed; nothing is visible yet
    staged.write(more)
# committed here in ONE catalog commit (assert-create); on an exception: aborted, files deleted
```

How it works: the JVM shim (`io.catalogext.shim.StagedTables`) opens an Iceberg create/replace
transaction through the Spark catalog's own Iceberg catalog, so

* the stage-create and the commit go through the shim's REST client, which adds an
  `Idempotency-Key` (UUIDv7) when the catalog advertises `idempotency-key-lifetime`, retries
  what is safe to retry, and reconciles a commit whose answer was lost (`CommitGuard`);
* the staged table's S3 credentials come from the refreshing provider (`credentials.attach`);
* each `write()` goes through Spark's DataSource V2 writer for Iceberg and adds one snapshot
  inside the transaction; `commit()` publishes them all with one REST commit.

`abort()` deletes exactly the files the writes produced and leaves nothing visible. Files of a
driver that died before commit or abort are found and removed by
`pyspark-catalog-ext staged cleanup --location ...` (`find_orphans`).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, Mapping, Optional, Sequence
from urllib.parse import urlsplit

from . import events
from .errors import (
    CatalogConflictError,
    CatalogError,
    CatalogExtError,
    CatalogNotFoundError,
    CatalogUnavailableError,
    CommitFailedError,
    ConfigError,
    redact,
)

__all__ = [
    "StagedTable",
    "WriteResult",
    "CommitResult",
    "StaleTableError",
    "CommitStateUnknownError",
    "stage_create",
    "stage_replace",
    "stage_table",
    "OrphanReport",
    "find_orphans",
    "register",
]

log = logging.getLogger(__name__)

_JAVA_CLASS = "io.catalogext.shim.StagedTables"


class StaleTableError(CatalogConflictError):
    """A replace was guarded by a table UUID that no longer matches (dropped and recreated)."""


class CommitStateUnknownError(CatalogUnavailableError):
    """The catalog's answer to a commit was lost and the table does not tell whether it landed.

    Nothing was deleted. Load the table and check before retrying."""


@dataclass(frozen=True)
class WriteResult:
    """One `StagedTable.write`: the snapshot it added inside the transaction."""

    snapshot_id: Optional[int]
    added_records: int
    added_files: int


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
        conf = spark._jsparkSession.conf().getAll()
        jvm = spark.sparkContext._jvm
        for key in dict(jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(conf).asJava()):
            if key.startswith("spark.sql.catalog.") and key.count(".") == 3:
                names.add(key.split(".")[3])
    except Exception:  # noqa: BLE001 - runtime conf is a best effort addition
        pass
    return names


def _java_schema(spark: Any, schema: Any) -> Any:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    jvm = spark.sparkContext._jvm
    if isinstance(schema, DataFrame):
        return schema._jdf.schema()
    if isinstance(schema, StructType):
        return jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json())
    if isinstance(schema, str):
        try:
            return jvm.org.apache.spark.sql.types.StructType.fromDDL(schema)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"invalid schema DDL {schema!r}: {_java_message(exc)}") from None
    raise ConfigError("schema must be a DataFrame, a pyspark StructType or a DDL string like 'id BIGINT, v STRING'")


# --------------------------------------------------------------------------- JVM errors


def _java_chain(exc: BaseException) -> list[tuple[str, str]]:
    """(class name, message) of a Py4JJavaError's Java exception and its causes."""
    jexc = getattr(exc, "java_exception", None)
    out: list[tuple[str, str]] = []
    seen = 0
    while jexc is not None and seen < 12:
        try:
            out.append((str(jexc.getClass().getName()), str(jexc.getMessage() or "")))
            nxt = jexc.getCause()
        except Exception:  # noqa: BLE001
            break
        if nxt is None or nxt.equals(jexc):
            break
        jexc, seen = nxt, seen + 1
    return out


def _java_message(exc: BaseException) -> str:
    chain = _java_chain(exc)
    text = chain[0][1] if chain else str(exc)
    return redact(" ".join(text.split()))[:400]


def _translate(exc: BaseException, table: str, action: str) -> BaseException:
    """A one-line package error for a Java failure; the original if it is not a known kind."""
    chain = _java_chain(exc)
    if not chain:
        return exc
    for cls, msg in chain:
        short = cls.rsplit(".", 1)[-1]
        text = redact(" ".join(msg.split()))[:300]
        if short == "CommitStateUnknownException":
            inner = next((m for c, m in chain if c != cls and m), text)
            return CommitStateUnknownError(
                f"{action} {table}: commit state unknown ({redact(' '.join(inner.split()))[:300]}); "
                "nothing was deleted: load the table to see whether it was published before retrying")
        if short == "CommitFailedException":
            if "replaced by another table" in msg:
                return StaleTableError(f"{action} {table} failed: {text}; reload the table and stage again")
            return CommitFailedError(
                f"{action} {table} failed: the catalog rejected the commit ({text}); nothing was published: "
                "the table changed or exists already; reload and stage again")
        if short in ("AlreadyExistsException", "TableAlreadyExistsException"):
            return CatalogConflictError(f"{action} {table} failed: the table already exists; use stage_replace() "
                                        "to replace it", status=409)
        if short in ("NoSuchTableException", "NoSuchNamespaceException"):
            kind = "namespace" if "Namespace" in short else "table"
            return CatalogNotFoundError(f"{action} {table} failed: {kind} not found ({text}); check the name",
                                        status=404)
        if short in ("ForbiddenException", "NotAuthorizedException"):
            return CatalogError(f"{action} {table} failed: the catalog denied it ({text}); check the credentials",
                                status=403)
        if short in ("ServiceFailureException", "ServiceUnavailableException"):
            return CatalogUnavailableError(f"{action} {table} failed: the catalog is unavailable ({text}); "
                                           "try again later")
        if short == "IllegalArgumentException" and cls.startswith("java."):
            return ConfigError(f"{action} {table} failed: {text}")
        if short == "IllegalStateException" and "staged table" in msg:
            return ConfigError(text)
    return exc


# --------------------------------------------------------------------------- the staged table


class StagedTable:
    """A table being built in a create or replace transaction. Nothing is visible until `commit()`.

    Use it as a context manager to commit on success and abort on an exception. A failed commit
    is never aborted (its files may be referenced if the commit landed after all); `staged
    cleanup` finds files no committed table references.
    """

    def __init__(self, spark: Any, name: str, java_staged: Any, mode: str,
                 expected_uuid: Optional[str] = None) -> None:
        self._spark = spark
        self.name = name
        self.mode = mode
        self._j = java_staged
        info = json.loads(java_staged.describe())
        self.uuid: str = info["uuid"]
        self.location: str = info["location"]
        self.expected_uuid = expected_uuid

    def __repr__(self) -> str:
        return f"StagedTable({self.name!r}, mode={self.mode!r}, state={self.state!r}, uuid={self.uuid!r})"

    # ---- state
    def describe(self) -> dict[str, Any]:
        """table, mode, uuid, location, state and the snapshot ids written so far."""
        return json.loads(self._j.describe())

    @property
    def state(self) -> str:
        """staged, committed, aborted, rejected (commit refused: nothing published) or unknown
        (commit answer lost and undecidable: files kept)."""
        return self.describe()["state"]

    @property
    def snapshot_ids(self) -> list[int]:
        return [int(s) for s in self.describe()["snapshot_ids"]]

    def written_files(self) -> list[str]:
        """Every file the writes produced so far (data files, manifests, manifest lists)."""
        return list(json.loads(self._j.writtenFilesJson()))

    # ---- actions
    def write(self, df: Any) -> WriteResult:
        """Append `df` (columns matched by name) with Spark's Iceberg writer; one snapshot per call."""
        try:
            out = json.loads(self._j.write(df._jdf))
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, "writing to staged table") from None
        return WriteResult(out.get("snapshot_id"), int(out.get("added_records", 0)), int(out.get("added_files", 0)))

    def commit(self) -> CommitResult:
        """Publish every write in one catalog commit (`assert-create`, or `assert-table-uuid` for a replace)."""
        started = time.monotonic()
        events.emit("commit.started", table=self.name, mode=self.mode, uuid=self.uuid)
        try:
            out = json.loads(self._j.commit())
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
        result = CommitResult(self.name, out["uuid"], out["location"],
                              tuple(int(s) for s in out.get("committed_snapshot_ids", [])))
        events.emit("commit.finished", table=self.name, mode=self.mode, uuid=result.uuid, outcome="committed",
                    location=result.location, snapshot_ids=list(result.snapshot_ids),
                    duration_s=round(time.monotonic() - started, 3))
        return result

    def abort(self) -> int:
        """Discard the transaction and delete the files it wrote. Returns how many were deleted."""
        try:
            out = json.loads(self._j.abort())
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, "aborting staged table") from None
        if out.get("not_deleted"):
            log.warning("staged table %s: %d file(s) could not be deleted; run `pyspark-catalog-ext staged "
                        "cleanup --location %s`", self.name, len(out["not_deleted"]), self.location)
        return int(out.get("deleted", 0))

    def __enter__(self) -> "StagedTable":
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
    properties: Optional[Mapping[str, str]] = None,
    location: Optional[str] = None,
    expected_uuid: Optional[str] = None,
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
    jvm = spark.sparkContext._jvm
    action = "staging create of" if mode == "create" else "staging replace of"
    started = time.monotonic()
    events.emit("stage_create.started", table=full, mode=mode)
    try:
        jstaged = jvm.io.catalogext.shim.StagedTables.stage(spark._jsparkSession, jschema, json.dumps(options))
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


def stage_replace(spark: Any, table: str, schema: Any, *, expected_uuid: Optional[str] = None,
                  or_create: bool = False, **kwargs: Any) -> StagedTable:
    """Stage a full replacement of an existing table (new schema/spec/data, same UUID and history),
    guarded by `assert-table-uuid`. `or_create=True` creates it when missing."""
    return stage_table(spark, table, schema, mode="create_or_replace" if or_create else "replace",
                       expected_uuid=expected_uuid, **kwargs)


# --------------------------------------------------------------------------- orphans


@dataclass
class OrphanReport:
    """Result of `find_orphans`: files under `location` that no committed table references."""

    location: str
    listed: int = 0
    referenced: int = 0
    tables: list[str] = field(default_factory=list)
    orphans: list[tuple[str, int, float]] = field(default_factory=list)  # (uri, size, age seconds)
    too_young: int = 0
    deleted: list[str] = field(default_factory=list)
    applied: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "location": self.location, "listed": self.listed, "referenced": self.referenced,
            "tables": self.tables, "orphans": [{"uri": u, "size": s, "age_seconds": round(a, 1)}
                                               for u, s, a in self.orphans],
            "too_young": self.too_young, "deleted": self.deleted, "applied": self.applied,
        }


def _norm_uri(uri: str) -> str:
    """s3a://b/k, s3n://b/k -> s3://b/k (one spelling for comparisons)."""
    return re.sub(r"^s3[an]?://", "s3://", uri.strip())


def _split_s3(uri: str) -> tuple[str, str]:
    parts = urlsplit(_norm_uri(uri))
    if parts.scheme != "s3" or not parts.netloc:
        raise ConfigError(f"invalid location {uri!r}: expected s3://bucket/path")
    return parts.netloc, parts.path.lstrip("/")


def _overlaps(a: str, b: str) -> bool:
    a, b = _norm_uri(a).rstrip("/") + "/", _norm_uri(b).rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


def _io_props(load_result: Mapping[str, Any], location: str) -> dict[str, str]:
    """FileIO properties from a LoadTableResult: config + the longest matching storage credential."""
    props = {str(k): str(v) for k, v in (load_result.get("config") or {}).items()}
    best: Optional[Mapping[str, Any]] = None
    for cred in load_result.get("storage-credentials") or []:
        prefix = str(cred.get("prefix") or "")
        if _norm_uri(location).startswith(_norm_uri(prefix)) and (
                best is None or len(prefix) > len(str(best.get("prefix") or ""))):
            best = cred
    if best is not None:
        props.update({str(k): str(v) for k, v in (best.get("config") or {}).items()})
    return props


def _referenced_files(load_result: Mapping[str, Any], io_props: Mapping[str, str]) -> set[str]:
    """Every file a committed table's metadata references: metadata files, manifest lists,
    manifests, data and delete files, statistics. Raises if any of it cannot be read."""
    from pyiceberg.io import load_file_io
    from pyiceberg.table.metadata import TableMetadataUtil

    metadata = TableMetadataUtil.parse_obj(load_result["metadata"])
    out: set[str] = set()
    if load_result.get("metadata-location"):
        out.add(load_result["metadata-location"])
    for entry in metadata.metadata_log:
        out.add(entry.metadata_file)
    for stats in list(getattr(metadata, "statistics", []) or []) + list(getattr(metadata, "partition_statistics", []) or []):
        out.add(stats.statistics_path)
    io = load_file_io(properties=_pyiceberg_io_props(io_props), location=metadata.location)
    for snapshot in metadata.snapshots:
        if snapshot.manifest_list:
            out.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            out.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                out.add(entry.data_file.file_path)
    return {_norm_uri(u) for u in out}


def _pyiceberg_io_props(props: Mapping[str, str]) -> dict[str, str]:
    out = dict(props)
    out.setdefault("py-io-impl", "pyiceberg.io.pyarrow.PyArrowFileIO")
    if out.get("s3.path-style-access", "").lower() == "true":
        out.setdefault("s3.force-virtual-addressing", "false")
    out.setdefault("s3.region", out.get("client.region", "us-east-1"))
    return out


def _boto3_client(endpoint: Optional[str], access_key: str, secret_key: str, session_token: Optional[str],
                  region: Optional[str], path_style: bool) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=access_key, aws_secret_access_key=secret_key,
        aws_session_token=session_token, region_name=region or "us-east-1",
        config=Config(s3={"addressing_style": "path" if path_style else "auto"},
                      retries={"max_attempts": 3, "mode": "standard"}),
    )


def _s3_from_props(props: Mapping[str, str]) -> Any:
    if "s3.access-key-id" not in props:
        raise ConfigError("the catalog vended no S3 credentials for this location; pass --s3-access-key/--s3-secret-key")
    return _boto3_client(props.get("s3.endpoint"), props["s3.access-key-id"], props.get("s3.secret-access-key", ""),
                         props.get("s3.session-token"), props.get("client.region") or props.get("s3.region"),
                         props.get("s3.path-style-access", "true").lower() == "true")


def _walk_namespaces(client: Any, parent: Optional[tuple[str, ...]] = None, depth: int = 0) -> Iterable[tuple[str, ...]]:
    for ns in client.list_namespaces(parent):
        yield ns
        if depth < 4:
            try:
                yield from _walk_namespaces(client, ns, depth + 1)
            except CatalogError:
                pass  # servers without nested namespaces may reject ?parent=


def find_orphans(
    client: Any,
    location: str,
    *,
    table: Optional[str] = None,
    s3: Any = None,
    min_age_seconds: float = 3600.0,
    apply: bool = False,
    now: Optional[float] = None,
) -> OrphanReport:
    """Files under `location` that no committed table's metadata references.

    Every committed table of the catalog whose location overlaps `location` is loaded and all
    files its metadata references (every snapshot, not only the current one) are kept. Files
    younger than `min_age_seconds` are never reported (a running job may be writing them). With
    `apply=True` the orphans are deleted.

    S3 access: `s3` (a boto3 client), else the credentials the catalog vends for `table`
    ("ns.table"): loaded if committed, else staged at `location` (never committed).
    """
    bucket, prefix = _split_s3(location)
    prefix = prefix.rstrip("/") + "/" if prefix else ""
    report = OrphanReport(location=f"s3://{bucket}/{prefix}".rstrip("/"), applied=apply)

    referenced: set[str] = set()
    for ns in list(_walk_namespaces(client)):
        for ident in client.list_tables(ns):
            try:
                loaded = client.load_table(ident.namespace, ident.name)
            except CatalogNotFoundError:
                continue  # dropped meanwhile
            tloc = (loaded.get("metadata") or {}).get("location") or ""
            if not tloc or not _overlaps(tloc, report.location):
                continue
            name = ".".join([*ident.namespace, ident.name])
            try:
                referenced |= _referenced_files(loaded, _io_props(loaded, tloc))
            except CatalogExtError:
                raise
            except Exception as exc:  # noqa: BLE001 - refusing is the only safe answer
                raise CatalogError(f"cannot read the metadata of committed table {name} at {tloc} "
                                   f"({type(exc).__name__}); refusing to clean up {report.location}") from None
            report.tables.append(name)
            if s3 is None and table is not None and name == table:
                s3 = _s3_from_props(_io_props(loaded, report.location))
    report.referenced = len(referenced)

    if s3 is None:
        if table is None:
            raise ConfigError("staged cleanup needs S3 access: pass --table NS.TABLE (credentials vended by the "
                              "catalog) or --s3-access-key/--s3-secret-key")
        parts = table.split(".")
        if len(parts) < 2:
            raise ConfigError(f"invalid --table {table!r}: use namespace.table")
        body = {"name": parts[-1], "schema": {"type": "struct", "schema-id": 0, "fields": []},
                "location": report.location}
        staged = client.create_table(parts[:-1], body, stage_create=True)  # never committed
        got = (staged.get("metadata") or {}).get("location") or ""
        if _norm_uri(got).rstrip("/") != _norm_uri(report.location).rstrip("/"):
            raise ConfigError(f"the catalog staged {table} at {got}, not at {report.location}: pass the table's "
                              "own location or --s3-access-key/--s3-secret-key")
        s3 = _s3_from_props(_io_props(staged, report.location))

    current = time.time() if now is None else now
    paginator = s3.get_paginator("list_objects_v2")
    candidates: list[tuple[str, int, float]] = []
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents") or []:
            report.listed += 1
            uri = f"s3://{bucket}/{obj['Key']}"
            if uri in referenced:
                continue
            modified = obj.get("LastModified")
            age = current - modified.timestamp() if isinstance(modified, datetime) else float("inf")
            if age < min_age_seconds:
                report.too_young += 1
                continue
            candidates.append((uri, int(obj.get("Size", 0)), age))
    report.orphans = sorted(candidates)
    if apply:
        for uri, _, _ in report.orphans:
            _, key = _split_s3(uri)
            s3.delete_object(Bucket=bucket, Key=key)
            report.deleted.append(uri)
    return report


# --------------------------------------------------------------------------- CLI


def _cleanup_cmd(args: argparse.Namespace) -> int:
    from .catalog_client import CatalogClient
    from .session import catalog_properties, connection_kwargs

    props = catalog_properties(args.profile, shim=False, **connection_kwargs(args))
    s3 = None
    if args.s3_access_key or args.s3_secret_key:
        if not (args.s3_access_key and args.s3_secret_key):
            raise ConfigError("pass both --s3-access-key and --s3-secret-key")
        s3 = _boto3_client(args.s3_endpoint, args.s3_access_key, args.s3_secret_key, args.s3_session_token,
                           args.s3_region or args.region, not args.s3_virtual_hosted)
    with CatalogClient.from_properties(props) as client:
        report = find_orphans(client, args.location, table=args.table, s3=s3, min_age_seconds=args.min_age,
                              apply=args.apply)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0
    for uri, size, age in report.orphans:
        print(f"{'deleted' if args.apply else 'orphan'}\t{uri}\t{size}\t{age:.0f}s")
    total = sum(size for _, size, _ in report.orphans)
    tables = ", ".join(report.tables) or "none"
    summary = (f"{len(report.orphans)} orphaned file(s), {total} bytes, under {report.location} "
               f"({report.listed} listed, {report.referenced} referenced by committed tables: {tables}; "
               f"{report.too_young} younger than {args.min_age:g}s kept)")
    if args.apply:
        print(f"deleted {summary}")
    else:
        print(summary)
        if report.orphans:
            print("dry run: add --apply to delete them", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `staged cleanup` to the CLI."""
    from .session import add_connection_arguments

    staged = subparsers.add_parser("staged", help="staged tables: find and remove orphaned staged files")
    sub = staged.add_subparsers(dest="staged_command", metavar="ACTION")
    p = sub.add_parser("cleanup", help="list (and with --apply delete) files under a location that no committed "
                                       "table references")
    p.add_argument("--location", required=True, help="s3://bucket/path of the staged table(s)")
    p.add_argument("--apply", action="store_true", help="delete the orphans (default: dry run, list only)")
    p.add_argument("--table", metavar="NS.TABLE", help="get S3 credentials vended for this table (loaded if "
                                                       "committed, else staged at --location)")
    p.add_argument("--min-age", type=float, default=3600.0, metavar="SECONDS",
                   help="only files older than this (default 3600: a running job may still write)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_connection_arguments(p)  # catalog options as for spark-conf (incl. --s3-endpoint for explicit keys)
    p.add_argument("--s3-access-key")
    p.add_argument("--s3-secret-key")
    p.add_argument("--s3-session-token")
    p.add_argument("--s3-region")
    p.add_argument("--s3-virtual-hosted", action="store_true", help="virtual-hosted addressing (default: path style)")
    p.set_defaults(func=_cleanup_cmd)
