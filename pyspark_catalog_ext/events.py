"""Structured events at every operation boundary, delivered to sinks that can never block or
fail a job: `subscribe(print)`, `subscribe(JsonLinesSink(path))`, `subscribe(WebhookSink(url))`.

Every event is a flat JSON object (`type`, `time`, `seq`, `source` and its fields); secrets are never
put in, and every string value passes `errors.redact`. Events come from this process and from the
JVM shim (`spark.jvm_events`). Plain callables run on the emitting thread, a raising one is counted
(`stats()["errors"]`); I/O sinks drain their own bounded queue on a daemon thread, and a full queue
drops the event and counts it.

Why: docs/events.md, section 'Event hooks and change notifications'.
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.errors import ConfigError, redact

__all__ = ["Event", "NULL", "subscribe", "unsubscribe", "emit", "deliver", "stats", "add_source", "remove_source_pull", "set_check",
           "JsonLinesSink", "WebhookSink", "QueuedSink"]

log = logging.getLogger(__name__)
_SEQ = itertools.count(1)
_LOCK = threading.Lock()
_SUBSCRIBERS: list[Callable[[Event], Any]] = []
_ERRORS = {"count": 0}
# Called before each emit, to bring in what happened elsewhere first (the JVM's events), so the
# stream stays in the order things happened.
_BEFORE_EMIT: list[Callable[[], Any]] = []
_SOURCE_STATS: dict[str, Callable[[], Any]] = {}
_IN_HOOK = threading.local()
# The test hook (`set_check`): sees every event before the sinks do.
_CHECK: list[Callable[[Event, str], Any]] = []


@dataclass(frozen=True)
class Event:
    """One event: `type` such as "commit.finished", and its fields."""

    type: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)
    seq: int = field(default_factory=lambda: next(_SEQ))

    @property
    def source(self) -> str:
        """"python" for events of this process, "jvm" for those of the Spark driver's JVM."""
        return str(self.fields.get("source", "python"))

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "time": self.time, "seq": self.seq, "source": "python", **self.fields}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), default=str, separators=(",", ":"))


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def subscribe(sink: Callable[[Event], Any]) -> Callable[[Event], Any]:
    """Deliver every later event to `sink` (a callable taking an `Event`); returns it."""
    with _LOCK:
        if sink not in _SUBSCRIBERS:
            _SUBSCRIBERS.append(sink)
    return sink


def unsubscribe(sink: Callable[[Event], Any]) -> None:
    """Stop delivering to `sink` (closing it if it has `close()`)."""
    with _LOCK:
        if sink in _SUBSCRIBERS:
            _SUBSCRIBERS.remove(sink)
    close = getattr(sink, "close", None)
    if callable(close):
        close()


#: A field value that is kept as JSON null (a plain None drops the field): for fields the schema
#: says are always present and null when unknown, as the JVM's events carry them.
NULL: Any = object()


def emit(type_: str, **fields: Any) -> Event:
    """Publish an event. Never raises and never waits on a sink's I/O. A None field is left out;
    `NULL` keeps it, as null."""
    _run_before_emit()
    return _fan_out(Event(type_, {k: None if v is NULL else _clean(v) for k, v in fields.items() if v is not None}),
                    "python")


def set_check(check: Callable[[Event, str], Any] | None) -> None:
    """Test hook: `check(event, runtime)` sees every event published (`runtime`: "python" for `emit`,
    the event's `source` for `deliver`) before any sink, on the publishing thread; None removes it.
    The test suite holds every event to resources/event-schemas.json with it (tests/conftest.py).
    Its exceptions are the checker's own business: they propagate."""
    _CHECK[:] = [check] if check is not None else []


def _run_before_emit() -> None:
    if getattr(_IN_HOOK, "active", False):
        return
    _IN_HOOK.active = True
    try:
        for hook in list(_BEFORE_EMIT):
            try:
                hook()
            except Exception as exc:  # a hook must not break the job either
                log.debug("event hook %r failed: %s", hook, type(exc).__name__)
    finally:
        _IN_HOOK.active = False


def deliver(event: Event) -> Event:
    """Hand a ready-made event (e.g. one from the JVM, with its own time) to every subscriber. Its
    null fields stay null: the JVM writes a field as null where the schema says it is always present."""
    return _fan_out(Event(event.type, {k: _clean(v) for k, v in event.fields.items()},
                          event.time, event.seq), event.source)


def _fan_out(event: Event, runtime: str) -> Event:
    for check in list(_CHECK):
        check(event, runtime)
    with _LOCK:
        sinks = list(_SUBSCRIBERS)
    for sink in sinks:
        try:
            sink(event)
        except Exception as exc:  # a broken listener must not break the job
            with _LOCK:
                _ERRORS["count"] += 1
            log.debug("event sink %r failed: %s", sink, type(exc).__name__)
    return event


def stats() -> dict[str, Any]:
    """Errors raised by callables, each queued sink's sent/dropped/failed counts, and what the JVM
    side received, lost or dropped (`jvm`, once `attach()` connected it)."""
    with _LOCK:
        sinks = list(_SUBSCRIBERS)
        errors = _ERRORS["count"]
        sources = dict(_SOURCE_STATS)
    return {"errors": errors, "sinks": {repr(s): s.stats() for s in sinks if isinstance(s, QueuedSink)},
            **{name: source() for name, source in sources.items()}}


def add_source(name: str, pull: Callable[[], Any], stats: Callable[[], Any]) -> None:
    """A producer of events from elsewhere (the JVM's): `pull()` runs before each `emit` so what it
    has happened before the emitted event is published first; `stats()` appears in `stats()[name]`."""
    with _LOCK:
        if pull not in _BEFORE_EMIT:
            _BEFORE_EMIT.append(pull)
        _SOURCE_STATS[name] = stats


def remove_source_pull(pull: Callable[[], Any]) -> None:
    """Stop running `pull` before each `emit` (its stats stay)."""
    with _LOCK:
        if pull in _BEFORE_EMIT:
            _BEFORE_EMIT.remove(pull)


class _Dropped(Exception):
    """A sink declined an event by its own bound (counted as dropped, not failed)."""


class QueuedSink:
    """Base of sinks doing I/O: a bounded queue and one daemon thread calling `deliver(event)`."""

    def __init__(self, max_queue: int = 1000) -> None:
        self._queue: queue.Queue[Event | None] = queue.Queue(maxsize=max_queue)
        self._counts = {"sent": 0, "dropped": 0, "failed": 0}
        self._count_lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._drain, name=f"pce-events-{type(self).__name__}", daemon=True)
        self._thread.start()

    def __call__(self, event: Event) -> None:
        if self._closed:
            self._count("dropped")
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:  # never wait: the job comes first
            self._count("dropped")

    def _count(self, key: str) -> None:
        with self._count_lock:
            self._counts[key] += 1

    def stats(self) -> dict[str, int]:
        with self._count_lock:
            return dict(self._counts, queued=self._queue.qsize())

    def _drain(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                self.deliver(event)
                self._count("sent")
            except _Dropped:
                self._count("dropped")
            except Exception as exc:
                self._count("failed")
                log.warning("event sink %s dropped event %s after failing: %s", type(self).__name__,
                            event.type if event is not None else "?",
                            redact(str(exc))[:200])
            finally:
                self._queue.task_done()

    def deliver(self, event: Event) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait (bounded) until the queue is empty; True if it is."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)  # Queue.join() has no timeout
        return not self._queue.unfinished_tasks

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting events, deliver what is queued (bounded), stop the thread."""
        self._closed = True
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)


def _http_url_problem(url: str) -> str | None:
    """Why `url` is not an http(s) URL with a host and no userinfo (never repeating it: it may hold
    a secret), or None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(str(url).strip())
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return "not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return f"not an http(s) URL (scheme {parts.scheme or 'missing'!r})"
    if "@" in parts.netloc:
        return "a URL with userinfo (user@host) is refused: pass credentials as headers"
    return None if parts.hostname else "the URL has no host"


DEFAULT_JSONL_MAX_BYTES = 64 << 20  # the JVM's catalog-ext.events.jsonl-max-bytes default


class JsonLinesSink(QueuedSink):
    """Appends one JSON object per line to `path` (the format the JVM side writes too). Like the
    JVM's file, it stops writing at `max_bytes` and counts the events it then drops."""

    def __init__(self, path: str | Path, max_queue: int = 10_000, max_bytes: int = DEFAULT_JSONL_MAX_BYTES) -> None:
        if not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ConfigError(f"JsonLinesSink max_bytes must be a positive number of bytes, got {max_bytes!r}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(max_queue)

    def deliver(self, event: Event) -> None:
        line = (event.to_json() + "\n").encode("utf-8")
        with open(self.path, "ab") as fh:
            if fh.tell() + len(line) > self.max_bytes:
                raise _Dropped  # whole lines only: a full file keeps every line it has
            fh.write(line)


class WebhookSink(QueuedSink):
    """POSTs each event as JSON to `url`, retrying transport errors, 429 and 5xx with exponential
    backoff (tenacity), at most `attempts` times within `max_seconds`; then counts it as failed.
    Its `headers` (often a secret) go to `url` only: it is the one URL the sink sends to, and it
    follows no redirect (a 3xx would carry the event and the headers elsewhere)."""

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 5.0,
                 attempts: int = 4, max_seconds: float = 30.0, max_queue: int = 1000) -> None:
        import requests

        problem = _http_url_problem(url)
        if problem:
            raise ConfigError(f"WebhookSink url: {problem}; expected http(s)://host[:port]/path")
        self.url = url
        self.timeout = timeout
        self.attempts = attempts
        self.max_seconds = max_seconds
        self._session = requests.Session()
        self._session.headers.update({"Content-Type": "application/json", **dict(headers or {})})
        super().__init__(max_queue)

    def __repr__(self) -> str:
        return f"WebhookSink({redact(self.url)!r})"

    def deliver(self, event: Event) -> None:
        import requests
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_random_exponential

        def transient(exc: BaseException) -> bool:
            if isinstance(exc, requests.HTTPError) and exc.response is not None:
                return exc.response.status_code == 429 or exc.response.status_code >= 500
            return isinstance(exc, requests.RequestException)

        for attempt in Retrying(stop=stop_after_attempt(self.attempts) | stop_after_delay(self.max_seconds),
                                wait=wait_random_exponential(multiplier=0.2, max=5), retry=retry_if_exception(transient),
                                reraise=True):
            with attempt:
                resp = self._session.post(self.url, data=event.to_json(), timeout=self.timeout, allow_redirects=False)
                if 300 <= resp.status_code < 400:
                    raise ValueError(f"the webhook answered HTTP {resp.status_code} (a redirect); set its final URL")
                resp.raise_for_status()
