"""A long Spark read through S3FileIO's analytics accelerator (`s3.analytics-accelerator.enabled`),
which reads through the S3AsyncClient of the shim's client factory. Run by
tests/slow/test_accelerated_read.py in a process of its own: the accelerator's library ships in
`iceberg-aws-bundle` (Iceberg 1.11+ stacks), not in the PyPI route's 1.10.2 jars.

Prints `STEP <name> <json>` per step. argv[1]: JSON with conn (configure()'s connection arguments
but the credential, which comes in $ACCEL_CREDENTIAL), iceberg, ns, files, ms (per row of the read).
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def step(name: str, **facts: object) -> None:
    print(f"STEP {name} {json.dumps(facts)}", flush=True)


def main() -> None:
    args = json.loads(sys.argv[1])
    conn, ns = {**args["conn"], "credential": os.environ["ACCEL_CREDENTIAL"]}, args["ns"]
    from pyspark.sql import SparkSession

    import pyspark_catalog_ext as pce
    from pyspark_catalog_ext.refresh import RefreshPolicy

    builder = (SparkSession.builder.master("local[1]").appName("accelerated-read")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.catalog.lake.s3.analytics-accelerator.enabled", "true"))
    spark = pce.configure(builder, "local", "lake", iceberg=args["iceberg"],
                          refresh=RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4), **conn).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{ns}")
    files, rows = args["files"], args["files"] * 50
    spark.range(0, rows, 1, files).selectExpr("id", "id % 7 AS k").writeTo(f"lake.{ns}.src").create()
    # The same table through plain Iceberg's REST catalog with the shim's client factory: no table
    # handle, so the factory's clients take the vended keys as Iceberg's own would.
    for key, value in spark.sparkContext.getConf().getAll():
        if key.startswith("spark.sql.catalog.lake.") and not key.endswith(".catalog-impl"):
            spark.conf.set(key.replace(".lake.", ".plain.", 1), value)
    spark.conf.set("spark.sql.catalog.plain", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.plain.type", "rest")
    plain = spark.sql(f"SELECT count(*) FROM plain.{ns}.src").first()[0]
    step("written", iceberg=spark.sparkContext._jvm.org.apache.iceberg.IcebergBuild.version(), plain_rows=plain)

    # One task reads the files one after another, slowly: it opens files long after its first keys.
    started = time.monotonic()
    read = spark.sql(f"SELECT count(*), sum(k) FROM lake.{ns}.src "
                     f"WHERE java_method('java.lang.Thread', 'sleep', CAST({args['ms']} AS BIGINT)) IS NOT NULL").first()
    step("read", rows=read[0], sum=read[1], expected_sum=sum(i % 7 for i in range(rows)),
         seconds=round(time.monotonic() - started, 1))
    spark.stop()


if __name__ == "__main__":
    main()
