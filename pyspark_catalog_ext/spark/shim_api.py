"""The one Python<->JVM boundary: every JVM class name we use, and the only calls into the JVM.

`ShimJvm(spark)` calls the shim's facade (`io.catalogext.shim.PythonApi`) and a few Spark
classes (runtime conf, schema parsing); the shim answers with JSON strings, parsed here once into
the frozen dataclasses below, so the rest of the package never sees Py4J objects or raw dicts.
This mirrors sedona's `SedonaJvmLib` and graphframes' `GraphFramePythonAPI`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark_catalog_ext import logsafety
from pyspark_catalog_ext.catalog.connection import S3_FILE_IO, SHIM_CATALOG_IMPL, SHIM_CLIENT_FACTORY, SHIM_PACKAGE

__all__ = [
    "EXTENSIONS", "SPARK_CATALOG", "SPARK_SESSION_CATALOG", "S3_FILE_IO",
    "SHIM_PACKAGE", "PYTHON_API", "SHIM_CATALOG_IMPL", "SHIM_CLIENT_FACTORY", "SHIM_PLUGIN", "SHIM_SQL_EXTENSIONS",
    "STATUS_FUNCTION", "CONNECT_SERVICE",
    "PYTHON_CREDENTIAL_BRIDGE", "CREDENTIALS_EXPIRED_EXCEPTION", "CATALOG_REDIRECT_EXCEPTION",
    "STORE_SDK_MISSING_EXCEPTION",
    "CredentialPrefix", "RegistryEntry", "PluginStats", "CommitOutcome", "ShimStatus", "JvmEvent", "EventBatch",
    "StagedInfo", "StagedWrite", "StagedAbort", "JvmStagedTable", "CatalogInfo", "ShimJvm",
]


# ---- JVM class names: Iceberg's and ours that Spark settings name, and the shim's that Python uses.
# (Iceberg's exception names stay in spark_errors: they are its translation table, not calls.)
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
SPARK_SESSION_CATALOG = "org.apache.iceberg.spark.SparkSessionCatalog"
PYTHON_API = f"{SHIM_PACKAGE}.PythonApi"
SHIM_PLUGIN = f"{SHIM_PACKAGE}.CatalogExtPlugin"
# spark.sql.extensions entry that adds SQL function STATUS_FUNCTION() (status without Py4J: Spark Connect)
SHIM_SQL_EXTENSIONS = f"{SHIM_PACKAGE}.CatalogExtSqlExtensions"
STATUS_FUNCTION = "catalog_ext_status"
PYTHON_CREDENTIAL_BRIDGE = f"{SHIM_PACKAGE}.refresh.PythonCredentialBridge"
# The exceptions Python translates (java_errors), in the shim's leaf package of errors.
CREDENTIALS_EXPIRED_EXCEPTION = f"{SHIM_PACKAGE}.errors.CredentialsExpiredException"
CATALOG_REDIRECT_EXCEPTION = f"{SHIM_PACKAGE}.errors.CatalogRedirectException"
STORE_SDK_MISSING_EXCEPTION = f"{SHIM_PACKAGE}.errors.StoreSdkMissingException"
# Spark's Connect service, the Scala object (`connect-server` starts it as Spark's SparkConnectServer main does).
CONNECT_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService$"


# ---- answers


@dataclass(frozen=True)
class CredentialPrefix:
    """One storage prefix's current credentials in a registry entry (times in epoch ms, 0 = none)."""

    prefix: str
    fetched_at_ms: int
    expires_at_ms: int
    refresh_at_ms: int


@dataclass(frozen=True)
class RegistryEntry:
    """One table entry of the JVM credential registry. No secrets."""

    handle: str
    catalog: str
    namespace: tuple[str, ...]
    table: str
    staged: bool
    generation: int
    refresh_count: int
    failure_count: int
    last_strategy: str
    strategy_counts: Mapping[str, int]
    last_refresh_at_ms: int
    last_error: str | None
    prefixes: tuple[CredentialPrefix, ...]

    @property
    def name(self) -> str:
        """catalog.ns.table"""
        return ".".join([self.catalog, *self.namespace, self.table])

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RegistryEntry:
        return cls(
            handle=str(raw["handle"]),
            catalog=str(raw["catalog"]),
            namespace=tuple(raw.get("namespace") or ()),
            table=str(raw["table"]),
            staged=bool(raw.get("staged")),
            generation=int(raw.get("generation") or 0),
            refresh_count=int(raw.get("refresh_count") or 0),
            failure_count=int(raw.get("failure_count") or 0),
            last_strategy=str(raw.get("last_strategy") or "initial"),
            strategy_counts={str(k): int(v) for k, v in (raw.get("strategy_counts") or {}).items()},
            last_refresh_at_ms=int(raw.get("last_refresh_at_ms") or 0),
            last_error=raw.get("last_error") or None,
            prefixes=tuple(CredentialPrefix(str(p.get("prefix", "")), int(p.get("fetched_at_ms") or 0),
                                            int(p.get("expires_at_ms") or 0), int(p.get("refresh_at_ms") or 0))
                           for p in raw.get("prefixes") or ()),
        )


@dataclass(frozen=True)
class PluginStats:
    """Executor credential requests the driver plugin served or refused."""

    served: int
    refused: int


@dataclass(frozen=True)
class CommitOutcome:
    """One finished commit or stage-create of the driver JVM (its event ring): `kind` is "commit" or
    "stage_create", `outcome` committed/rejected/unknown/failed (staged/failed for a stage-create)."""

    seq: int
    kind: str
    table: str
    outcome: str
    time: float
    error_class: str | None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CommitOutcome:
        table = raw.get("table") or ",".join(raw.get("tables") or ())
        return cls(int(raw.get("seq") or 0), str(raw.get("type", "")).split(".")[0], str(table),
                   str(raw.get("outcome", "")), float(raw.get("time") or 0), raw.get("error_class") or None)


@dataclass(frozen=True)
class ShimStatus:
    """The driver's whole read-only status in one answer (`CatalogExtSqlExtensions.statusJson`), the
    same through Py4J (`ShimJvm.status`) and through SQL `catalog_ext_status()` (Spark Connect)."""

    catalogs: tuple[str, ...]
    entries: tuple[RegistryEntry, ...]
    commits: tuple[CommitOutcome, ...]
    plugin: PluginStats
    lost_events: int

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ShimStatus:
        plugin = raw.get("plugin") or {}
        return cls(tuple(str(c) for c in raw.get("catalogs") or ()),
                   tuple(RegistryEntry.from_json(e) for e in raw.get("tables") or ()),
                   tuple(CommitOutcome.from_json(c) for c in raw.get("commits") or ()),
                   PluginStats(int(plugin.get("served", 0)), int(plugin.get("refused", 0))),
                   int(raw.get("lost_events") or 0))


@dataclass(frozen=True)
class JvmEvent:
    """One event of the JVM's ring (`EventLog`): its sequence number, type, JVM time and fields."""

    seq: int
    type: str
    time: float
    fields: Mapping[str, Any]


@dataclass(frozen=True)
class EventBatch:
    """Events after a sequence number, and how many the ring dropped before we read them."""

    events: tuple[JvmEvent, ...]
    lost: int

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> EventBatch:
        events = []
        for e in raw.get("events") or ():
            rest = {k: v for k, v in e.items() if k not in ("seq", "type", "time")}
            events.append(JvmEvent(int(e["seq"]), str(e["type"]), float(e["time"]), rest))
        return cls(tuple(events), int(raw.get("lost") or 0))


@dataclass(frozen=True)
class StagedInfo:
    """A staged table's state; `committed_snapshot_ids` only after a commit."""

    table: str
    mode: str
    uuid: str
    location: str
    state: str
    snapshot_ids: tuple[int, ...]
    committed_snapshot_ids: tuple[int, ...] = ()

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> StagedInfo:
        return cls(str(raw["table"]), str(raw["mode"]), str(raw["uuid"]), str(raw["location"]), str(raw["state"]),
                   tuple(int(s) for s in raw.get("snapshot_ids") or ()),
                   tuple(int(s) for s in raw.get("committed_snapshot_ids") or ()))


@dataclass(frozen=True)
class StagedWrite:
    """What one staged write added (no snapshot when the data was empty)."""

    snapshot_id: int | None
    added_records: int
    added_files: int


@dataclass(frozen=True)
class StagedAbort:
    """What an abort deleted, could not delete, or kept on purpose (commit state unknown)."""

    deleted: int
    not_deleted: tuple[str, ...] = ()
    kept_because: str | None = None


@dataclass(frozen=True)
class CatalogInfo:
    """A Spark catalog as `CatalogReads.describe` shows it: URI without user info or query, no secrets."""

    uri: str | None
    warehouse: str | None
    shim: bool


# ---- the facade


def _java_class(jvm: Any, name: str) -> Any:
    """`jvm.io.catalogext.shim.PythonApi` for name "io.catalogext.shim.PythonApi"."""
    for part in name.split("."):
        jvm = getattr(jvm, part)
    return jvm


class JvmStagedTable:
    """The JVM's handle of one staged table (`StagedTables.Staged`), with parsed answers."""

    def __init__(self, handle: Any) -> None:
        self._j = handle

    def describe(self) -> StagedInfo:
        return StagedInfo.from_json(json.loads(self._j.describe()))

    def written_files(self) -> list[str]:
        return [str(f) for f in json.loads(self._j.writtenFilesJson())]

    def write(self, df: Any) -> StagedWrite:
        out = json.loads(self._j.write(df._jdf))
        sid = out.get("snapshot_id")
        return StagedWrite(None if sid is None else int(sid), int(out.get("added_records", 0)),
                           int(out.get("added_files", 0)))

    def commit(self) -> StagedInfo:
        return StagedInfo.from_json(json.loads(self._j.commit()))

    def abort(self) -> StagedAbort:
        out = json.loads(self._j.abort())
        return StagedAbort(int(out.get("deleted", 0)), tuple(out.get("not_deleted") or ()), out.get("kept_because"))


class ShimJvm:
    """The driver JVM of one SparkSession, as Python uses it. The only place that touches Py4J."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self._sc = spark.sparkContext

    @property
    def _api(self) -> Any:
        return _java_class(self._sc._jvm, PYTHON_API)

    # ---- Spark (works without the shim jar)

    def runtime_conf(self) -> dict[str, str]:
        """The session's runtime conf (includes `spark.conf.set` values); it may hold secrets."""
        jvm = self._sc._jvm
        with logsafety.py4j_muted():  # the conf holds catalog credentials: keep them out of py4j's DEBUG log
            scala_conf = self._spark._jsparkSession.conf().getAll()
            return dict(jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(scala_conf).asJava())

    def java_schema(self, schema: Any) -> Any:
        """A Spark StructType in the JVM from a DataFrame, a pyspark StructType or a DDL string.
        A bad DDL raises the JVM's error (Py4JJavaError)."""
        from pyspark.sql import DataFrame
        from pyspark.sql.types import StructType

        if isinstance(schema, DataFrame):
            return schema._jdf.schema()
        types = self._sc._jvm.org.apache.spark.sql.types
        if isinstance(schema, StructType):
            return types.DataType.fromJson(schema.json())
        return types.StructType.fromDDL(schema)

    def start_connect_service(self) -> int:
        """Start Spark's Connect gRPC service in this driver; the port it listens on."""
        service = self._connect_service
        service.start(self._sc._jsc.sc())
        return int(service.localPort())

    def stop_connect_service(self) -> None:
        service = self._connect_service
        service.stop(getattr(service, "stop$default$1")(), getattr(service, "stop$default$2")())

    @property
    def _connect_service(self) -> Any:
        # The object itself: the class's static forwarders miss localPort() and stop()'s defaults.
        return getattr(_java_class(self._sc._jvm, CONNECT_SERVICE), "MODULE$")

    # ---- the shim (PythonApi)

    def registry_entries(self) -> list[RegistryEntry]:
        return [RegistryEntry.from_json(e) for e in json.loads(self._api.registryEntries())]

    def status(self) -> ShimStatus:
        """Entries, recent commit outcomes and plugin counts, as SQL `catalog_ext_status()` answers."""
        return ShimStatus.from_json(json.loads(self._api.status(self._spark._jsparkSession)))

    def plugin_stats(self) -> PluginStats:
        raw = json.loads(self._api.pluginStats())
        return PluginStats(int(raw.get("served", 0)), int(raw.get("refused", 0)))

    def refresh(self, entry: RegistryEntry) -> bool:
        """Refresh one entry now (unless refreshed since it was read); True if it fetched."""
        return bool(self._api.refresh(entry.handle, entry.generation))

    def enable_custom_source(self, catalog: str) -> None:
        self._api.enableCustomSource(catalog)

    def register_bridge(self, bridge: Any) -> None:
        """Start Py4J's callback server (once) and hand the JVM our credential bridge."""
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(self._sc._gateway)
        self._api.registerBridge(bridge)

    def unregister_bridge(self) -> None:
        self._api.unregisterBridge()

    def set_refresh_policy(self, catalog: str, properties: Mapping[str, str]) -> None:
        """`catalog`'s refresh policy: its `catalog-ext.refresh.*` properties, read by the JVM's
        RefreshPolicy.fromProperties as the catalog's own are."""
        self._api.setRefreshPolicy(catalog, json.dumps(dict(properties)))

    def drain_events_after(self, seq: int) -> EventBatch:
        return EventBatch.from_json(json.loads(self._api.drainEventsAfter(int(seq))))

    # ---- read-only catalog access (CatalogReads): names go over as JSON arrays of levels
    def catalog_info(self, catalog: str) -> CatalogInfo:
        raw = json.loads(self._api.catalogInfo(self._spark._jsparkSession, catalog))
        return CatalogInfo(raw.get("uri"), raw.get("warehouse"), bool(raw.get("shim")))

    def list_namespaces(self, catalog: str, parent: Sequence[str]) -> list[tuple[str, ...]]:
        found = self._api.listNamespaces(self._spark._jsparkSession, catalog, json.dumps(list(parent)))
        return [tuple(ns) for ns in json.loads(found)]

    def namespace_exists(self, catalog: str, namespace: Sequence[str]) -> bool:
        return bool(self._api.namespaceExists(self._spark._jsparkSession, catalog, json.dumps(list(namespace))))

    def list_tables(self, catalog: str, namespace: Sequence[str]) -> list[tuple[str, ...]]:
        found = self._api.listTables(self._spark._jsparkSession, catalog, json.dumps(list(namespace)))
        return [tuple(t) for t in json.loads(found)]

    def table_exists(self, catalog: str, identifier: Sequence[str]) -> bool:
        return bool(self._api.tableExists(self._spark._jsparkSession, catalog, json.dumps(list(identifier))))

    def load_table(self, catalog: str, identifier: Sequence[str]) -> dict[str, Any]:
        """{"metadata-location", "metadata"} of a table, freshly loaded; no config, no credentials."""
        return dict(json.loads(self._api.loadTable(self._spark._jsparkSession, catalog, json.dumps(list(identifier)))))

    def catalog_get(self, catalog: str, route: str, params: Mapping[str, str]) -> Any:
        """One GET of a route of the catalog, on the Spark catalog's own session; parsed JSON or None."""
        return json.loads(self._api.catalogGet(self._spark._jsparkSession, catalog, route, json.dumps(dict(params))))

    def stage(self, java_schema: Any, options: Mapping[str, Any]) -> JvmStagedTable:
        """Open a staged create/replace (`options` as StagedTables.stage documents)."""
        return JvmStagedTable(self._api.stage(self._spark._jsparkSession, java_schema, json.dumps(options)))

