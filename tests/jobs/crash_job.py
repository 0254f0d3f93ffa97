"""A driver that test_crash.py kills with SIGKILL at a random point: a CTAS, a staged multi-write
or a staged commit into a fresh table. It starts Spark, prints READY and waits for GO on stdin
(so the test can start the next job while it checks the last one), then prints the markers the
test times its kill by."""

from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession

from pyspark_catalog_ext.spark.session import configure


def mark(text: str) -> None:
    print(text, flush=True)


def main() -> None:
    args = json.loads(sys.argv[1])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master("local[2]").appName("catalog-ext-crash")
    builder = configure(builder, "local", "crash", check=False, uri=args["uri"], warehouse=args["warehouse"],
                        credential=args["credential"],
                        extra_conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    name, rows, mode = f"crash.crash.{args['table']}", args["rows"], args["mode"]
    # 20 ms per row of work (0.2 s per task), so kills land inside writes too
    df = (spark.range(0, rows, 1, 4)
          .where("java_method('java.lang.Thread', 'sleep', CAST(20 AS BIGINT)) IS NOT NULL")
          .selectExpr("id", "id * 3 AS v"))
    spark.sql("SHOW TABLES IN crash.crash").collect()  # the catalog is loaded before READY
    mark("READY")
    if sys.stdin.readline().strip() != "GO":
        return
    mark("GO")
    if mode == "ctas":
        df.createOrReplaceTempView("src")
        spark.sql(f"CREATE TABLE {name} USING iceberg AS SELECT * FROM src")
    else:
        from pyspark_catalog_ext.staging.staged import stage_create

        staged = stage_create(spark, name, df)
        mark("LOCATION " + staged.location)
        half = rows // 2
        staged.write(df.where(f"id < {half}"))
        mark("WROTE 1")
        staged.write(df.where(f"id >= {half}"))
        mark("COMMITTING")
        staged.commit()
    mark("DONE")


if __name__ == "__main__":
    main()
