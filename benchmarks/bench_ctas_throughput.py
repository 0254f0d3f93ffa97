"""Benchmark 3: CTAS throughput with the shim's refreshing credentials against plain Iceberg with the
static vended keys, same data, alternating runs in one SparkSession. Target: ratio >= 0.97.

    python benchmarks/bench_ctas_throughput.py [--rows 3000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import time

from _common import add_spark_catalog, median, spark_session

from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from pyspark_catalog_ext.spark.credentials import attach


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    with start_lakehouse() as lake:
        spark = spark_session(lake, "local[2]")
        add_spark_catalog(spark, lake, "static", lake.info.iceberg_uri, shim=False)
        attach(spark)
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
        source = "SELECT id, id * 3 AS v, uuid() AS u, rand() AS r FROM range({rows})"
        timings: dict[str, list[float]] = {"refreshing (shim)": [], "static (plain Iceberg)": []}
        catalogs = {"refreshing (shim)": "lake", "static (plain Iceberg)": "static"}
        for run in range(-1, args.runs):  # run -1 warms the JVM up and is not counted
            order = list(catalogs.items()) if run % 2 == 0 else list(catalogs.items())[::-1]
            for label, cat in order:
                table = f"{cat}.bench.t_{run + 1}_{cat}"
                started = time.monotonic()
                spark.sql(f"CREATE TABLE {table} USING iceberg AS {source.format(rows=args.rows)}")
                elapsed = time.monotonic() - started
                spark.sql(f"DROP TABLE {table} PURGE")
                if run >= 0:
                    timings[label].append(elapsed)

        print(f"CTAS of {args.rows:,} rows, {args.runs} alternating runs each (median):")
        rates = {}
        for label, values in timings.items():
            rates[label] = args.rows / median(values)
            print(f"  {label:<24} {median(values):6.2f} s  {rates[label] / 1e6:6.2f} M rows/s  "
                  f"(runs: {', '.join(f'{v:.2f}' for v in values)})")
        print(f"throughput ratio refreshing/static: {rates['refreshing (shim)'] / rates['static (plain Iceberg)']:.3f}")
        spark.stop()


if __name__ == "__main__":
    main()
