# Databricks notebook source
# MAGIC %md
# MAGIC # pyspark-catalog-ext on a configured cluster
# MAGIC
# MAGIC This notebook starts from the `spark` session the cluster gives it. The cluster's Spark config is the
# MAGIC output of `pyspark-catalog-ext spark-conf --format defaults` (jars, the Iceberg catalog `lake` and the
# MAGIC refresh shim), so vended credentials are renewed by the JVM with no Python call. Import it into
# MAGIC Databricks as is (File > Import); it needs the `pyspark-catalog-ext` library on the cluster.

# COMMAND ----------

import pyspark_catalog_ext as pce

# The refresh the cluster's settings already started, seen from Python: status, knobs, Python credential sources.
manager = pce.attach(spark)  # `spark`: the cluster's session
spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.notebook_demo")
for name in ("orders", "orders_staged"):
    spark.sql(f"DROP TABLE IF EXISTS lake.notebook_demo.{name} PURGE")  # reruns start clean

# COMMAND ----------

# MAGIC %md
# MAGIC ## A CTAS that outlives its credentials
# MAGIC The catalog vends table-scoped keys when the CTAS stages its table; the shim renews them before
# MAGIC they expire (for a staged table by staging it again), so the write commits even when it runs longer
# MAGIC than they live. `ROW_DELAY_MS` slows it down to outlast the short-lived keys of the test cluster
# MAGIC (6 s); set it to 0 on a real cluster.

# COMMAND ----------

ROW_DELAY_MS = 6
spark.sql(f"""
    CREATE TABLE lake.notebook_demo.orders USING iceberg
    TBLPROPERTIES ('write.target-file-size-bytes' = '1')  -- a file per row: writes all along the CTAS
    AS SELECT id AS order_id, id % 10 AS store
    FROM range(0, 3000, 1, 2)
    WHERE java_method('java.lang.Thread', 'sleep', CAST({ROW_DELAY_MS} AS BIGINT)) IS NOT NULL
""")
print("CTAS rows:", spark.table("lake.notebook_demo.orders").count())
for table in manager.status():
    print(table.name, "| strategy:", table.strategy, "| refreshes:", table.refresh_count,
          "| failures:", table.failure_count)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Build a table in several writes, publish it atomically
# MAGIC `stage_create` stages the table in the catalog; the writes stay invisible until the block ends,
# MAGIC then one commit publishes them all (or none, if the block raises).

# COMMAND ----------

from pyspark_catalog_ext import stage_create

january = spark.range(0, 1000).selectExpr("id AS order_id", "id % 10 AS store")
with stage_create(spark, "lake.notebook_demo.orders_staged", january) as staged:
    staged.write(january)
    staged.write(january.selectExpr("order_id + 1000 AS order_id", "store"))
print("published rows:", spark.table("lake.notebook_demo.orders_staged").count())

# COMMAND ----------

# MAGIC %md
# MAGIC ## Table maintenance, dry run
# MAGIC `pce.maintenance.plan` asks the catalog which maintenance policies apply to each table (Apache
# MAGIC Polaris publishes them) and shows the Iceberg procedures it would run, and why; nothing runs.
# MAGIC A catalog without a policy API reads the same records from a file, as here; on Polaris leave
# MAGIC `policy_file` out.

# COMMAND ----------

import json
import tempfile
from pathlib import Path

work = Path(tempfile.mkdtemp())
policy_file = work / "policies.json"
policy_file.write_text(json.dumps({"policies": [{
    "policy-type": "system.data-compaction", "name": "compact-small-files", "version": 1, "inheritable": True,
    "content": json.dumps({"version": "2025-02-03", "enable": True, "config": {"min-input-files": 2}}),
    "target": {"type": "namespace", "path": ["notebook_demo"]}}]}))
plan = pce.maintenance.plan(spark, "lake.notebook_demo.orders", policy_file=policy_file,
                            state_file=work / "state.json")
print(plan.render())
