"""RetryPolicy, Retry-After and ISO-8601 parsing, UUIDv7 — pure unit tests, no sleeping."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from pyspark_catalog_ext.catalog.retry import (
    RetryPolicy,
    parse_iso8601_duration,
    parse_retry_after,
    uuid7,
    uuid7_from_parts,
)
from tests.fake_clock import FakeClock as _FakeClock


class FakeClock(_FakeClock):
    def __init__(self) -> None:
        super().__init__(start=1000.0)


def test_backoff_exponential_capped_without_jitter() -> None:
    p = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=False)
    assert [p.backoff(a) for a in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_backoff_full_jitter_scales_the_ceiling() -> None:
    p = RetryPolicy(base_delay=1.0, max_delay=100.0, jitter=True, rng=lambda: 0.25)
    assert p.backoff(1) == 0.25
    assert p.backoff(3) == 1.0  # 0.25 * 4
    p0 = RetryPolicy(base_delay=1.0, jitter=True, rng=lambda: 0.0)
    assert p0.backoff(4) == 0.0


def test_retry_after_wins_over_backoff_but_is_capped() -> None:
    p = RetryPolicy(base_delay=0.1, jitter=False, retry_after_cap=10.0)
    assert p.next_delay(1, retry_after=4.0) == 4.0
    assert p.next_delay(1, retry_after=3600.0) == 10.0
    assert p.next_delay(1, retry_after=None) == 0.1
    assert p.next_delay(1, retry_after=-5.0) == 0.1


def test_may_retry_bounded_by_attempts_and_total_time() -> None:
    clock = FakeClock()
    p = RetryPolicy(max_attempts=3, total_timeout=10.0, clock=clock.now, sleep=clock.sleep)
    started = clock.now()
    assert p.may_retry(1, started, 1.0)
    assert p.may_retry(2, started, 1.0)
    assert not p.may_retry(3, started, 0.0)  # attempts exhausted
    clock.t += 9.5
    assert not p.may_retry(1, started, 1.0)  # would cross the total budget
    assert p.may_retry(1, started, 0.5)


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    assert RetryPolicy.none().max_attempts == 1


def test_parse_retry_after() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = 1_700_000_000.0
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 12))
    assert parse_retry_after(date, now=now) == pytest.approx(12.0)
    past = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now - 60))
    assert parse_retry_after(past, now=now) == 0.0


@pytest.mark.parametrize(
    "text,seconds",
    [("PT30M", 1800.0), ("PT1H", 3600.0), ("PT1H30M", 5400.0), ("P1D", 86400.0), ("PT0.5S", 0.5),
     ("P1W", 604800.0), ("P1DT2H", 93600.0), ("pt15s", 15.0)],
)
def test_parse_iso8601_duration(text: str, seconds: float) -> None:
    assert parse_iso8601_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "P", "PT", "30M", "P1Y", "P1M", "PT1H2", "1800", "P1DT"])
def test_parse_iso8601_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_iso8601_duration(text)


def test_uuid7_layout_per_rfc9562() -> None:
    u = uuid7_from_parts(0x0123456789AB, (0xABC << 62) | 0x1234)
    assert u.version == 7
    assert u.variant == uuid.RFC_4122
    assert u.hex.startswith("0123456789ab7abc")
    assert u.int & ((1 << 62) - 1) == 0x1234


def test_uuid7_format_and_timestamp() -> None:
    before = time.time_ns() // 1_000_000
    u = uuid7()
    after = time.time_ns() // 1_000_000
    assert u.version == 7 and u.variant == uuid.RFC_4122
    assert str(u)[14] == "7" and str(u)[19] in "89ab"
    ms = u.int >> 80
    assert before <= ms <= after + 1  # +1: may borrow a ms when many keys are minted at once


def test_uuid7_monotonic_and_unique() -> None:
    keys = [uuid7() for _ in range(5000)]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert all(k.version == 7 for k in keys)


def test_uuid7_unique_across_threads() -> None:
    out: list[uuid.UUID] = []
    lock = threading.Lock()

    def mint() -> None:
        mine = [uuid7() for _ in range(500)]
        assert mine == sorted(mine)
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=mint) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out)) == 4000
