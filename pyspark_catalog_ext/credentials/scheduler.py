"""When to refresh: a pure policy plus a scheduler with an injectable clock (tested without sleeps).

The JVM registry holds the credentials and guards against duplicate refreshes; this module decides
*when* each table should be refreshed, and backs off after failures while the old credentials are
still valid.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

from ..backoff import exponential_backoff

log = logging.getLogger("pyspark_catalog_ext.credentials")


@dataclass(frozen=True)
class RefreshPolicy:
    """Renew when less than max(min_ahead, fraction x lifetime) remains.

    Defaults follow Delta Sharing's driver cache: check every 60 s, renew well before expiry.
    """

    check_interval_s: float = 60.0
    min_ahead_s: float = 300.0
    lifetime_fraction: float = 0.2
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 60.0

    def __post_init__(self) -> None:
        if self.check_interval_s <= 0 or self.min_ahead_s < 0 or not 0 <= self.lifetime_fraction < 1:
            raise ValueError(
                "refresh policy needs check_interval_s > 0, min_ahead_s >= 0 and 0 <= lifetime_fraction < 1"
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
        return exponential_backoff(failures, self.initial_backoff_s, self.max_backoff_s, 0.5, rng.random())


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

    @staticmethod
    def from_described(entry: dict) -> "TableState | None":
        prefixes = [p for p in entry.get("prefixes", []) if p.get("expires_at_ms", -1) > 0]
        if not prefixes:
            return None
        soonest = min(prefixes, key=lambda p: p["expires_at_ms"])
        name = ".".join([entry.get("catalog", "?"), *entry.get("namespace", []), entry.get("table", "?")])
        return TableState(
            handle=entry["handle"],
            name=name,
            generation=int(entry.get("generation", 0)),
            fetched_at_s=soonest["fetched_at_ms"] / 1000.0,
            expires_at_s=soonest["expires_at_ms"] / 1000.0,
            in_use=entry.get("last_used_at_ms", 0) >= soonest["fetched_at_ms"],
        )


@dataclass
class _Backoff:
    failures: int = 0
    next_attempt_s: float = 0.0
    last_error: str | None = None


class Refresher(Protocol):
    def __call__(self, handle: str, seen_generation: int) -> bool:
        """Refresh unless done since `seen_generation`; True if this call fetched. Raises on failure."""


@dataclass
class RefreshScheduler:
    """Decides which tables to refresh on each tick; runs them through `refresher`."""

    policy: RefreshPolicy
    list_tables: Callable[[], Iterable[TableState]]
    refresher: Refresher
    clock: Callable[[], float] = time.time
    rng: random.Random = field(default_factory=random.Random)
    _backoff: dict[str, _Backoff] = field(default_factory=dict)

    def due(self, table: TableState, now: float) -> bool:
        if not table.in_use:
            return False
        if now < self._backoff.get(table.handle, _Backoff()).next_attempt_s:
            return False
        return now >= self.policy.refresh_at(table.fetched_at_s, table.expires_at_s)

    def tick(self) -> list[str]:
        """One pass: refresh every due table. Returns the handles refreshed by this pass."""
        now = self.clock()
        refreshed: list[str] = []
        for table in self.list_tables():
            if not self.due(table, now):
                continue
            try:
                if self.refresher(table.handle, table.generation):
                    refreshed.append(table.handle)
                self._backoff.pop(table.handle, None)
            except Exception as exc:  # noqa: BLE001 - any source failure is retried with backoff
                state = self._backoff.setdefault(table.handle, _Backoff())
                state.failures += 1
                delay = self.policy.backoff(state.failures, self.rng)
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


class SchedulerThread:
    """Runs `scheduler.tick()` every check interval on a daemon thread until stopped."""

    def __init__(self, scheduler: RefreshScheduler) -> None:
        self._scheduler = scheduler
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="catalog-ext-refresh-scheduler", daemon=True)

    def start(self) -> "SchedulerThread":
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self._scheduler.policy.check_interval_s):
            try:
                self._scheduler.tick()
            except Exception as exc:  # noqa: BLE001 - the thread must survive a bad pass
                log.warning("catalog-ext: refresh pass failed: %s", exc)
