"""`CommitPolicy`: how a commit is retried and whether it carries an Idempotency-Key, from the
catalog properties `catalog-ext.commit.*` (the knob spec the JVM's twin, the shim's `CommitPolicy`,
reads too).

Java twin: `io.catalogext.shim.commit.CommitPolicy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark_catalog_ext import knobs
from pyspark_catalog_ext.commit import decision as commit_decision
from pyspark_catalog_ext.errors import ConfigError

__all__ = ["CommitPolicy", "DEDUPLICATED", "deduplicated_operations"]

#: The knob naming the operations the catalog replays under an Idempotency-Key (a profile sets it).
DEDUPLICATED = "catalog-ext.commit.deduplicated-operations"


def deduplicated_operations(props: Mapping[str, Any]) -> frozenset[str]:
    """`catalog-ext.commit.deduplicated-operations` as a set of operation names from the shared decision
    table (`deduplicated_operations`); unset: its narrowest set; `none`: no operation. A name the table
    does not know is a one-line `ConfigError`, word for word what the JVM says."""
    spec = commit_decision.table()["deduplicated_operations"]
    raw = str(props.get(DEDUPLICATED) or "").strip()
    if not raw:
        return frozenset(spec["narrowest"])
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if names == ["none"]:
        return frozenset()
    for name in names:
        if name not in spec["operations"]:
            raise ConfigError(f"Bad catalog property {DEDUPLICATED}='{raw}': unknown operation {name}; "
                              f"use none or some of {', '.join(spec['operations'])}")
    return frozenset(names)


@dataclass(frozen=True)
class CommitPolicy:
    """Retry bounds and Idempotency-Key use for one commit: the catalog properties
    `catalog-ext.commit.*`, with the defaults and ranges of the knob spec the shim's `CommitPolicy` reads too."""

    max_attempts: int = knobs.read_int({}, "catalog-ext.commit.max-attempts")
    base_delay_s: float = knobs.read_int({}, "catalog-ext.commit.base-delay-ms") / 1000.0
    max_delay_s: float = knobs.read_int({}, "catalog-ext.commit.max-delay-ms") / 1000.0
    total_timeout_s: float = knobs.read_int({}, "catalog-ext.commit.total-timeout-ms") / 1000.0
    request_timeout_s: float = 60.0
    idempotency: str = knobs.read_choice({}, "catalog-ext.commit.idempotency")  # auto, always or never
    # What the catalog replays under a key (the profile's, else the narrowest known set): only these
    # are repeated under their key after a lost answer; every other one is looked at.
    deduplicated: frozenset[str] = field(default_factory=lambda: deduplicated_operations({}))

    @staticmethod
    def from_properties(props: Mapping[str, Any]) -> CommitPolicy:
        """From `catalog-ext.commit.*`; an unknown name or a bad value is a one-line `ConfigError`,
        word for word what the JVM says."""
        unknown = knobs.unknown_names(props, "commit")
        if unknown:
            known = ", ".join(sorted(n for n in knobs.spec() if n.startswith("catalog-ext.commit.")))
            raise ConfigError(f"Unknown catalog property {unknown[0]}; known: {known}")
        return CommitPolicy(
            max_attempts=knobs.read_int(props, "catalog-ext.commit.max-attempts"),
            base_delay_s=knobs.read_int(props, "catalog-ext.commit.base-delay-ms") / 1000.0,
            max_delay_s=knobs.read_int(props, "catalog-ext.commit.max-delay-ms") / 1000.0,
            total_timeout_s=knobs.read_int(props, "catalog-ext.commit.total-timeout-ms") / 1000.0,
            idempotency=knobs.read_choice(props, "catalog-ext.commit.idempotency"),
            deduplicated=deduplicated_operations(props),
        )

    def sends_keys(self, advertised_lifetime_s: float | None) -> bool:
        """Whether requests carry an Idempotency-Key (as the JVM's `CommitPolicy.sendsKeys` decides)."""
        return self.idempotency == "always" or (self.idempotency == "auto" and advertised_lifetime_s is not None)

    def deduplicates(self, operation: str) -> bool:
        """Whether the catalog is trusted to replay `operation` (a name from the decision table) under its key."""
        return operation in self.deduplicated
