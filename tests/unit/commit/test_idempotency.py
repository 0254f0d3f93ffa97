"""ISO-8601 key lifetimes and UUIDv7 Idempotency-Keys: pure unit tests."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from pyspark_catalog_ext.commit.idempotency import parse_iso8601_duration, uuid7, uuid7_from_parts


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
