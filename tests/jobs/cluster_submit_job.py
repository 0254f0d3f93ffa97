"""A PySpark job for a standalone cluster that never imports pyspark_catalog_ext: spark-submit's
properties file (from `spark-conf --jars packages`) is all it has. Run by
tests/slow/test_standalone_cluster.py. Prints STARTED before its CTAS, then one RESULT line: rows,
their sum, the driver's refresh status from SQL catalog_ext_status(), the executors and the time."""

import json
import sys
import time

from pyspark.sql import SparkSession

args = json.loads(sys.argv[1])
spark = SparkSession.builder.getOrCreate()
spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {args['namespace']}")
print("STARTED", flush=True)
started = time.monotonic()
spark.sql(args["ctas"])
seconds = time.monotonic() - started
count, total = spark.sql(f"SELECT count(*), sum(v) FROM {args['table']}").first()
result = {"count": count, "sum": total, "seconds": seconds,
          "status": json.loads(spark.sql("SELECT catalog_ext_status()").first()[0]),
          "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1,
          "imported": any(m.startswith("pyspark_catalog_ext") for m in sys.modules)}
print("RESULT " + json.dumps(result), flush=True)
spark.stop()
