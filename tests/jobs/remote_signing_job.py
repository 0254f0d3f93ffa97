"""A Spark job in remote-signing mode, run by test_remote_signing.py in a fresh interpreter (so
its JVM has never seen a storage key). Prints one `RESULT {json}` line with what the test checks."""

from __future__ import annotations

import json
import logging
import os
import sys

from pyspark.sql import SparkSession

from pyspark_catalog_ext.spark.session import configure


def bulk_delete(jvm, io, location: str) -> dict:
    """S3FileIO's bulk delete (DeleteObjects, through the signer's relay) of two files it wrote in
    the table, then of a path outside it (the signer must refuse that one)."""
    from py4j.protocol import Py4JJavaError

    paths = [f"{location}/data/pce-bulk-{i}.parquet" for i in range(2)]
    for path in paths:
        out = io.newOutputFile(path).create()
        out.write(120)
        out.close()
    written = [bool(io.newInputFile(p).exists()) for p in paths]
    batch = jvm.java.util.ArrayList()
    for path in paths:
        batch.add(path)
    io.deleteFiles(batch)
    outside = jvm.java.util.ArrayList()
    outside.add(location.rstrip("/") + "-elsewhere/data/x.parquet")
    try:
        io.deleteFiles(outside)
        outside_error = None
    except Py4JJavaError as exc:
        outside_error = exc.java_exception.getClass().getName()
    return {"written": written, "exists_after": [bool(io.newInputFile(p).exists()) for p in paths], "outside_error": outside_error}


def main() -> None:
    args = json.loads(sys.argv[1])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)  # a leak would show in DEBUG logs
    builder = SparkSession.builder.master("local[2]").appName("catalog-ext-remote-signing")
    builder = configure(builder, "local", "lake", uri=args["uri"], warehouse=args["warehouse"], credential=args["credential"],
                        delegation="remote-signing", extra_conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("INFO")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.rs")
    spark.sql(f"CREATE TABLE {args['table']} AS SELECT id, CAST(id * 2 AS STRING) AS doubled FROM range(0, 1000, 1, 2)")
    row = spark.sql(f"SELECT count(*) AS n, sum(id) AS total FROM {args['table']}").collect()[0]

    jvm = spark.sparkContext._jvm
    namespace = spark.sparkContext._gateway.new_array(jvm.String, 1)
    namespace[0] = "rs"
    ident = jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, args["table"].rsplit(".", 1)[1])
    table = spark._jsparkSession.sessionState().catalogManager().catalog("lake").loadTable(ident).table()
    fileio = dict(table.io().properties())
    bulk = bulk_delete(jvm, table.io(), table.location())
    conf = dict(spark.sparkContext.getConf().getAll())
    # a table placed at this table's location is refused by the lakehouse's location rule
    try:
        spark.sql(f"CREATE TABLE lake.rs.steal USING iceberg LOCATION '{table.location()}' AS SELECT 1 AS id")
        steal_error = None
    except Exception as exc:  # noqa: BLE001 - the message is what the test checks
        java = getattr(exc, "java_exception", None)
        steal_error = (java.getMessage() if java is not None else str(exc))[:400]
    steal_exists = bool(spark.sql("SHOW TABLES IN lake.rs LIKE 'steal'").count())

    from pyspark_catalog_ext.spark.credentials import attach

    manager = attach(spark)
    result = {"count": row["n"], "total": row["total"], "fileio": fileio, "conf": conf,
              "fileio_class": table.io().getClass().getName(),
              "refresh_needs": manager.refresh_needs(), "tables_tracked": len(manager.status()), "bulk_delete": bulk,
              "steal_error": steal_error, "steal_exists": steal_exists, "location": table.location()}
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
