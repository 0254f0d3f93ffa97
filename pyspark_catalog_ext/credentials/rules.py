"""Rules about storage credentials both runtimes apply, read from the one spec they share
(`resources/credential-rules.json`; the JVM shim carries the same file and reads it with
`CredentialRules.java`): the hard margin, the S3 codes that mean expired keys, how long a missing
refresh endpoint is remembered."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["SPEC_PATH", "EXPIRY_CODES", "EXPIRY_STATUSES", "MISSING_ENDPOINT_FORGET_S", "hard_margin_s", "spec"]

SPEC_PATH = Path(__file__).resolve().parent.parent / "resources" / "credential-rules.json"


@lru_cache(maxsize=1)
def spec() -> dict[str, Any]:
    return json.loads(SPEC_PATH.read_text())


_MARGIN = spec()["hard-margin"]
#: S3 error codes by which S3 says the keys are no longer valid, and the statuses they come with.
EXPIRY_CODES: frozenset[str] = frozenset(spec()["s3-expiry"]["codes"])
EXPIRY_STATUSES: tuple[int, ...] = tuple(spec()["s3-expiry"]["statuses"])
#: How long a catalog's missing refresh endpoint is not asked again.
MISSING_ENDPOINT_FORGET_S: float = spec()["missing-endpoint"]["forget-after-ms"] / 1000.0


def hard_margin_s(fetched_at_s: float, expires_at_s: float) -> float:
    """How close to expiry a reader stops and waits for new keys: a quarter of the lifetime, at
    least 1 s and at most 10 s (10 s when the lifetime is unknown), as the shim's
    `CredentialRules.hardMarginMs` says."""
    lifetime = expires_at_s - fetched_at_s
    low, high = _MARGIN["min-ms"] / 1000.0, _MARGIN["max-ms"] / 1000.0
    return high if lifetime < 0 else max(low, min(high, lifetime / _MARGIN["lifetime-divisor"]))
