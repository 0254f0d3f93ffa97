"""PyIceberg's refresh scheduler (`refresh.scheduler`) on a fake clock: when to renew, backoff, idle tables."""

from __future__ import annotations

import pytest

from pyspark_catalog_ext.refresh.policy import RefreshPolicy
from pyspark_catalog_ext.refresh.scheduler import RefreshScheduler, TableState


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeCatalog:
    """Tables with a 900 s lifetime; a refresh issues new ones (like a vending catalog)."""

    def __init__(self, clock: FakeClock, lifetime: float = 900.0) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self.tables: dict[str, TableState] = {}
        self.calls: list[str] = []
        self.fail_next = 0

    def add(self, handle: str, in_use: bool = True) -> None:
        now = self.clock()
        self.tables[handle] = TableState(handle, handle, 0, now, now + self.lifetime, in_use)

    def list(self) -> list[TableState]:
        return list(self.tables.values())

    def refresh(self, handle: str, seen_generation: int) -> bool:
        self.calls.append(handle)
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("503 from catalog")
        old = self.tables[handle]
        if old.generation != seen_generation:
            return False
        now = self.clock()
        self.tables[handle] = TableState(handle, handle, old.generation + 1, now, now + self.lifetime, old.in_use)
        return True


def make(policy: RefreshPolicy | None = None, lifetime: float = 900.0):
    clock = FakeClock()
    catalog = FakeCatalog(clock, lifetime)
    scheduler = RefreshScheduler(policy or RefreshPolicy(), catalog.list, catalog.refresh, clock=clock)
    return clock, catalog, scheduler


def test_default_policy_renews_at_max_of_five_minutes_and_twenty_percent():
    policy = RefreshPolicy()
    assert policy.check_interval_s == 60
    # 900 s lifetime: 20% is 180 s < 300 s, so renew 300 s before expiry.
    assert policy.refresh_at(0, 900) == 600
    # 12 h lifetime: 20% (8640 s) beats 5 min.
    assert policy.refresh_at(0, 43_200) == pytest.approx(43_200 * 0.8)


def test_lifetime_shorter_than_margin_renews_at_half_life():
    assert RefreshPolicy().refresh_at(100, 160) == 130


def test_nothing_refreshed_before_threshold_then_exactly_once():
    clock, catalog, scheduler = make()
    catalog.add("t")
    clock.now += 599
    assert scheduler.tick() == []
    clock.now += 1
    assert scheduler.tick() == ["t"]
    assert scheduler.tick() == []  # fresh again
    assert catalog.calls == ["t"]


def test_many_refresh_cycles_keep_table_valid():
    clock, catalog, scheduler = make()
    catalog.add("t")
    for _ in range(200):  # 200 min of job, a tick a minute
        clock.now += 60
        scheduler.tick()
        assert catalog.tables["t"].expires_at_s > clock.now
    assert len(catalog.calls) == pytest.approx(200 * 60 / 600, abs=1)


def test_failed_refresh_backs_off_and_retries_while_valid():
    clock, catalog, scheduler = make(RefreshPolicy(initial_backoff_s=10, max_backoff_s=40))
    catalog.add("t")
    clock.now += 600
    catalog.fail_next = 3
    assert scheduler.tick() == []
    assert scheduler.failures("t") == 1
    scheduler.tick()  # inside the backoff window: no new attempt
    assert catalog.calls == ["t"]
    for expected_failures in (2, 3):
        clock.now += 40
        scheduler.tick()
        assert scheduler.failures("t") == expected_failures
    clock.now += 40
    assert scheduler.tick() == ["t"]
    assert scheduler.failures("t") == 0
    assert catalog.tables["t"].expires_at_s > clock.now + 800


def test_backoff_grows_and_is_capped():
    policy = RefreshPolicy(initial_backoff_s=1, max_backoff_s=8)
    # doubling without jitter, capped: the shared rule (credential-rules.json `refresh-backoff`)
    assert [policy.backoff(n) for n in range(1, 8)] == [1, 2, 4, 8, 8, 8, 8]


def test_idle_tables_are_not_refreshed_ahead():
    clock, catalog, scheduler = make()
    catalog.add("busy")
    catalog.add("idle", in_use=False)
    clock.now += 700
    assert scheduler.tick() == ["busy"]


def test_refresh_done_elsewhere_is_not_repeated():
    clock, catalog, scheduler = make()
    catalog.add("t")
    clock.now += 650
    stale = catalog.tables["t"]
    catalog.refresh("t", 0)  # an executor-triggered refresh got there first
    assert catalog.refresh("t", stale.generation) is False


def test_bad_policy_is_rejected():
    with pytest.raises(ValueError):
        RefreshPolicy(lifetime_fraction=1.5)


def test_failures_of_a_dropped_table_are_forgotten():
    clock, catalog, scheduler = make()
    catalog.add("t")
    catalog.fail_next = 1
    clock.now += 800
    scheduler.tick()
    assert scheduler.failures("t") == 1
    del catalog.tables["t"]  # the table was dropped by its refresher (e.g. garbage-collected)
    scheduler.tick()
    assert scheduler.failures("t") == 0 and not scheduler._backoff
