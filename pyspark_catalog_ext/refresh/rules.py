"""Rules about storage credentials both runtimes apply, read from the one spec they share
(`resources/credential-rules.json`; the JVM shim carries the same file and reads it with
`CredentialRules.java`): the hard margin, the S3 codes that mean expired keys, when to ask again after
a catalog's credential cache answered, how long a missing refresh endpoint is remembered.

Java twin: `io.catalogext.shim.config.CredentialRules`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["SPEC_PATH", "EXPIRY_CODES", "EXPIRY_STATUSES", "MISSING_ENDPOINT_FORGET_S", "SENDS_PER_CALL", "cache_window_end_s",
           "hard_margin_s", "spec"]

SPEC_PATH = Path(__file__).resolve().parent.parent / "resources" / "credential-rules.json"


@lru_cache(maxsize=1)
def spec() -> dict[str, Any]:
    return json.loads(SPEC_PATH.read_text())


_MARGIN = spec()["hard-margin"]
_CACHE = spec()["cache-window"]
#: S3 error codes by which S3 says the keys are no longer valid, and the statuses they come with.
EXPIRY_CODES: frozenset[str] = frozenset(spec()["s3-expiry"]["codes"])
EXPIRY_STATUSES: tuple[int, ...] = tuple(spec()["s3-expiry"]["statuses"])
#: How long a catalog's missing refresh endpoint is not asked again.
MISSING_ENDPOINT_FORGET_S: float = spec()["missing-endpoint"]["forget-after-ms"] / 1000.0
#: How many times one store request is sent at most with a table's keys; a rejection of the last is the caller's error.
SENDS_PER_CALL: int = spec()["sends-per-call"]["max"]


def hard_margin_s(fetched_at_s: float, expires_at_s: float) -> float:
    """How close to expiry a reader stops and waits for new keys: a quarter of the lifetime, at
    least 1 s and at most 10 s (10 s when the lifetime is unknown), as the shim's
    `CredentialRules.hardMarginMs` says."""
    lifetime = expires_at_s - fetched_at_s
    low, high = _MARGIN["min-ms"] / 1000.0, _MARGIN["max-ms"] / 1000.0
    return high if lifetime < 0 else max(low, min(high, lifetime / _MARGIN["lifetime-divisor"]))


def cache_window_end_s(fetched_at_s: float, expires_at_s: float, wait_at_s: float, now_s: float,
                       first_backoff_s: float, max_backoff_s: float) -> float:
    """When to ask again after a refresh answered with the keys fetched at `fetched_at_s` that expire
    at `expires_at_s` (inf: never) and that readers stop using at `wait_at_s`: the spec's cache
    window, bounded by the policy's first and longest backoffs, as the shim's
    `CredentialRules.cacheWindowEndMs` says."""
    if expires_at_s == float("inf"):
        return now_s + max_backoff_s
    share = _CACHE["share-of-life"]
    end = fetched_at_s + (expires_at_s - fetched_at_s) * share
    if end <= now_s:
        end = now_s + (expires_at_s - now_s) * share
    end += _CACHE["clock-slack"] * max(0.0, expires_at_s - fetched_at_s)
    soonest = now_s + min(first_backoff_s, max(0.0, expires_at_s - now_s) / 2)
    return max(soonest, min(end, wait_at_s))
