"""Brings the JVM shim's events into Python's event stream (`pce.events`), for one SparkSession.

One thing is read over Py4J, small and bounded: `ShimJvm.drain_events_after(seq)` (the shim's EventLog), the
JVM's own events (every stage-create and commit request with its outcome, every credential refresh
with its strategy and next refresh; `source: "jvm"`), re-published with their JVM time; events the
JVM's ring dropped before we read them are counted as `lost`.

Pulls happen before every Python event (so the stream keeps the order things happened in) and
every `interval_s` on a daemon thread; what nobody subscribed to is read and let go, so a new
subscriber sees events from then on.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pyspark_catalog_ext import events
from pyspark_catalog_ext.spark.shim_api import ShimJvm

log = logging.getLogger(__name__)

_BRIDGES: dict[int, JvmEvents] = {}
_LOCK = threading.Lock()


class JvmEvents:
    """The event bridge of one SparkContext's driver JVM."""

    def __init__(self, spark: Any, interval_s: float = 1.0) -> None:
        self._shim = ShimJvm(spark)
        self._sc = spark.sparkContext
        self._lock = threading.RLock()
        self._last_seq = 0
        self.counts = {"received": 0, "lost": 0, "pull_errors": 0}
        self._stop = threading.Event()
        self._interval_s = interval_s
        self._thread = threading.Thread(target=self._run, name="pce-jvm-events", daemon=True)

    def start(self) -> JvmEvents:
        events.add_source("jvm", self.pull, stats)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        events.remove_source_pull(self.pull)

    @property
    def alive(self) -> bool:
        return not self._stop.is_set() and self._sc._jsc is not None

    def pull(self) -> None:
        """Publish what happened in the JVM since the last pull. Never raises."""
        if not self.alive:
            return
        # Wait (briefly) for another thread's pull: what it publishes happened before our event.
        if not self._lock.acquire(timeout=2.0):
            return
        try:
            self._pull_events()
        except Exception as exc:  # a stopped SparkContext, a Py4J hiccup: never the job's problem
            self.counts["pull_errors"] += 1
            log.debug("JVM event pull failed: %s", type(exc).__name__)
        finally:
            self._lock.release()

    def _run(self) -> None:
        # Ends with the SparkContext (or stop()); a daemon, so it never holds the process.
        while not self._stop.wait(self._interval_s) and self.alive:
            self.pull()
        self.stop()

    def _pull_events(self) -> None:
        batch = self._shim.drain_events_after(self._last_seq)
        self.counts["lost"] += batch.lost
        for jvm_event in batch.events:
            self._last_seq = max(self._last_seq, jvm_event.seq)
            events.deliver(events.Event(jvm_event.type, {**jvm_event.fields, "jvm_seq": self._last_seq},
                                        time=jvm_event.time))
            self.counts["received"] += 1

def connect(spark: Any, interval_s: float = 1.0) -> JvmEvents:
    """Start (once per SparkContext) bringing the JVM's events into `pce.events`."""
    key = id(spark.sparkContext._jsc)
    with _LOCK:
        bridge = _BRIDGES.get(key)
        if bridge is None or not bridge.alive:
            if bridge is not None:
                bridge.stop()
            bridge = _BRIDGES[key] = JvmEvents(spark, interval_s).start()
    return bridge


def stats() -> dict[str, int] | None:
    """Counts of the live bridge (received, lost, pull errors), if any."""
    with _LOCK:
        live = [b for b in _BRIDGES.values() if b.alive]
    if not live:
        return None
    out: dict[str, int] = {}
    for bridge in live:
        for key, value in bridge.counts.items():
            out[key] = out.get(key, 0) + value
    return out
