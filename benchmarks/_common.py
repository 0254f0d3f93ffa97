"""Shared set-up for the benchmarks: the embedded lakehouse, the loopback proxies, a SparkSession."""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' loopback servers live in tests/servers

from pyspark_catalog_ext.spark.session import configure  # noqa: E402
from tests.helpers import add_spark_catalog  # noqa: E402, F401  (benchmarks share the tests' helpers)


def spark_session(lakehouse: Any, master: str, extra: dict[str, str] | None = None, iceberg: str | None = None) -> Any:
    """A SparkSession with catalog `lake` (the shim) on the embedded lakehouse; `iceberg` picks the
    Iceberg release (default: the installed Spark's default stack)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", **(extra or {})}
    builder = configure(SparkSession.builder.master(master).appName("catalog-ext-bench"), "local", "lake",
                        lakehouse=lakehouse, extra_conf=conf,
                        **({"iceberg": iceberg} if iceberg else {}))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def median(values: list[float]) -> float:
    return statistics.median(values)


def scan_concurrently(table: Any, readers: int, seconds: float, rows: int) -> tuple[int, list[str]]:
    """`readers` threads scan `table` (expecting `rows` rows) until `seconds` have passed: (scans, the
    first error's type name of each reader that failed)."""
    import threading
    import time

    stop = time.monotonic() + seconds
    scans, errors = [0], []

    def reader() -> None:
        while time.monotonic() < stop:
            try:
                assert table.scan().to_arrow().num_rows == rows
                scans[0] += 1
            except Exception as exc:  # noqa: BLE001 - reported in the benchmark's table, not raised
                errors.append(type(exc).__name__)
                return

    threads = [threading.Thread(target=reader, daemon=True) for _ in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    return scans[0], errors
