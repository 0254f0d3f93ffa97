"""The refresh policy: renew when less than max(min_ahead, fraction x lifetime) remains.

The JVM shim reads it as the `catalog-ext.refresh.*` catalog properties (io.catalogext.shim.config.RefreshPolicy);
PyIceberg jobs apply it in Python (`refresh/refresher.py`).

Java twin: `io.catalogext.shim.config.RefreshPolicy`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark_catalog_ext import knobs
from pyspark_catalog_ext.errors import ConfigError

PREFIX = "catalog-ext.refresh."


def _field_of(name: str) -> str:
    """`RefreshPolicy`'s field for a knob: catalog-ext.refresh.min-ahead-ms -> min_ahead_s (milliseconds
    become seconds), catalog-ext.refresh.lifetime-fraction -> lifetime_fraction."""
    stem = name[len(PREFIX):]
    return stem[:-3].replace("-", "_") + "_s" if stem.endswith("-ms") else stem.replace("-", "_")


#: RefreshPolicy field -> its `catalog-ext.refresh.*` knob, from the spec both runtimes read: the one
#: place these names are spelled in Python.
KNOBS: dict[str, str] = {_field_of(name): name for name, k in knobs.spec().items()
                         if name.startswith(PREFIX) and k["type"] in ("int", "fraction")}


def _scale(name: str) -> float:
    """Milliseconds become seconds; counts (reactive-max-per-minute) stay as they are."""
    return 1000.0 if name.endswith("-ms") else 1.0


def _read(properties: Mapping[str, Any], name: str) -> float:
    if knobs.knob(name)["type"] == "fraction":
        return knobs.read_fraction(properties, name)
    return knobs.read_int(properties, name) / _scale(name)


def _default(field: str) -> float:
    return _read({}, KNOBS[field])


@dataclass(frozen=True)
class RefreshPolicy:
    """Renew when less than max(min_ahead, fraction x lifetime) remains.

    Defaults follow Delta Sharing's driver cache: check every 60 s, renew well before expiry.
    """

    # Defaults: the knob spec's `catalog-ext.refresh.*` (the JVM's too), in seconds.
    check_interval_s: float = _default("check_interval_s")
    min_ahead_s: float = _default("min_ahead_s")
    lifetime_fraction: float = _default("lifetime_fraction")
    initial_backoff_s: float = _default("initial_backoff_s")
    max_backoff_s: float = _default("max_backoff_s")
    timeout_s: float = _default("timeout_s")  # a reader waiting for new keys through failed attempts; in the JVM also one refresh call
    # Keys vended without an expiry count as expiring this long after their fetch (0: never).
    assumed_lifetime_s: float = _default("assumed_lifetime_s")
    # Refreshes of one table per minute started by S3 rejecting its keys early (0: no reactive refresh).
    reactive_max_per_minute: float = _default("reactive_max_per_minute")
    # Past this |local clock - server Date|, "now" is read on the server's clock.
    max_clock_skew_s: float = _default("max_clock_skew_s")

    def catalog_properties(self) -> dict[str, str]:
        """The same policy as the `catalog-ext.refresh.*` catalog properties the JVM reads."""
        return {name: (repr(float(getattr(self, field))) if knobs.knob(name)["type"] == "fraction"
                       else str(int(round(getattr(self, field) * _scale(name)))))
                for field, name in KNOBS.items()}

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any], **overrides: float) -> RefreshPolicy:
        """The policy a catalog's `catalog-ext.refresh.*` properties set (the spec's checks and one-line
        errors), unset ones at their defaults; `overrides` (fields, in seconds) win over both."""
        values: dict[str, float] = {}
        for field, name in KNOBS.items():
            if name in properties and str(properties[name]).strip():
                values[field] = _read(properties, name)
        return cls(**{**values, **overrides})

    def __post_init__(self) -> None:
        if (self.check_interval_s <= 0 or self.min_ahead_s < 0 or not 0 <= self.lifetime_fraction < 1
                or not 0 < self.initial_backoff_s <= self.max_backoff_s or self.timeout_s <= 0 or self.assumed_lifetime_s < 0
                or self.reactive_max_per_minute < 0 or self.max_clock_skew_s < 0):
            raise ValueError(
                "refresh policy needs check_interval_s > 0, min_ahead_s >= 0, 0 <= lifetime_fraction < 1,"
                " 0 < initial_backoff_s <= max_backoff_s, timeout_s > 0, assumed_lifetime_s >= 0,"
                " reactive_max_per_minute >= 0 and max_clock_skew_s >= 0"
            )

    def refresh_at(self, fetched_at_s: float, expires_at_s: float) -> float:
        """The moment a credential fetched at `fetched_at_s` should be renewed."""
        lifetime = max(0.0, expires_at_s - fetched_at_s)
        ahead = max(self.min_ahead_s, self.lifetime_fraction * lifetime)
        at = expires_at_s - ahead
        # A lifetime shorter than the margin: renew at half-life rather than immediately, forever.
        return at if at > fetched_at_s else fetched_at_s + lifetime / 2

    def backoff(self, failures: int) -> float:
        """How long to wait after `failures` consecutive failed renewals (>= 1): the first backoff,
        doubled per failure, capped at the longest, without jitter (credential-rules.json
        `refresh-backoff`, as the shim's `RefreshPolicy.backoffMs`)."""
        return min(self.max_backoff_s, self.initial_backoff_s * 2.0 ** min(max(0, failures - 1), 64))  # finite


ENV_PREFIX = "PYSPARK_CATALOG_EXT_REFRESH_"
PROPERTY_PREFIX = PREFIX
# The knobs PyIceberg applies (the spec's runtimes); each also has an environment variable, in
# seconds (or the fraction): PYSPARK_CATALOG_EXT_REFRESH_<FIELD>, e.g. ..._MIN_AHEAD_S.
_PYICEBERG_KNOBS = {field: name for field, name in KNOBS.items() if "pyiceberg" in knobs.knob(name)["runtimes"]}


def refresh_policy(properties: Mapping[str, Any] | None = None, environ: Mapping[str, str] = os.environ) -> RefreshPolicy:
    """The policy Spark would use for this catalog: its `catalog-ext.refresh.*` properties (Spark's
    names, milliseconds), else PYSPARK_CATALOG_EXT_REFRESH_* variables (seconds), else the defaults."""
    properties = {k: v for k, v in (properties or {}).items() if k in _PYICEBERG_KNOBS.values()}
    from_env: dict[str, float] = {}
    for field in _PYICEBERG_KNOBS:
        raw = environ.get(ENV_PREFIX + field.upper())
        if raw is not None and str(raw).strip() and _PYICEBERG_KNOBS[field] not in properties:
            try:
                from_env[field] = float(raw)  # seconds (or the fraction)
            except ValueError:
                unit = "a fraction" if field == "lifetime_fraction" else "seconds"
                raise ConfigError(f"{ENV_PREFIX + field.upper()}={raw!r} is not a number; set it in {unit}") from None
    try:
        return RefreshPolicy.from_properties(properties, **from_env)
    except ValueError as exc:
        raise ConfigError(f"bad {PROPERTY_PREFIX}* / {ENV_PREFIX}* setting: {exc}") from None
