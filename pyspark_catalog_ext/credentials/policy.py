"""The refresh policy: renew when less than max(min_ahead, fraction x lifetime) remains.

The JVM shim reads it as the `catalog-ext.refresh.*` catalog properties (io.catalogext.shim.RefreshPolicy);
PyIceberg's refresher (`pyiceberg_ext`) applies it in Python.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pyspark_catalog_ext import knobs


def _default_s(knob: str) -> float:
    return knobs.read_int({}, f"catalog-ext.refresh.{knob}") / 1000.0


@dataclass(frozen=True)
class RefreshPolicy:
    """Renew when less than max(min_ahead, fraction x lifetime) remains.

    Defaults follow Delta Sharing's driver cache: check every 60 s, renew well before expiry.
    """

    # Defaults: the knob spec's `catalog-ext.refresh.*` (the JVM's too), in seconds.
    check_interval_s: float = _default_s("check-interval-ms")
    min_ahead_s: float = _default_s("min-ahead-ms")
    lifetime_fraction: float = knobs.read_fraction({}, "catalog-ext.refresh.lifetime-fraction")
    initial_backoff_s: float = _default_s("initial-backoff-ms")
    max_backoff_s: float = _default_s("max-backoff-ms")
    timeout_s: float = _default_s("timeout-ms")  # one refresh attempt (catalog call, user source, executor waiting on the driver)
    # Keys vended without an expiry count as expiring this long after their fetch (0: never).
    assumed_lifetime_s: float = _default_s("assumed-lifetime-ms")

    def catalog_properties(self) -> dict[str, str]:
        """The same policy as the `catalog-ext.refresh.*` catalog properties the JVM reads."""
        ms = lambda seconds: str(int(round(seconds * 1000)))  # noqa: E731
        return {
            "catalog-ext.refresh.check-interval-ms": ms(self.check_interval_s),
            "catalog-ext.refresh.min-ahead-ms": ms(self.min_ahead_s),
            "catalog-ext.refresh.lifetime-fraction": repr(float(self.lifetime_fraction)),
            "catalog-ext.refresh.initial-backoff-ms": ms(self.initial_backoff_s),
            "catalog-ext.refresh.max-backoff-ms": ms(self.max_backoff_s),
            "catalog-ext.refresh.timeout-ms": ms(self.timeout_s),
            "catalog-ext.refresh.assumed-lifetime-ms": ms(self.assumed_lifetime_s),
        }

    def __post_init__(self) -> None:
        if (self.check_interval_s <= 0 or self.min_ahead_s < 0 or not 0 <= self.lifetime_fraction < 1
                or not 0 < self.initial_backoff_s <= self.max_backoff_s or self.timeout_s <= 0 or self.assumed_lifetime_s < 0):
            raise ValueError(
                "refresh policy needs check_interval_s > 0, min_ahead_s >= 0, 0 <= lifetime_fraction < 1,"
                " 0 < initial_backoff_s <= max_backoff_s, timeout_s > 0 and assumed_lifetime_s >= 0"
            )

    def refresh_at(self, fetched_at_s: float, expires_at_s: float) -> float:
        """The moment a credential fetched at `fetched_at_s` should be renewed."""
        lifetime = max(0.0, expires_at_s - fetched_at_s)
        ahead = max(self.min_ahead_s, self.lifetime_fraction * lifetime)
        at = expires_at_s - ahead
        # A lifetime shorter than the margin: renew at half-life rather than immediately, forever.
        return at if at > fetched_at_s else fetched_at_s + lifetime / 2

    def backoff(self, failures: int, rng: random.Random) -> float:
        """Exponential backoff with jitter after `failures` consecutive failures (>= 1)."""
        # Equal jitter: half of the capped exponential ceiling is fixed, half random. A pure formula
        # (not tenacity's wait) because the refresher's fake-clock tests pass their own rng.
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * 2.0 ** min(max(0, failures - 1), 64))  # finite
        return ceiling * 0.5 + ceiling * 0.5 * rng.random()
