"""The event stream: structured events at every operation boundary (`bus`), and the bridge that
brings the Spark driver JVM's events into it (`jvm`). See `bus` for the event shape and delivery.

    import pyspark_catalog_ext as pce
    pce.events.subscribe(pce.events.JsonLinesSink("/var/log/pce-events.jsonl"))
"""

from pyspark_catalog_ext.events.bus import (
    Event,
    JsonLinesSink,
    QueuedSink,
    WebhookSink,
    add_source,
    deliver,
    emit,
    remove_source_pull,
    stats,
    subscribe,
    unsubscribe,
)

__all__ = [
    "Event",
    "JsonLinesSink",
    "QueuedSink",
    "WebhookSink",
    "add_source",
    "deliver",
    "emit",
    "remove_source_pull",
    "stats",
    "subscribe",
    "unsubscribe",
]
