"""Idempotency-Key values (UUIDv7) and the ISO-8601 lifetimes catalogs advertise for them.

Java twin: `io.catalogext.shim.commit.IdempotencyKeys`.
"""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

from pydantic import TypeAdapter, ValidationError

__all__ = ["uuid7", "uuid7_from_parts", "parse_iso8601_duration"]

_DURATION = TypeAdapter(timedelta)  # pydantic parses ISO-8601 durations, weeks (Lakekeeper's P1W) included


def parse_iso8601_duration(value: str) -> float:
    """Seconds in an ISO-8601 duration such as `PT30M`, `PT1H30M`, `P1D`, `P1W`, `PT0.5S`.

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
