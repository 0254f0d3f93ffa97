"""A PySpark job that reads its own driver's metrics while running: a CTAS, a read, then the Spark
UI's /metrics/prometheus (the PrometheusServlet sink). Run by test_metrics.py; prints each line of
the page as "METRIC <line>" and the row count."""

import json
import sys
import urllib.request

from pyspark.sql import SparkSession

args = json.loads(sys.argv[1])
spark = SparkSession.builder.getOrCreate()
spark.sql("CREATE NAMESPACE IF NOT EXISTS " + args["table"].rsplit(".", 1)[0])
spark.sql(args["ctas"])
print("COUNT", spark.table(args["table"]).count(), flush=True)
url = spark.sparkContext.uiWebUrl + "/metrics/prometheus"
with urllib.request.urlopen(url, timeout=30) as response:
    for line in response.read().decode().splitlines():
        print("METRIC", line, flush=True)
spark.stop()
