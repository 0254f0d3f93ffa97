"""Fast-expiry S3 proxy: makes access keys "expire" after N seconds, in front of SeaweedFS.

SeaweedFS refuses credential lifetimes under 900 s, so to exercise many refresh cycles in
seconds this proxy ages keys itself. It forwards every request untouched (``Host``
included, so SigV4 still verifies upstream) until the request's access key is older than
``max_age_seconds``; from then on it answers, without forwarding, with the same 403 XML
SeaweedFS sends for an unknown key (captured from SeaweedFS 4.48), or ``ExpiredToken``.

Age is measured from ``register_key(akid, issued_at)`` (the catalog proxy calls it when it
vends a key) or else from the first request the proxy saw with that key.

Keys that die early (each a plain attribute, effective immediately; the S3 error is the same):
  max_age_seconds = share * stated lifetime   after a fixed share of their stated lifetime
  random_death = (lo, hi), random_seed        each key dies at its own age, drawn once per key
                                              uniformly from [lo, hi] s (seeded: reproducible)
  every_key_dead = True                       every key is rejected from its first request on
  deny_paths = regex                          a request whose path matches gets 403 AccessDenied
                                              (a scope error: keys valid, the key outside them)
Keys the catalog states no lifetime for: CatalogProxy(state_lifetime=False) plus max_age_seconds.

Control API (all thread-safe, effective immediately):
  max_age_seconds    float | None   None = pass everything through
  error_code         "InvalidAccessKeyId" (SeaweedFS's own answer) | "ExpiredToken" | "InvalidToken"
                     | "TokenRefreshRequired"
  exempt             set of access keys never rejected (e.g. the admin key)
  register_key(akid, issued_at=None)
  forwarded, rejected (Counter per key), forwarded_by_key (Counter), total_rejected,
  log (last 10k requests: at, method, path, akid, status, expect, chunked, and for a refused
      request signed_age: the key's age when the client signed it, from X-Amz-Date), reset_counters()
  refusals_since(at)   the requests refused as expired since `at` (log entries)
"""
from __future__ import annotations

import random
import re
import secrets
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from email.utils import formatdate
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

from .base import ThreadedServer, drain_body, forward_streaming, send_response_head

ERRORS = {
    # Message texts as SeaweedFS 4.48 / AWS send them.
    "InvalidAccessKeyId": "The access key ID you provided does not exist in our records.",
    "ExpiredToken": "The provided token has expired.",
    "InvalidToken": "The provided token is malformed or otherwise invalid.",
    "TokenRefreshRequired": "The provided token must be refreshed.",
    "AccessDenied": "Access Denied",
}


def access_key_of(path: str, authorization: str | None) -> str | None:
    """Access key from a SigV4 ``Authorization`` header, a presigned ``X-Amz-Credential``
    query parameter, or a SigV2 ``AWS AKID:sig`` header. None for anonymous requests."""
    if authorization:
        if "Credential=" in authorization:
            return authorization.split("Credential=", 1)[1].split("/", 1)[0].strip()
        if authorization.startswith("AWS ") and ":" in authorization:
            return authorization[4:].split(":", 1)[0].strip()
    query = parse_qs(urlsplit(path).query)
    cred = query.get("X-Amz-Credential") or query.get("x-amz-credential")
    if cred:
        return cred[0].split("/", 1)[0]
    legacy = query.get("AWSAccessKeyId")
    return legacy[0] if legacy else None


def signed_at(path: str, headers) -> float | None:
    """When a SigV4 request was signed (whole seconds, from its X-Amz-Date header or query
    parameter), as a Unix time; None for anything else."""
    stamp = headers.get("X-Amz-Date") or (parse_qs(urlsplit(path).query).get("X-Amz-Date") or [None])[0]
    try:
        return datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc).timestamp()
    except (TypeError, ValueError):
        return None


class S3ExpiryProxy(ThreadedServer):
    def __init__(self, upstream: str, max_age_seconds: float | None = None,
                 exempt: Iterable[str] = (), error_code: str = "InvalidAccessKeyId",
                 port: int = 0, clock: Callable[[], float] = time.time):
        super().__init__(port)
        self.upstream = upstream.rstrip("/")
        self.max_age_seconds = max_age_seconds
        self.exempt = set(exempt)
        self.error_code = error_code
        self.clock = clock
        self.started_at = time.time()
        self._lock = threading.Lock()
        self._issued: dict[str, float] = {}
        self.forwarded = 0
        self.forwarded_by_key: Counter = Counter()
        self.rejected: Counter = Counter()
        self.log: deque = deque(maxlen=10_000)  # dicts: at, method, path, akid, status, expect, chunked
        self.get_delay_seconds = 0.0  # slow every GET down (makes a job outlive a lifetime)
        self.random_death: tuple[float, float] | None = None
        self.random_seed = 0
        self._death_age: dict[str, float] = {}
        self.every_key_dead = False
        self.deny_paths: str | None = None
        self.denied = 0
        self._judged_at = threading.local()  # set by a subclass that delays its check (see `now`)

    def now(self) -> float:
        """The time a request's keys are judged at: the clock, or the time a delaying subclass set for
        the request (its arrival plus the delay). A proxy thread that the busy test process wakes late
        must not age the keys of a request that arrived in time."""
        judged = getattr(self._judged_at, "value", None)
        return self.clock() if judged is None else judged

    # ---- control
    def register_key(self, akid: str, issued_at: float | None = None) -> None:
        """Tell the proxy when a key was issued (defaults to now)."""
        with self._lock:
            self._issued[akid] = self.clock() if issued_at is None else issued_at

    def issued_at(self, akid: str) -> float | None:
        with self._lock:
            return self._issued.get(akid)

    @property
    def total_rejected(self) -> int:
        with self._lock:
            return sum(self.rejected.values())

    def wait_until_unused(self, akid: str, quiet_s: float = 1.0, timeout_s: float = 60.0) -> None:
        """Return once no request signed with `akid` has arrived for `quiet_s`: a client's reads still
        in flight after its call raised (PyIceberg's shared thread pool finishes the files it started)
        must not reach the next test's checks. Raises AssertionError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            last = max((e["at"] for e in list(self.log) if e["akid"] == akid), default=None)
            if last is None or self.clock() - last >= quiet_s:
                return
            time.sleep(0.05)
        raise AssertionError(f"requests signed with {akid[:8]}... still arrive {timeout_s:.0f} s on")

    def refusals_since(self, at: float) -> list[dict]:
        """Requests refused as expired (not `deny_paths`) that reached the proxy at or after `at`."""
        return [e for e in list(self.log) if e["at"] >= at and "signed_age" in e]

    def signed_with_dying_keys(self, since: float, lifetime: float, issued_since: float | None = None) -> str | None:
        """What was refused since `since` although signed with keys in their hard margin (a failure message), or
        None. With `issued_since`, only keys issued from then on count: those of a client made then, not the
        stragglers of an earlier one. A request signed in time that a stalled thread sent after its keys died
        (seen only with CI's lanes loading the machine) is refused like any other and then run again with new
        keys, which the callers' exact rows prove; it is allowed, and named in the message. So is a signature
        late by no more than the longest stall this machine showed meanwhile: a renewal due in the margin cannot
        run while the machine gives its thread no time. A later one counts by its cause: after a renewal in time
        (`_renewed_in_time`) the caller was late, not the renewal; it is named in the message, and only a late
        renewal fails."""
        from pyspark_catalog_ext.refresh.rules import hard_margin_s

        refused = [e for e in self.refusals_since(since)
                   if issued_since is None or (self.issued_at(e["akid"]) or 0.0) >= issued_since]
        last_safe_age = lifetime - hard_margin_s(0.0, lifetime)
        stalled = STALLS.worst_since(max(since, self.started_at))
        late, in_flight, straggling = [], [], []
        late_keys: set = set()
        for e in refused:
            # X-Amz-Date holds whole seconds, rounded down: a signed age past the margin is certainly late.
            in_time = e["signed_age"] is not None and e["signed_age"] <= last_safe_age + stalled
            seen = (e["method"], e["path"][-50:], e["signed_age"])
            if in_time:
                in_flight.append(seen)
            elif self._renewed_in_time(e, last_safe_age + stalled):
                straggling.append(seen)
            else:
                late.append(seen)
                late_keys.add(e["akid"])
        if not late:
            return None
        return (f"signed with keys past {last_safe_age:.1f}s of age (+{stalled:.1f}s the machine stalled) although "
                f"no newer key was in use on that table by then: {late}; refused in flight: {in_flight}; "
                f"signed late after a renewal in time: {straggling}; "
                f"what those keys sent (age at arrival, method, path, status, signed age): {self._history(late_keys)}")

    def _history(self, akids: set) -> dict:
        """Each key's last 15 requests, for a failure message: when each reached the proxy (key age); and
        when the next keys were issued (at that key's age: a renewal on time, late, or none)."""
        out = {}
        for akid in akids:
            issued = self.issued_at(akid) or 0.0
            seen = [(round(e["at"] - issued, 2), e["method"], e["path"].split("?", 1)[0][-40:], e["status"],
                     None if e.get("signed_age") is None else round(e["signed_age"], 2))
                    for e in list(self.log) if e["akid"] == akid]
            with self._lock:
                later = sorted(round(at - issued, 2) for key, at in self._issued.items() if at > issued)[:5]
            out[str(akid)[:8]] = {"requests": seen[-15:], "next keys issued at": later}
        return out

    def _renewed_in_time(self, refused: dict, safe_age: float) -> bool:
        """Whether a key issued after the refused one signed a request on the same table (its path's first
        three segments) before the refused key reached `safe_age`. Then the renewal came in time and
        the caller was the late one: a thread the machine starved between taking its keys and signing,
        or a client's own retry of a call signed in time, which signs again with the keys it took."""
        issued = self.issued_at(refused["akid"])
        if issued is None:
            return False
        table = refused["path"].split("?", 1)[0].split("/")[:4]
        for e in list(self.log):
            newer = e["akid"] != refused["akid"] and (self.issued_at(e["akid"]) or 0.0) > issued
            if newer and e["at"] <= issued + safe_age and e["path"].split("?", 1)[0].split("/")[:4] == table:
                return True
        return False

    def reset_counters(self):
        with self._lock:
            self.forwarded = 0
            self.forwarded_by_key.clear()
            self.rejected.clear()
            self.log.clear()
            self.denied = 0

    def is_expired(self, akid: str | None) -> bool:
        if akid is None:
            return False
        with self._lock:  # first sight starts the clock, even while aging is off
            issued = self._issued.setdefault(akid, self.now())
        if akid in self.exempt:
            return False
        if self.every_key_dead:
            return True
        max_age = self.max_age_seconds
        if self.random_death is not None:
            with self._lock:
                if akid not in self._death_age:  # drawn once per key, from a seed: reproducible
                    rng = random.Random(f"{self.random_seed}:{len(self._death_age)}")
                    self._death_age[akid] = rng.uniform(*self.random_death)
                max_age = self._death_age[akid]
        if max_age is None:
            return False
        return self.now() - issued > max_age

    # ---- serving
    def handle(self, h):
        akid = access_key_of(h.path, h.headers.get("Authorization"))
        entry = {"at": self.clock(), "method": h.command, "path": h.path, "akid": akid, "status": None,
                 "expect": (h.headers.get("Expect") or "").lower() == "100-continue",
                 "chunked": "chunked" in (h.headers.get("Transfer-Encoding") or "").lower()}
        self.log.append(entry)
        if self.deny_paths and akid not in self.exempt and re.search(self.deny_paths, urlsplit(h.path).path):
            with self._lock:
                self.denied += 1
            entry["status"] = 403
            self._reject(h, "AccessDenied")
            return
        if self.is_expired(akid):
            with self._lock:
                self.rejected[akid] += 1
            signed, issued = signed_at(h.path, h.headers), self.issued_at(akid)
            entry["signed_age"] = None if signed is None or issued is None else signed - issued
            entry["status"] = 403
            self._reject(h)
            return
        with self._lock:
            self.forwarded += 1
            self.forwarded_by_key[akid] += 1
        if self.get_delay_seconds and h.command == "GET":
            time.sleep(self.get_delay_seconds)
        forward_streaming(h, self.upstream, on_status=lambda status: entry.__setitem__("status", status))

    def _reject(self, h, code: str | None = None):
        # Never tell an "Expect: 100-continue" client to send its body; otherwise read the
        # body so the keep-alive connection stays usable (as SeaweedFS does).
        if (h.headers.get("Expect") or "").lower() == "100-continue":
            h.close_connection = True
        else:
            drain_body(h)
        request_id = _request_id()
        body, has_bucket = self.error_body(h.path, request_id, code)
        headers = [("Accept-Ranges", "bytes"), ("Content-Length", str(len(body))),
                   ("Content-Type", "application/xml"), ("Server", "SeaweedFS 8000GB 4.48")]
        if has_bucket:
            headers.append(("Vary", "Origin"))
        headers += [("X-Amz-Request-Id", request_id), ("Date", formatdate(usegmt=True))]
        send_response_head(h, 403, "Forbidden", headers)
        if h.command != "HEAD":
            h.wfile.write(body)
        h.wfile.flush()

    def error_body(self, target: str, request_id: str, code: str | None = None) -> tuple[bytes, bool]:
        path = unquote(urlsplit(target).path)
        bucket, _, key = path.lstrip("/").partition("/")
        code = code or self.error_code
        xml = (f"<Error><Code>{code}</Code><Message>{ERRORS.get(code, code)}</Message>"
               f"<Resource>{escape(path)}</Resource><RequestId>{request_id}</RequestId>")
        if key:
            xml += f"<Key>{escape(key)}</Key>"
        if bucket:
            xml += f"<BucketName>{escape(bucket)}</BucketName>"
        xml += "</Error>"
        return ('<?xml version="1.0" encoding="UTF-8"?>\n' + xml).encode(), bool(bucket)


def _request_id() -> str:
    return secrets.token_hex(12).upper()


class StallMeter:
    """How late a thread that sleeps 50 ms wakes up, noted when over 0.1 s: the time a loaded machine
    took from every process (the JVM's renewal thread too). A daemon thread, started on import."""

    NAP_S = 0.05

    def __init__(self) -> None:
        self._stalls: deque = deque(maxlen=4096)  # (time.time() at wake-up, seconds late)
        threading.Thread(target=self._run, name="stall-meter", daemon=True).start()

    def _run(self) -> None:
        while True:
            started = time.monotonic()
            time.sleep(self.NAP_S)
            late = time.monotonic() - started - self.NAP_S
            if late > 0.1:
                self._stalls.append((time.time(), late))

    def worst_since(self, since: float) -> float:
        return max((late for at, late in list(self._stalls) if at >= since), default=0.0)


STALLS = StallMeter()
