"""A Spark job in executor JVMs of their own (local-cluster), run by test_credential_refresh.py in a
subprocess. Prints one JSON line with what the test checks."""

from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession

from pyspark_catalog_ext.credentials import RefreshPolicy, attach
from pyspark_catalog_ext.session import configure


def main() -> None:
    args = json.loads(sys.argv[1])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master("local-cluster[2,1,1024]").appName("catalog-ext-multi-jvm")
    builder = configure(builder, "local", "fast", uri=args["uri"], warehouse=args["warehouse"],
                        credential=args["credential"], extra_conf={"spark.ui.enabled": "false"})
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    manager = attach(spark, policy=RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS fast.db")
    table = args["table"]
    (spark.range(0, args["rows"], 1, 4)
     .where(f"java_method('java.lang.Thread', 'sleep', CAST({args['ms_per_row']} AS BIGINT)) IS NOT NULL")
     .selectExpr("id", "id * 3 AS v")
     .writeTo(table).tableProperty("write.target-file-size-bytes", "1").create())
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    result = {
        "count": spark.table(table).count(),
        "executors": executors,
        "channel": manager.channel_stats(),
        "status": [{"name": s.name, "by_strategy": s.refreshes_by_strategy, "failures": s.failure_count}
                   for s in manager.status()],
    }
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
