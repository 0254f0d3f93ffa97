"""A PySpark job on a standalone cluster (master spark://...) built with configure(), run by
tests/slow/test_standalone_cluster.py. Prints STARTED before its CTAS (the test may kill a Worker
then), then one RESULT line: rows, their sum, the refresh status, and every task attempt of the CTAS
with its executor and how it ended (from the driver's status REST API)."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request

from pyspark.sql import SparkSession

from pyspark_catalog_ext import configure
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.spark.credentials import attach


def task_attempts(spark: SparkSession) -> list[dict]:
    """Every task attempt of every stage so far: (stage, index, attempt, executor, status, error)."""
    sc = spark.sparkContext
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    with urllib.request.urlopen(f"{base}/stages?details=true", timeout=30) as resp:
        stages = json.load(resp)
    return [{"stage": s["stageId"], "index": t["index"], "attempt": t["attempt"], "executor": t["executorId"],
             "status": t["status"], "error": (t.get("errorMessage") or "")[:300]}
            for s in stages for t in (s.get("tasks") or {}).values()]


def main() -> None:
    args = json.loads(sys.argv[1])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(args["master"]).appName("catalog-ext-standalone")
    builder = configure(builder, "local", "lake", uri=args["uri"], warehouse=args["warehouse"],
                        credential=os.environ["CATALOG_CREDENTIAL"],
                        refresh=RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4),
                        extra_conf=args["conf"])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {args['namespace']}")
    print("STARTED", flush=True)
    started = time.monotonic()
    spark.sql(args["ctas"])
    seconds = time.monotonic() - started
    count, total = spark.sql(f"SELECT count(*), sum(v) FROM {args['table']}").first()
    manager = attach(spark)
    result = {"count": count, "sum": total, "seconds": seconds,
              "status": [{"name": s.name, "by_strategy": s.refreshes_by_strategy, "failures": s.failure_count}
                         for s in manager.status()],
              "plugin": manager.plugin_stats(), "tasks": task_attempts(spark)}
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
