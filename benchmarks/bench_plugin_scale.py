"""Benchmark: the driver plugin under many executors and tables.

Part 1, ``jvm``: one JVM, CatalogExtPlugin.Driver.receive() asked by many threads for random tables
of a driver registry whose (fake, counting) catalog vends short-lived keys, so every table renews
several times. receive() runs on max(2, cores) dispatcher threads as in Spark's driver (0: on the
asking threads). Prints heap per table entry, asks/s saturated, latency at 50,000 asks/s offered and
catalog requests per table per renewal, each beside its target.

Part 2, ``spark``: the same asks over Spark's real plugin RPC on local-cluster[N,1,1024]: the driver
registry is seeded through py4j, executor tasks ask the driver through the executor plugin's context
(a bench class in spark.jars, called with Spark SQL reflect()). The plugin is the shim's with the
driver's receive() timed, so each run splits an ask's latency into the plugin's answer and the rest.

    python benchmarks/bench_plugin_scale.py jvm [threads] [tables] [seconds] [lifetime-ms] [dispatchers] [no-memory]
    python benchmarks/bench_plugin_scale.py spark [executors] [threads-per-task] [asks-per-thread] [tables] [offered-asks/s]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars  # noqa: E402
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import installed_spark_version, min_java_for_stack, select_stack  # noqa: E402
from pyspark_catalog_ext.spark.jvm_deps.shim_build import JAVAC_LINT_FLAGS, shim_jar  # noqa: E402

SOURCE = ROOT / "jvm-shim/src/bench/java/io/catalogext/shim/PluginScaleBench.java"
MAIN = "io.catalogext.shim.PluginScaleBench"


def _classpath() -> list[str]:
    import pyspark

    return [str(shim_jar()), *map(str, resolve_jars(stack=select_stack())), str(Path(pyspark.__file__).parent / "jars" / "*")]


def _compile(out: Path) -> None:
    """The bench class with the project's javac flags (-Xlint:all -Werror), against the shim jar and
    the installed pyspark's jars (Spark 4's are Java 17 class files: --release 17 there)."""
    release = str(min_java_for_stack(installed_spark_version()))
    subprocess.run(["javac", "--release", release, *JAVAC_LINT_FLAGS, "-d", str(out), "-cp", os.pathsep.join(_classpath()), str(SOURCE)],
                   check=True)


def run_jvm(args: list[str]) -> None:
    with tempfile.TemporaryDirectory() as out:
        _compile(Path(out))
        # Log4j's "no configuration" notice aside, the shim logs nothing at its default ERROR level.
        subprocess.run(["java", "-Xmx2g", "-Dlog4j2.statusLoggerLevel=OFF", "-cp",
                        os.pathsep.join([out, *_classpath()]), MAIN, *args], check=True)


def _percentile(sorted_values: list[int], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))] / 1e3


def run_spark(args: list[str]) -> None:
    executors = int(args[0]) if len(args) > 0 else 4
    threads = int(args[1]) if len(args) > 1 else 64
    asks = int(args[2]) if len(args) > 2 else 500
    tables = int(args[3]) if len(args) > 3 else 1_000
    offered = int(args[4]) if len(args) > 4 else 1_000
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        _compile(classes)
        bench_jar = Path(tmp) / "plugin-scale-bench.jar"
        with zipfile.ZipFile(bench_jar, "w") as jar:
            for path in classes.rglob("*.class"):
                jar.write(path, path.relative_to(classes).as_posix())
        # The bench class must share the shim's class loader (package-private API): both in spark.jars.
        jars = [str(shim_jar()), *map(str, resolve_jars(stack=select_stack())), str(bench_jar)]
        started = time.monotonic()
        spark = (SparkSession.builder.master(f"local-cluster[{executors},1,1024]").appName("catalog-ext-plugin-scale")
                 .config("spark.jars", ",".join(jars))
                 # the shim's plugin with the driver's receive() timed (the bench class's TimedPlugin)
                 .config("spark.plugins", f"{MAIN}$TimedPlugin")
                 .config("spark.locality.wait", "0").config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        sc = spark.sparkContext
        while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < executors:  # every executor registered
            time.sleep(0.5)
        print(f"local-cluster[{executors},1,1024] up in {time.monotonic() - started:.1f} s")
        bench = sc._jvm.io.catalogext.shim.PluginScaleBench
        handles = bench.seedDriver(tables, 5_000)  # credentials renewed every 4 s during the run
        # One task per executor JVM, all at once: no shuffle (its locality would put them on one executor).
        rows = spark.createDataFrame(sc.parallelize([(handles,)] * executors, executors), "h string")

        def ask(per_thread: int, interval_ms: int) -> list[str]:
            expr = f"reflect('{MAIN}', 'askDriver', h, {threads}, {per_thread}, CAST({interval_ms} AS BIGINT)) AS r"
            return [r.r for r in rows.selectExpr(expr).collect()]

        ask(50, 0)  # warm-up: JIT, connections
        bench.receiveStats()
        cpu_before = bench.processCpuNanos()
        saturated = ask(asks, 0)
        driver_cpu_ns = bench.processCpuNanos() - cpu_before
        saturated_receive = bench.receiveStats()
        askers = executors * threads
        interval_ms = max(1, askers * 1000 // offered)  # each asker's pace for `offered` asks/s in all
        paced = ask(max(1, 10_000 // interval_ms), interval_ms)  # about 10 s
        paced_receive = bench.receiveStats()
        stats = bench.driverStats()
        spark.stop()
    print(f"{executors} executor JVMs x {threads} asking threads, {tables} tables (credential lifetime 5 s), "
          "over Spark's plugin RPC:")
    total = _report("saturated (each thread asks again at once)", saturated)
    print(f"  CPU per ask: driver JVM {driver_cpu_ns / total / 1e3:,.0f} us (receive() itself: a few us, see `jvm`), "
          f"executor JVMs {sum(int(r.split(' ')[4]) for r in saturated) / total / 1e3:,.0f} us")
    print(f"  {saturated_receive}")
    _report(f"offered {offered:,} asks/s (each thread one ask every {interval_ms} ms)", paced)
    print(f"  {paced_receive}")
    print(stats)
    print("  (between the jobs the tables are idle: a due idle table is renewed on its next use, by design,"
          " so the request-after-due figures include those waits)")


def _report(title: str, results: list[str]) -> int:
    """Prints asks/s and latency percentiles of one job's tasks; returns the number of asks."""
    starts, ends, total, non_fresh, latencies, spans = [], [], 0, 0, [], []
    for result in results:
        start_ms, end_ms, count, stale, _cpu, executor, values = result.split(" ")
        spans.append(f"executor {executor}: {int(end_ms) - int(start_ms):,} ms")
        starts.append(int(start_ms))
        ends.append(int(end_ms))
        total += int(count)
        non_fresh += int(stale)
        latencies.extend(int(v) for v in values.split(","))
    latencies.sort()
    seconds = (max(ends) - min(starts)) / 1e3
    print(f"{title}: {total / seconds:,.0f} asks/s, latency p50 {_percentile(latencies, 0.5):,.0f} us, "
          f"p99 {_percentile(latencies, 0.99):,.0f} us, p99.9 {_percentile(latencies, 0.999):,.0f} us   "
          f"[{total:,} asks in {seconds:.1f} s; answered 'refreshing': {non_fresh}; tasks: {', '.join(spans)}]")
    return total


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "jvm"
    if mode in ("-h", "--help"):
        print(__doc__)
    elif mode == "jvm":
        run_jvm(sys.argv[2:])
    elif mode == "spark":
        run_spark(sys.argv[2:])
    else:
        raise SystemExit(f"unknown mode {mode!r}: use 'jvm' or 'spark'")


if __name__ == "__main__":
    main()
