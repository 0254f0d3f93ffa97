"""Keys that die before the lifetime the catalog states, a scope refusal, and servers on another clock.

`EarlyRejectionS3Proxy` is the slowed fast-expiry S3 proxy where a key dies after a share of
``max_age_seconds`` (the lifetime the catalog proxy states): a fixed ``share``, or one drawn per key
from ``random_shares=(low, high)`` (seeded), or 0 for keys dead from the start. Paths under
``deny_prefixes`` ("bucket/key-prefix") are answered 403 AccessDenied whatever the key: a refusal
for scope, which new keys cannot fix. ``clock`` (as the base class's) puts it on another clock.

`CatalogProxyWithoutExpiry` vends keys without ``s3.session-token-expires-at-ms`` (still registered
with the S3 proxy, which ages them). `SkewedCatalogProxy` runs on a clock ``skew_seconds`` off the
local one: its expiries and its ``Date`` header both.
"""
from __future__ import annotations

import random
import threading
import time
from collections import Counter
from email.utils import formatdate
from urllib.parse import unquote, urlsplit

from .base import Request, Response, forward_streaming
from .catalog_proxy import CatalogProxy
from .s3_expiry_proxy import ERRORS, access_key_of
from .slow_s3_proxy import SlowS3ExpiryProxy


class EarlyRejectionS3Proxy(SlowS3ExpiryProxy):
    def __init__(self, *args, share: float = 1.0, random_shares: tuple[float, float] | None = None, seed: int = 7,
                 deny_prefixes: tuple[str, ...] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.share = share
        self.random_shares = random_shares
        self.deny_prefixes = set(deny_prefixes)
        self._rng = random.Random(seed)
        self._shares: dict[str, float] = {}
        self._codes_lock = threading.Lock()
        self.rejected_codes: Counter = Counter()  # code -> refusals sent
        # code -> (access key, when it was issued) refused with it: a catalog may vend the same key again
        self.rejected_keys: dict[str, set[tuple[str, float | None]]] = {}
        self._active = 0
        self.peak_active = 0  # the most requests handled at once (reset it to measure a window)

    def share_of(self, akid: str) -> float:
        with self._codes_lock:
            if self.random_shares is None:
                return self.share
            if akid not in self._shares:
                self._shares[akid] = self._rng.uniform(*self.random_shares)
            return self._shares[akid]

    def is_expired(self, akid: str | None) -> bool:
        if akid is None:
            return False
        with self._lock:  # first sight starts the clock, even while aging is off
            issued = self._issued.setdefault(akid, self.now())
        if self.max_age_seconds is None or akid in self.exempt:
            return False
        return self.now() - issued > self.max_age_seconds * self.share_of(akid)

    def _denied(self, target: str) -> bool:
        path = unquote(urlsplit(target).path).lstrip("/")
        return any(path.startswith(p) for p in self.deny_prefixes)

    def handle(self, h):
        with self._codes_lock:
            self._active += 1
            self.peak_active = max(self.peak_active, self._active)
        self._judged_at.value = self.clock() + self.delay_seconds
        try:
            self._handle(h)
        finally:
            self._judged_at.value = None
            with self._codes_lock:
                self._active -= 1

    def _handle(self, h):
        # The base class's handling, with the refusal decided once and counted by code.
        if self.delay_seconds > 0:
            time.sleep(self.delay_seconds)
        akid = access_key_of(h.path, h.headers.get("Authorization"))
        entry = {"at": self.clock(), "method": h.command, "path": h.path, "akid": akid, "status": None,
                 "expect": (h.headers.get("Expect") or "").lower() == "100-continue",
                 "chunked": "chunked" in (h.headers.get("Transfer-Encoding") or "").lower(),
                 "payload_hash": h.headers.get("X-Amz-Content-SHA256"), "crc32": h.headers.get("x-amz-checksum-crc32")}
        self.log.append(entry)
        denied = self._denied(h.path) and akid not in self.exempt
        if denied or self.is_expired(akid):
            code = "AccessDenied" if denied else self.error_code
            with self._lock:
                self.rejected[akid] += 1
            with self._codes_lock:
                self.rejected_codes[code] += 1
                self.rejected_keys.setdefault(code, set()).add((akid or "", self.issued_at(akid or "")))
            entry["status"] = 403
            self._reject(h)
            return
        with self._lock:
            self.forwarded += 1
            self.forwarded_by_key[akid] += 1
        forward_streaming(h, self.upstream, on_status=lambda status: entry.__setitem__("status", status))

    def error_body(self, target: str, request_id: str, code: str | None = None) -> tuple[bytes, bool]:
        xml, has_bucket = super().error_body(target, request_id, code)
        if not self._denied(target):
            return xml, has_bucket
        # The same XML with the scope refusal's code and message.
        xml = xml.replace(f"<Code>{self.error_code}</Code>".encode(), b"<Code>AccessDenied</Code>")
        xml = xml.replace(f"<Message>{ERRORS.get(self.error_code, self.error_code)}</Message>".encode(),
                          b"<Message>Access Denied.</Message>")
        return xml, has_bucket


class CatalogProxyWithoutExpiry(CatalogProxy):
    """Vends keys with no stated expiry (as Unity 0.6 does); pass `short_lifetime_seconds` so the S3
    proxy still learns when each key was issued."""

    def _rewrite_credential(self, config: dict, now: float) -> None:
        super()._rewrite_credential(config, now)
        config.pop("s3.session-token-expires-at-ms", None)


class SkewedCatalogProxy(CatalogProxy):
    """A catalog whose clock is `skew_seconds` off ours: the expiries it states and its Date header."""

    def __init__(self, *args, skew_seconds: float = 0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.skew_seconds = skew_seconds
        self.clock = lambda: time.time() + self.skew_seconds

    def process(self, req: Request) -> Response:
        resp = super().process(req)
        headers = [(k, v) for k, v in resp.headers if k.lower() != "date"]
        headers.append(("Date", formatdate(self.clock(), usegmt=True)))
        return Response(resp.status, headers, resp.body, resp.reason)
