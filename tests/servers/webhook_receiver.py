"""A webhook endpoint on loopback that records POSTed JSON bodies, with scripted answers
(``statuses``: the next answers, e.g. [503, 503] then 200), an optional per-request delay, and
``redirect_to``: answer every POST with 307 to that URL (a receiver that moved, or a trap)."""
from __future__ import annotations

import collections
import json
import threading
import time
from collections import deque

from .base import ThreadedServer, read_request_body, send_response_head


class WebhookReceiver(ThreadedServer):
    def __init__(self, port: int = 0):
        super().__init__(port)
        self._lock = threading.Lock()
        self.received: list[dict] = []  # accepted bodies, in arrival order
        self.attempts = 0  # every POST, refused ones included
        self.statuses: deque[int] = deque()
        self.delay_seconds = 0.0
        self.redirect_to: str | None = None
        self.headers_seen: list[dict[str, str]] = []
        self.attempted_types: list[str] = []  # the event type of every POST, refused ones included
        # Answers for one event type only (other events, e.g. the JVM's from earlier tests, get 200).
        self.statuses_by_type: dict[str, collections.deque] = {}

    def handle(self, h):
        body = read_request_body(h)
        with self._lock:
            self.attempts += 1
            self.headers_seen.append(dict(h.headers.items()))
            try:
                type_ = str(json.loads(body).get("type", ""))
            except ValueError:
                type_ = ""
            self.attempted_types.append(type_)
            scripted = self.statuses_by_type.get(type_)
            status = scripted.popleft() if scripted else self.statuses.popleft() if self.statuses else 200
        if self.redirect_to:
            send_response_head(h, 307, "Temporary Redirect", [("Location", self.redirect_to), ("Content-Length", "0")])
            h.wfile.flush()
            return
        if self.delay_seconds:
            self._stopping.wait(self.delay_seconds)
        if status < 300:
            with self._lock:
                self.received.append(json.loads(body))
        send_response_head(h, status, "OK" if status < 300 else "Error", [("Content-Length", "0")])
        h.wfile.flush()

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.received) >= n:
                    return list(self.received)
            time.sleep(0.02)
        with self._lock:
            return list(self.received)
