"""The probes of a doctor run, in order: the catalog probes, the ADLS and GCS probes, then PyIceberg and Spark (Spark takes
the longest), then the other engines beside Spark (DuckDB), then the server inventory on the same Spark session. Within a module, probes run in
the order they are declared."""

from __future__ import annotations

from pyspark_catalog_ext.doctor import (
    clients,
    commit_probes,
    engines,
    inventory,
    probes,
    refresh_probes,
    signing_probes,
    store_probes,
)
from pyspark_catalog_ext.doctor.registry import ProbeSpec, registered

__all__ = ["PROBES", "GROUPS", "probe_ids"]

_MODULES = (probes, refresh_probes, commit_probes, signing_probes, store_probes, engines, clients, inventory)
PROBES: list[ProbeSpec] = [spec for module in _MODULES for spec in registered() if spec.func.__module__ == module.__name__]
if len(PROBES) != len(registered()):  # a probe declared elsewhere would silently never run
    raise ImportError("a doctor probe was declared outside the suite's modules; add its module to _MODULES")

GROUPS: dict[str, tuple[str, ...]] = {}
for _spec in PROBES:
    GROUPS.setdefault(_spec.group, ())
    GROUPS[_spec.group] += (_spec.id,)


def probe_ids() -> list[str]:
    """All probe ids in execution order."""
    return [p.id for p in PROBES]
