"""When to refresh PyIceberg tables: a scheduler over `RefreshPolicy` with an injectable clock
(tested without sleeps). Spark's tables are scheduled by the JVM shim instead.

It backs off after failures while the old credentials are still valid.

Java twin: `io.catalogext.shim.refresh.RefreshSchedule`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from pyspark_catalog_ext.refresh.policy import RefreshPolicy

log = logging.getLogger("pyspark_catalog_ext.pyiceberg")


@dataclass(frozen=True)
class TableState:
    """What the scheduler needs to know about one table (from the JVM registry; no secrets)."""

    handle: str
    name: str
    generation: int
    fetched_at_s: float
    expires_at_s: float  # float("inf") when the catalog gave no expiry
    # Used since its credentials were fetched? An idle table is refreshed on its next use instead.
    in_use: bool = True
    # The catalog answered the last refresh with the keys the table has (its credential cache): not
    # asked again before this (see CredentialRefresher.after_cache_window).
    not_before_s: float = 0.0


@dataclass
class _Backoff:
    failures: int = 0
    next_attempt_s: float = 0.0
    last_error: str | None = None


class Refresher(Protocol):
    def __call__(self, handle: str, seen_generation: int) -> bool:
        """Refresh unless done since `seen_generation`; True if this call renewed the keys. Raises on failure."""


@dataclass
class RefreshScheduler:
    """Decides which tables to refresh on each tick; runs them through `refresher`."""

    policy: RefreshPolicy
    list_tables: Callable[[], Iterable[TableState]]
    refresher: Refresher
    clock: Callable[[], float] = time.time
    _backoff: dict[str, _Backoff] = field(default_factory=dict)

    def due(self, table: TableState, now: float) -> bool:
        if not table.in_use:
            return False
        if now < self._backoff.get(table.handle, _Backoff()).next_attempt_s or now < table.not_before_s:
            return False
        return now >= self.policy.refresh_at(table.fetched_at_s, table.expires_at_s)

    def tick(self) -> list[str]:
        """One pass: refresh every due table. Returns the handles refreshed by this pass."""
        now = self.clock()
        refreshed: list[str] = []
        tables = list(self.list_tables())
        listed = {table.handle for table in tables}
        for handle in [h for h in self._backoff if h not in listed]:
            del self._backoff[handle]  # a table no longer tracked: forget its failures (bounded map)
        for table in tables:
            if not self.due(table, now):
                continue
            try:
                if self.refresher(table.handle, table.generation):
                    refreshed.append(table.handle)
                self._backoff.pop(table.handle, None)
            except Exception as exc:  # noqa: BLE001 - any source failure is retried with backoff
                state = self._backoff.setdefault(table.handle, _Backoff())
                state.failures += 1
                delay = self.policy.backoff(state.failures)
                state.next_attempt_s = now + delay
                state.last_error = str(exc)
                remaining = table.expires_at_s - now
                log.warning(
                    "catalog-ext: refresh of %s failed (%d in a row; credentials valid %.0f s more); retry in %.1f s: %s",
                    table.name, state.failures, remaining, delay, exc,
                )
        return refreshed

    def failures(self, handle: str) -> int:
        return self._backoff.get(handle, _Backoff()).failures
