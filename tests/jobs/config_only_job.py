"""A PySpark job that never imports pyspark_catalog_ext: everything comes from spark-submit's
properties file. Run by test_spark_submit.py; prints the row count and whether the package was
loaded."""

import json
import sys

from pyspark.sql import SparkSession

args = json.loads(sys.argv[1])
spark = SparkSession.builder.getOrCreate()
spark.sql(args["ctas"])
print("COUNT", spark.table(args["table"]).count(), flush=True)
print("IMPORTED", any(m.startswith("pyspark_catalog_ext") for m in sys.modules), flush=True)
spark.stop()
