"""Reference ``Idempotency-Key`` server: the Iceberg REST spec semantics, in front of a
catalog that has none (SeaweedFS).

What it does (spec: open-api/rest-catalog-open-api.yaml, parameter ``idempotency-key`` and
``CatalogConfig.idempotency-key-lifetime``):

* ``GET /v1/config`` 200 answers gain a top-level ``"idempotency-key-lifetime": lifetime``.
* A mutation (POST/PUT/PATCH/DELETE, except ``/v1/oauth/tokens``) carrying
  ``Idempotency-Key``:
    - first use: the key is reserved (in flight) with a fingerprint of the request
      (method, path, canonical JSON body), then the request is forwarded;
    - the answer is finalized and stored when it is 2xx or a terminal 4xx; it is NOT
      finalized (key released, a retry runs again) for 5xx, connection failures and the
      transient 4xx in ``NOT_FINAL_4XX`` (401, 408, 419, 429);
    - a later request with a finalized key and the same fingerprint gets the stored answer
      without touching the catalog, marked ``Idempotent-Replayed: true``;
    - same key, different fingerprint (other operation or resource): 422;
    - same key while the first is still in flight: ``in_flight_policy="wait"`` (default)
      waits for the first to finish, then replays its final answer (or, if it was not
      finalized, runs itself); ``"conflict"`` answers 409 at once (the IETF
      draft-ietf-httpapi-idempotency-key-header behaviour). The Iceberg spec only requires
      "no additional effects", which both satisfy.
* Keys are forgotten ``lifetime + grace`` after first use.

Limit, stated plainly: this is a proxy, so "applied upstream but the upstream connection
broke" is indistinguishable from "not applied"; such a key is released (like a 5xx). A real
catalog records the key in the same transaction as the commit. Put faults *in front* of
this proxy (its own ``faults``, or a ``CatalogProxy`` upstream of it) to model lost
responses, which is what clients actually see.

Control/evidence: ``lifetime``, ``in_flight_policy``, ``wait_timeout``, ``entries()``,
``replays``, ``executions``, ``mismatches``, ``conflicts``, ``forget()``, plus everything in
``BufferedProxy`` (faults, log, counts).
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field

from .base import BufferedProxy, Request, Response

MUTATIONS = {"POST", "PUT", "PATCH", "DELETE"}
NOT_FINAL_4XX = {401, 408, 419, 429}
REPLAY_HEADER = "Idempotent-Replayed"


def parse_iso_duration(text: str) -> float:
    """Seconds in a simple ISO-8601 duration such as PT30M, PT24H, P1D, PT1H30M10S."""
    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text)
    if not m or text in ("P", "PT"):
        raise ValueError(f"unsupported ISO-8601 duration {text!r}")
    d, h, mi, s = m.groups()
    return int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)


def fingerprint(req: Request) -> str:
    try:
        body = json.dumps(json.loads(req.body), sort_keys=True, separators=(",", ":")).encode()
    except ValueError:
        body = req.body
    h = hashlib.sha256(f"{req.method} {req.path}\n".encode())
    h.update(body)
    return h.hexdigest()


def is_final(status: int) -> bool:
    return 200 <= status < 300 or (400 <= status < 500 and status not in NOT_FINAL_4XX)


@dataclass
class Entry:
    fingerprint: str
    created: float
    response: Response | None = None  # set once finalized
    done: threading.Event = field(default_factory=threading.Event)


class IdempotencyProxy(BufferedProxy):
    def __init__(self, upstream: str, *, lifetime: str = "PT30M", grace_seconds: float = 60,
                 in_flight_policy: str = "wait", wait_timeout: float = 120, port: int = 0):
        super().__init__(upstream, port)
        self.lifetime = lifetime
        self.grace_seconds = grace_seconds
        self.in_flight_policy = in_flight_policy
        self.wait_timeout = wait_timeout
        self.clock = time.time
        self._keys: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self.replays = 0
        self.executions = 0  # keyed requests actually forwarded to the catalog
        self.mismatches = 0  # 422s
        self.conflicts = 0  # 409 in-flight answers (policy "conflict")

    # ---- control / evidence
    def entries(self) -> dict[str, int | None]:
        """key -> finalized status (None while in flight)."""
        with self._lock:
            return {k: (e.response.status if e.response else None) for k, e in self._keys.items()}

    def forget(self, key: str | None = None):
        with self._lock:
            if key is None:
                self._keys.clear()
            else:
                self._keys.pop(key, None)

    def classify(self, req: Request):
        if req.route == "/v1/config":
            return "config", None
        key = req.header("Idempotency-Key")
        return ("keyed-mutation" if key and req.method in MUTATIONS else "other"), None

    # ---- processing
    def process(self, req: Request) -> Response:
        if req.route == "/v1/config" and req.method == "GET":
            resp = self.forward(req)
            data = resp.json() if resp.status == 200 else None
            if isinstance(data, dict) and self.lifetime:
                data["idempotency-key-lifetime"] = self.lifetime
                resp = resp.with_json(data)
            return resp
        key = req.header("Idempotency-Key")
        if not key or req.method not in MUTATIONS or req.route == "/v1/oauth/tokens":
            return self.forward(req)
        return self._keyed(req, key)

    def _keyed(self, req: Request, key: str) -> Response:
        fp = fingerprint(req)
        deadline = time.monotonic() + self.wait_timeout
        while True:
            with self._lock:
                self._expire_locked()
                entry = self._keys.get(key)
                if entry is None:  # first use: reserve
                    entry = self._keys[key] = Entry(fp, self.clock())
                    owner = True
                else:
                    owner = False
                    if entry.fingerprint != fp:
                        self.mismatches += 1
                        return Response.iceberg_error(
                            422, "UnprocessableEntityException",
                            "Idempotency-Key was already used for a different request")
                    if entry.response is not None:
                        self.replays += 1
                        return _replay(entry.response)
                    if self.in_flight_policy == "conflict":
                        self.conflicts += 1
                        return Response.iceberg_error(
                            409, "IdempotencyKeyInProgressException",
                            "a request with this Idempotency-Key is in progress")
            if owner:
                return self._execute(req, key, entry)
            # wait for the owner, then look again (replay, or run ourselves if released)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._stopping.is_set():
                return Response.iceberg_error(503, "ServiceUnavailableException",
                                              "timed out waiting for the in-flight request")
            entry.done.wait(min(remaining, 0.5))

    def _execute(self, req: Request, key: str, entry: Entry) -> Response:
        resp = None
        try:
            with self._lock:
                self.executions += 1
            resp = self.forward(req)
            return resp
        finally:
            with self._lock:
                if resp is not None and is_final(resp.status):
                    entry.response = resp
                else:  # never finalize 5xx / transient 4xx / broken upstream: release
                    if self._keys.get(key) is entry:
                        del self._keys[key]
            entry.done.set()

    def _expire_locked(self):
        horizon = self.clock() - (parse_iso_duration(self.lifetime) + self.grace_seconds)
        for k in [k for k, e in self._keys.items() if e.response is not None and e.created < horizon]:
            del self._keys[k]


def _replay(resp: Response) -> Response:
    headers = [(k, v) for k, v in resp.headers if k.lower() not in ("date", REPLAY_HEADER.lower())]
    return Response(resp.status, headers + [(REPLAY_HEADER, "true")], resp.body, resp.reason)
