"""Change notifications (push): after a commit through one catalog, tell a mirror catalog about it
in the shape Apache Polaris defines for external catalogs (`notifications-api.yaml`).

`sink = NotificationSink.from_spark(spark, "lake", {"uri": ..., "warehouse": ..., "credential": ...})`,
then `pce.events.subscribe(sink)`. A VALIDATE comes first per table (its failure stops that table);
timestamps (ms) increase strictly per table; a 409 is `stale`, not retried; every outcome is a
`notification.finished` event; nothing here fails the job (own daemon thread, bounded queue).

Why: docs/events.md, section 'Change notifications to a mirror catalog'.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from cachetools import LRUCache

from pyspark_catalog_ext import events
from pyspark_catalog_ext.errors import CatalogConflictError, CatalogError, CatalogExtError

__all__ = ["NotificationSink"]

MAX_TABLES = 10_000  # per-table timestamps and validations remembered (LRU)
# The JVM's commit events: every commit through the catalog, whoever made it (SQL, DataFrame writes,
# maintenance procedures, the staging helpers), once, with `create` for a table's first commit.
_TRIGGER = ("jvm", "commit.finished", "committed")


class NotificationSink(events.QueuedSink):
    """An event sink that mirrors commits of Spark catalog `catalog` to another catalog."""

    def __init__(self, source: Any, mirror: Any, catalog: str, *, max_queue: int = 1000,
                 clock: Any = time.time) -> None:
        self.source = source  # the catalog the commits go to: load_table_json (a SparkCatalogReader or CatalogClient)
        self.mirror = mirror  # CatalogClient of the catalog to notify
        self.catalog = catalog
        self.clock = clock
        self._last_ts: LRUCache = LRUCache(MAX_TABLES)
        self._validated: LRUCache = LRUCache(MAX_TABLES)
        self._known: LRUCache = LRUCache(MAX_TABLES)  # table -> last payload (for DROP)
        self._lock = threading.Lock()
        super().__init__(max_queue)

    @classmethod
    def from_spark(cls, spark: Any, catalog: str, mirror_properties: Mapping[str, str], **kwargs: Any) -> NotificationSink:
        """Source = the session's Spark catalog `catalog`; mirror = Iceberg-style properties
        (`uri`, `warehouse`, `credential` or `token`, `header.*`)."""
        from pyspark_catalog_ext.catalog.rest import open_catalog
        from pyspark_catalog_ext.spark.catalog_reader import SparkCatalogReader
        from pyspark_catalog_ext.spark.jvm_events import connect

        connect(spark)  # the commit events come from the session's JVM

        source = SparkCatalogReader(spark, catalog)  # table loads through Spark's own catalog: no secret read back
        mirror = open_catalog(dict(mirror_properties), delegation="")  # no table data is read from the mirror
        return cls(source, mirror, catalog, **kwargs)

    def __repr__(self) -> str:
        return f"NotificationSink({self.catalog!r} -> {self.mirror.safe_uri!r})"

    # ---- event intake (cheap, on the emitting thread)
    def __call__(self, event: events.Event) -> None:
        if (event.source, event.type, event.fields.get("outcome")) == _TRIGGER \
                and str(event.fields.get("table", "")).startswith(self.catalog + "."):
            super().__call__(event)

    # ---- delivery (daemon thread)
    def deliver(self, event: events.Event) -> None:
        table = str(event.fields["table"])
        parts = table.split(".")[1:]
        ns, name = parts[:-1], parts[-1]
        loaded = self.source.load_table_json((*ns, name))
        metadata = loaded.get("metadata") or {}
        payload = {"table-name": name, "table-uuid": metadata.get("table-uuid"),
                   "metadata-location": loaded.get("metadata-location"), "metadata": metadata}
        with self._lock:
            validated = self._validated.get(table)
            first = table not in self._known
            self._known[table] = {k: v for k, v in payload.items() if k != "metadata"}
        if not validated:
            if not self._send(table, ns, name, "VALIDATE", payload):
                return
            with self._lock:
                self._validated[table] = True
        kind = "CREATE" if first and event.fields.get("create") else "UPDATE"
        self._send(table, ns, name, kind, payload)

    def notify_drop(self, table: str) -> bool:
        """Send DROP for `table` ("catalog.ns.t"), using what was last sent for it; synchronous."""
        parts = table.split(".")[1:]
        with self._lock:
            last = self._known.get(table)
        if last is None:
            events.emit("notification.finished", table=table, notification_type="DROP", outcome="failed",
                        error_class="UnknownTable")
            return False
        return self._send(table, parts[:-1], parts[-1], "DROP", dict(last))

    def _timestamp(self, table: str) -> int:
        with self._lock:
            ts = max(int(self.clock() * 1000), self._last_ts.get(table, 0) + 1)
            self._last_ts[table] = ts
            return ts

    def _send(self, table: str, ns: list[str], name: str, kind: str, payload: Mapping[str, Any]) -> bool:
        timestamp = self._timestamp(table)
        body = {"notification-type": kind, "payload": {**payload, "timestamp": timestamp}}
        path = f"/v1/{{prefix}}/namespaces/{quote(chr(0x1F).join(ns), safe='')}/tables/{quote(name, safe='')}/notifications"
        started = time.monotonic()
        fields = {"table": table, "notification_type": kind, "mirror": self.mirror.safe_uri}
        try:
            self.mirror.call("POST", path, json=body)
        except CatalogConflictError as exc:  # the mirror admitted a newer timestamp: retrying cannot help
            events.emit("notification.finished", **fields, outcome="stale", status=exc.status,
                        error_class=type(exc).__name__, duration_s=round(time.monotonic() - started, 3))
            return False
        except (CatalogError, CatalogExtError) as exc:  # `error`: the one line naming why (e.g. no such API)
            events.emit("notification.finished", **fields, outcome="failed", status=getattr(exc, "status", None),
                        error_class=type(exc).__name__, error=str(exc).splitlines()[0] if str(exc) else None,
                        duration_s=round(time.monotonic() - started, 3))
            return False
        events.emit("notification.finished", **fields, outcome="sent", timestamp=timestamp,
                    duration_s=round(time.monotonic() - started, 3))
        return True
