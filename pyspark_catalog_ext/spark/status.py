"""Per-table refresh status as `attach()` reports it, from the JVM registry's entries however they
were read (Py4J in `credentials`, SQL `catalog_ext_status()` in `connect`)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark_catalog_ext.spark.shim_api import RegistryEntry

__all__ = ["TableStatus", "status_by_table"]


@dataclass(frozen=True)
class TableStatus:
    """How one table's credentials are doing. No secrets."""

    name: str
    staged: bool
    strategy: str
    refreshes_by_strategy: dict[str, int]
    refresh_count: int
    failure_count: int
    last_refresh: _dt.datetime | None
    next_refresh: _dt.datetime | None
    expires_at: _dt.datetime | None
    last_error: str | None


def _merged_status(name: str, entries: list[RegistryEntry]) -> TableStatus:
    prefixes = [p for e in entries for p in e.prefixes]
    latest = max(entries, key=lambda e: e.last_refresh_at_ms)
    by_strategy: dict[str, int] = {}
    for entry in entries:
        for strategy, count in entry.strategy_counts.items():
            by_strategy[strategy] = by_strategy.get(strategy, 0) + count
    errors = [e.last_error for e in entries if e.last_error]
    return TableStatus(
        name=name,
        staged=any(e.staged for e in entries),
        strategy=latest.last_strategy,
        refreshes_by_strategy=by_strategy,
        refresh_count=sum(e.refresh_count for e in entries),
        failure_count=sum(e.failure_count for e in entries),
        last_refresh=_ms_to_dt(latest.last_refresh_at_ms),
        next_refresh=_ms_to_dt(min((p.refresh_at_ms for p in prefixes if p.refresh_at_ms > 0), default=None)),
        expires_at=_ms_to_dt(min((p.expires_at_ms for p in prefixes if p.expires_at_ms > 0), default=None)),
        last_error=errors[-1] if errors else None,
    )


def status_by_table(entries: Iterable[RegistryEntry]) -> list[TableStatus]:
    """One TableStatus per table name: the JVM has one entry per table identity, and a table dropped
    and created again at another location has two, merged here: counts add up, the soonest expiry
    and refresh are shown, and the strategy is the one used last."""
    by_name: dict[str, list[RegistryEntry]] = {}
    for entry in entries:
        by_name.setdefault(entry.name, []).append(entry)
    return [_merged_status(name, group) for name, group in by_name.items()]


def _ms_to_dt(ms: int | None) -> _dt.datetime | None:
    if not ms or ms <= 0:
        return None
    return _dt.datetime.fromtimestamp(ms / 1000.0, tz=_dt.timezone.utc)
