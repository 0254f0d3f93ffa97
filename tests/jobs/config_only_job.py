"""A PySpark job that never imports pyspark_catalog_ext: everything comes from spark-submit's
properties file. Run by test_spark_submit.py, test_packages.py and test_mixed_stores.py; runs each
statement of `ctas` (one or a list), prints each table's row count (`table`: one or a list) and
whether the package was loaded."""

import json
import sys

from pyspark.sql import SparkSession

args = json.loads(sys.argv[1])
spark = SparkSession.builder.getOrCreate()
for statement in [args["ctas"]] if isinstance(args["ctas"], str) else args["ctas"]:
    spark.sql(statement)
for table in [args["table"]] if isinstance(args["table"], str) else args["table"]:
    print("COUNT", spark.table(table).count(), flush=True)
print("IMPORTED", any(m.startswith("pyspark_catalog_ext") for m in sys.modules), flush=True)
spark.stop()
