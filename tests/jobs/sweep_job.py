"""The leak sweep's Spark scenario in a process of its own, run on request (tests/slow/test_leak_sweep_spark_stores.py).

`python tests/jobs/sweep_job.py` reads one JSON line, the session (uri, warehouse, credential,
iceberg, stores, and optional jars and extra_conf), starts Spark through `configure(store=...)` (the stores'
SDK bundles, the shim), and prints `READY`. Then each JSON line {"catalog": {...}, "table": [namespace,
name]} registers a new catalog with those properties, reads the table and appends a row, or runs its
"statements" ({target}: the table, {catalog}: the catalog) instead (each step runs even if the one
before failed), and prints `DONE {"error": <the first failure, or null>}`. A line {"marker": <class>}
prints `MARKER {"initialised": n, "instances": n, "first": <stack or null>}` from that class's `Log`
(tests/spark/test_code_loading_spark.py). Everything arrives on stdin, never in the process's
arguments; the test puts the machine's ambient identities in its environment, which a JVM reads only
at start.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def start(session: dict):
    from pyspark.sql import SparkSession

    from pyspark_catalog_ext.spark.session import configure

    builder = SparkSession.builder.master("local[1]").appName("leak-sweep-stores")
    if session.get("jars"):  # beside Iceberg's (configure appends its own): one class loader sees both
        builder = builder.config("spark.jars", ",".join(session["jars"]))
    builder = configure(builder, "seaweedfs", "lake", uri=session["uri"], warehouse=session["warehouse"],
                        credential=session["credential"], iceberg=session["iceberg"], store=session["stores"],
                        extra_conf={"spark.task.maxFailures": "1", "spark.ui.enabled": "false",
                                    **session.get("extra_conf", {})})
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    return spark


DEFAULT_STATEMENTS = ("SELECT count(*) FROM {target}", "INSERT INTO {target} VALUES (5)")


def run(spark, name: str, catalog: dict, table: list, statements=DEFAULT_STATEMENTS) -> str | None:
    from pyspark_catalog_ext.spark.conf import SPARK_CATALOG

    spark.conf.set(f"spark.sql.catalog.{name}", SPARK_CATALOG)
    for key, value in catalog.items():
        spark.conf.set(f"spark.sql.catalog.{name}.{key}", value)
    target = f"{name}.{table[0]}.{table[1]}"
    errors = []
    for statement in statements:
        try:
            spark.sql(statement.format(target=target, catalog=name)).collect()
        except Exception as exc:  # noqa: BLE001 - each step's failure is an outcome the sweep records
            errors.append(described(exc))
    return errors[0] if errors else None


def described(exc: Exception) -> str:
    """The failure with its root cause first (Spark wraps it in errors such as INTERNAL_ERROR), then the
    rest, where an origin the sweep looks for may be named."""
    text = f"{type(exc).__name__}: {exc}"
    causes = re.findall(r"Caused by: ([^\n]+)", text)
    return (f"{causes[-1].strip()} | " if causes else "") + text[:20000]


def marker_log(spark, marker: str) -> dict:
    """What the marker class's `Log` recorded, read without initialising the marker itself."""
    jvm = spark._jvm  # the class loader that holds spark.jars (the system one does not)
    log = jvm.java.lang.Class.forName(marker + "$Log", True, jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader())
    # py4j hands an AtomicInteger over as the number it holds.
    return {"initialised": int(log.getField("INITIALISED").get(None)),
            "instances": int(log.getField("INSTANCES").get(None)),
            "first": log.getMethod("firstUse", None).invoke(None, None)}


def main() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = start(json.loads(sys.stdin.readline()))
    print("READY", flush=True)
    try:
        for n in itertools.count():
            line = sys.stdin.readline()
            if not line.strip():
                break  # the test closed stdin
            request = json.loads(line)
            if "marker" in request:
                print("MARKER " + json.dumps(marker_log(spark, request["marker"])), flush=True)
                continue
            error = run(spark, f"sweep{n}", request["catalog"], request["table"],
                        request.get("statements") or DEFAULT_STATEMENTS)
            print("DONE " + json.dumps({"error": error}), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
