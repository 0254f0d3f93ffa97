"""Shared helpers for the credential-refresh tests: extra Spark catalogs behind loopback proxies,
and a slow row function so tasks outlive their credentials."""

from __future__ import annotations

from typing import Any

from tests.helpers import add_spark_catalog  # noqa: F401  (its home is tests/helpers.py)


def slow(ms: int) -> str:
    """A SQL predicate that is always true and takes `ms` milliseconds per row (JVM-side, no Python)."""
    return f"java_method('java.lang.Thread', 'sleep', CAST({int(ms)} AS BIGINT)) IS NOT NULL"


def register_slow_udf(spark: Any) -> None:
    """`slow_true(ms)`: a deterministic SQL function (row-level DML refuses non-deterministic ones)."""
    import time

    def slow_true(ms: int) -> bool:
        time.sleep(ms / 1000.0)
        return True

    spark.udf.register("slow_true", slow_true, "boolean")


def table_status(manager: Any, name: str) -> Any:
    """A table's status (one per table: the manager merges its hand-outs)."""
    matching = statuses(manager, name)
    assert len(matching) == 1, f"{name}: {[s.name for s in manager.status()]}"
    return matching[0]


def statuses(manager: Any, name: str) -> list[Any]:
    return [s for s in manager.status() if s.name == name]
