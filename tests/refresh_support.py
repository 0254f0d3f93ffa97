"""Shared helpers for the credential-refresh tests: extra Spark catalogs behind loopback proxies,
and a slow row function so tasks outlive their credentials."""

from __future__ import annotations

from typing import Any

from pyspark_catalog_ext.session import SPARK_CATALOG, catalog_properties


def add_spark_catalog(spark: Any, lakehouse: Any, name: str, uri: str, *, shim: bool = True) -> None:
    """Register catalog `name` at runtime, configured like the lakehouse's but reached via `uri`."""
    props = catalog_properties("local", uri=uri, lakehouse=lakehouse, warehouse=lakehouse.info.warehouse,
                               credential=lakehouse.info.credential, shim=shim)
    spark.conf.set(f"spark.sql.catalog.{name}", SPARK_CATALOG)
    for key, value in props.items():
        spark.conf.set(f"spark.sql.catalog.{name}.{key}", value)


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
