"""Retry policy for catalog HTTP calls, UUIDv7 idempotency keys, ISO-8601 durations.

The policy only *decides* (may I retry? how long do I wait?); the catalog client drives the
loop, because only it knows whether a failed request may already have reached the server.
Clock and sleep are injectable so tests run with a fake clock and never really sleep.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import TypeAdapter, ValidationError

from pyspark_catalog_ext.backoff import exponential_backoff

__all__ = [
    "RETRYABLE_STATUSES",
    "SAFE_RETRY_STATUSES",
    "RetryPolicy",
    "uuid7",
    "uuid7_from_parts",
    "parse_retry_after",
    "parse_iso8601_duration",
]

#: HTTP statuses worth another attempt. Everything else (terminal 4xx, 500, 501) is final.
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})

#: Statuses by which the server tells us it did *not* apply the request, so even a
#: non-idempotent mutation may be retried. 502/504 come from a gateway that may have
#: forwarded the request, so for mutations they are ambiguous.
SAFE_RETRY_STATUSES = frozenset({429, 503})


@dataclass
class RetryPolicy:
    """Exponential backoff with full jitter, bounded by attempts and by total time.

    Args:
        max_attempts: total attempts including the first one (1 = no retries).
        base_delay: backoff before the 2nd attempt, in seconds (before jitter).
        max_delay: cap for one backoff step.
        total_timeout: no new attempt starts once this many seconds have passed since the
            first one, and no sleep would cross it.
        jitter: full jitter (uniform in [0, backoff]) when true; the plain backoff otherwise.
        retry_after_cap: longest `Retry-After` we honour (a server asking for an hour is not
            something a Spark driver should sit through).
        clock: monotonic clock in seconds; `sleep`: blocking sleep; `rng`: uniform [0, 1).
    """

    max_attempts: int = 5
    base_delay: float = 0.2
    max_delay: float = 5.0
    total_timeout: float = 60.0
    jitter: bool = True
    retry_after_cap: float = 30.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    rng: Callable[[], float] = field(default=random.random, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.base_delay < 0 or self.max_delay < 0 or self.total_timeout < 0:
            raise ValueError("delays and total_timeout must be >= 0")

    @classmethod
    def none(cls) -> RetryPolicy:
        """A policy that never retries."""
        return cls(max_attempts=1)

    def backoff(self, attempt: int) -> float:
        """Delay after failed attempt number `attempt` (1-based), jitter applied."""
        return exponential_backoff(attempt, self.base_delay, self.max_delay, 1.0 if self.jitter else 0.0,
                                   self.rng() if self.jitter else 0.0)

    def next_delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Delay before the next attempt: backoff, but at least the server's Retry-After (capped)."""
        delay = self.backoff(attempt)
        if retry_after is not None:
            delay = max(delay, min(max(0.0, retry_after), self.retry_after_cap))
        return delay

    def may_retry(self, attempt: int, started: float, delay: float) -> bool:
        """True when attempt `attempt` may be followed by another after sleeping `delay`."""
        if attempt >= self.max_attempts:
            return False
        return (self.clock() - started) + delay <= self.total_timeout


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or HTTP-date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


_DURATION = TypeAdapter(timedelta)  # pydantic parses ISO-8601 durations


def parse_iso8601_duration(value: str) -> float:
    """Seconds in an ISO-8601 duration such as `PT30M`, `PT1H30M`, `P1D`, `PT0.5S`.

    Years and months are rejected: their length is ambiguous and no catalog needs them
    for a key lifetime. Raises ValueError on anything else.
    """
    text = (value or "").strip().upper()
    date_part = text.split("T", 1)[0]
    if not text.startswith("P") or text.endswith("T") or "Y" in date_part or "M" in date_part:
        raise ValueError(f"not an ISO-8601 duration (PnDTnHnMnS): {value!r}")
    try:
        return _DURATION.validate_python(text).total_seconds()
    except ValidationError:
        raise ValueError(f"not an ISO-8601 duration (PnDTnHnMnS): {value!r}") from None


# UUIDv7 keys sort in creation order, which makes server logs and our evidence easy to read.
_uuid7_lock = threading.Lock()
try:  # the standard library's (Python >= 3.14), else the `uuid6` package: both monotonic per process
    from uuid import uuid7 as _uuid7_impl  # type: ignore[attr-defined]
except ImportError:
    from uuid6 import uuid7 as _uuid7_impl


def uuid7() -> uuid.UUID:
    """A fresh UUIDv7 (RFC 9562): 48-bit Unix ms timestamp, version 7, RFC variant, random.

    Monotonic within this process: a later call never returns a smaller UUID, even within
    the same millisecond (the lock keeps that true across threads).
    """
    with _uuid7_lock:
        return uuid.UUID(int=_uuid7_impl().int)


_RAND_MAX = (1 << 74) - 1


def uuid7_from_parts(unix_ms: int, rand: int) -> uuid.UUID:
    """Lay out a UUIDv7 from a Unix-ms timestamp and 74 random bits (rand_a 12 + rand_b 62)."""
    ms = unix_ms & ((1 << 48) - 1)
    rand &= _RAND_MAX
    rand_a = rand >> 62
    rand_b = rand & ((1 << 62) - 1)
    return uuid.UUID(int=(ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b)
