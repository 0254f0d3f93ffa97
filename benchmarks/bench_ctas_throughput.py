"""Benchmark 3: CTAS throughput with the shim's refreshing credentials against plain Iceberg with the
static vended keys, same data, alternating runs in one SparkSession. Target: ratio >= 0.99.

    python benchmarks/bench_ctas_throughput.py [--rows 3000000] [--runs 5]
    python benchmarks/bench_ctas_throughput.py --spark-venv .venvs/pyspark-3.5 [--iceberg 1.10] [--rows ...]

With `--spark-venv` (a venv with another full `pyspark`, e.g. `.venvs/pyspark-3.5` that the stack-matrix
tests cache), the runs happen in that venv's Python on its Spark with the jars users get for its Spark
line and `--iceberg` (default: that line's default), from the package's resolver (`select_stack` +
`resolve_jars`: sha-pinned, Maven Central, cached) and the same shim jar; the lakehouse and the
settings (`spark_conf`, written to a 0600 properties file: they hold the lakehouse's keys) come from
this process. That child needs only pyspark: configuration alone, no `attach()`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LABELS = {"refreshing (shim)": "lake", "static (plain Iceberg)": "static"}
SOURCE = "SELECT id, id * 3 AS v, uuid() AS u, rand() AS r FROM range({rows})"


def run_ctas(spark, rows: int, runs: int) -> dict[str, list[float]]:
    """Alternating CTAS runs into catalogs `lake` (shim) and `static` (plain Iceberg); seconds per label."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
    timings: dict[str, list[float]] = {label: [] for label in LABELS}
    for run in range(-1, runs):  # run -1 warms the JVM up and is not counted
        order = list(LABELS.items()) if run % 2 == 0 else list(LABELS.items())[::-1]
        for label, cat in order:
            table = f"{cat}.bench.t_{run + 1}_{cat}"
            started = time.monotonic()
            spark.sql(f"CREATE TABLE {table} USING iceberg AS {SOURCE.format(rows=rows)}")
            elapsed = time.monotonic() - started
            spark.sql(f"DROP TABLE {table} PURGE")
            if run >= 0:
                timings[label].append(elapsed)
    return timings


def report(title: str, rows: int, runs: int, timings: dict[str, list[float]]) -> None:
    print(f"{title}: CTAS of {rows:,} rows, {runs} alternating runs each (median):")
    rates = {}
    for label, values in timings.items():
        rates[label] = rows / statistics.median(values)
        print(f"  {label:<24} {statistics.median(values):6.2f} s  {rates[label] / 1e6:6.2f} M rows/s  "
              f"(runs: {', '.join(f'{v:.2f}' for v in values)})")
    ratio = rates["refreshing (shim)"] / rates["static (plain Iceberg)"]
    print(f"throughput ratio refreshing/static: {ratio:.3f}   target >= 0.99   {'MET' if ratio >= 0.99 else 'MISSED'}")


def run_in_venv(lake: Any, venv: Path, iceberg: str | None, rows: int, runs: int) -> None:
    from pyspark_catalog_ext.errors import CatalogExtError
    from pyspark_catalog_ext.spark.conf import spark_conf
    from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import select_stack
    from pyspark_catalog_ext.spark.jvm_deps.shim_build import check_java, shim_jar

    python = venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"], capture_output=True, text=True)
    if probe.returncode != 0:
        sys.exit(f"error: {venv} has no pyspark: create it with `python -m venv {venv} && {python} -m pip install 'pyspark==3.5.*'`")
    version = probe.stdout.strip()
    spark_minor = ".".join(version.split(".")[:2])
    try:
        stack = select_stack(spark_minor, iceberg)
        check_java(spark=stack.spark, iceberg=stack.iceberg)
        jars = [*map(str, resolve_jars(stack=stack)), str(shim_jar())]
    except CatalogExtError as exc:
        sys.exit(f"error: {exc}")
    conf = dict(spark_conf("local", "lake", jars=None, lakehouse=lake))
    static = spark_conf("local", "static", jars=None, lakehouse=lake, shim=False)
    conf.update({k: v for k, v in static.items() if k.startswith("spark.sql.catalog.static")})
    conf.update({"spark.jars": ",".join(jars), "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                 "spark.master": "local[2]"})
    with tempfile.TemporaryDirectory() as tmp:
        props = Path(tmp) / "bench.conf"
        props.touch(mode=0o600)
        props.write_text("".join(f"{k} {v}\n" for k, v in conf.items()))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        # The launcher reads the settings from the file: builder.config would put the keys on spark-submit's argv.
        env["PYSPARK_SUBMIT_ARGS"] = f"--properties-file {props} pyspark-shell"
        # The child (this file with --child) imports only pyspark: that venv lacks the package's deps.
        proc = subprocess.run([str(python), __file__, "--child", "--rows", str(rows), "--runs", str(runs)],
                              capture_output=True, text=True, env=env)
    lines = [line[len("TIMINGS "):] for line in proc.stdout.splitlines() if line.startswith("TIMINGS ")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"error: the Spark {version} run failed: {proc.stderr[-2000:]}")
    report(f"Spark {version}, Iceberg {stack.iceberg}", rows, runs, json.loads(lines[0]))


def child_main(rows: int, runs: int) -> None:
    """In the other venv: a session from the properties file (PYSPARK_SUBMIT_ARGS), the same alternating runs."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("catalog-ext-bench").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    timings = run_ctas(spark, rows, runs)
    spark.stop()
    print("TIMINGS " + json.dumps(timings), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--spark-venv", type=Path, help="a venv with another pyspark: run the CTAS there, on its Spark")
    parser.add_argument("--iceberg", help="with --spark-venv: the Iceberg release (\"1.12\"; default: the Spark line's default)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # the other venv's side of --spark-venv
    args = parser.parse_args()
    if args.child:
        child_main(args.rows, args.runs)
        return

    from _common import add_spark_catalog, spark_session

    from pyspark_catalog_ext.lakehouse.server import start_lakehouse
    from pyspark_catalog_ext.spark.credentials import attach

    with start_lakehouse() as lake:
        if args.spark_venv is not None:
            run_in_venv(lake, args.spark_venv, args.iceberg, args.rows, args.runs)
            return
        spark = spark_session(lake, "local[2]")
        add_spark_catalog(spark, lake, "static", lake.info.iceberg_uri, shim=False)
        attach(spark)
        timings = run_ctas(spark, args.rows, args.runs)
        import pyspark

        report(f"Spark {pyspark.__version__}", args.rows, args.runs, timings)
        spark.stop()


if __name__ == "__main__":
    main()
