"""Keys that die early, on 4 executor JVMs (local-cluster, spark.task.maxFailures=1 so that any
failed task fails the job): a SQL CTAS reading a committed table, then a long read, while S3
rejects every key at 30 % of its stated lifetime. The executors report the rejected key to the
driver, which refreshes once per rejection wave for all of them (the in-process cases:
tests/spark/test_early_rejection.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.servers import CatalogProxy, S3ExpiryProxy

LIFETIME = 10  # seconds the catalog proxy states for every key


def rejection_report(s3: Any, catalog_entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Waves (distinct keys S3 rejected), reactive refreshes (the driver's) and catalog refreshes."""
    return {"waves": len(s3.rejected), "rejected_requests": s3.total_rejected,
            "reactive_refreshes": sum(e["rejection_count"] for e in catalog_entries),
            "refreshes": sum(e["refresh_count"] for e in catalog_entries)}


JOB = r'''
import json, os, sys, time
from pyspark.sql import SparkSession
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.spark.credentials import attach
from pyspark_catalog_ext.spark.session import configure
from tests.jobs.local_cluster import stop_and_remove_work

args = json.loads(sys.argv[1])
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
builder = SparkSession.builder.master("local-cluster[4,1,512]").appName("catalog-ext-early-rejection")
builder = configure(builder, "local", "early", uri=args["uri"], warehouse=args["warehouse"],
                    credential=args["credential"],
                    extra_conf={"spark.task.maxFailures": "1",  # any failed task fails the job
                                "spark.executor.memory": "512m"})
spark = builder.getOrCreate()
manager = attach(spark, policy=RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4))
spark.sql("CREATE NAMESPACE IF NOT EXISTS early.db")
(spark.range(0, 12000, 1, 24).selectExpr("id", "id % 7 AS k").writeTo("early.db.early_jvm_src").create())
print("READY", flush=True)
sys.stdin.readline()  # the test starts killing keys early now
started = time.monotonic()
spark.sql("CREATE TABLE early.db.early_jvm_copy USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1') AS "
          "SELECT id, k * 3 AS v FROM early.db.early_jvm_src WHERE java_method('java.lang.Thread', 'sleep', CAST(4 AS BIGINT)) IS NOT NULL")
read = spark.table("early.db.early_jvm_src").where("java_method('java.lang.Thread', 'sleep', CAST(4 AS BIGINT)) IS NOT NULL").count()
result = {"ctas": spark.table("early.db.early_jvm_copy").count(), "read": read, "seconds": time.monotonic() - started,
          "sum": spark.sql("SELECT sum(v) FROM early.db.early_jvm_copy").first()[0],
          "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1,
          "entries": [e for e in json.loads(manager._shim._api.registryEntries()) if e["catalog"] == "early"],
          "plugin": json.loads(manager._shim._api.pluginStats())}
print("RESULT " + json.dumps(result), flush=True)
stop_and_remove_work(spark)
'''


def test_ctas_and_long_read_on_four_executor_jvms(lakehouse, tmp_path, spark):
    """local-cluster with 4 executor JVMs and spark.task.maxFailures=1: the executors report the
    rejected key to the driver, which refreshes once per wave for all of them."""
    info = lakehouse.info
    script = tmp_path / "early_rejection_job.py"
    script.write_text(JOB)
    with S3ExpiryProxy(info.s3_endpoint, exempt=(info.access_key,)) as s3, \
            CatalogProxy(info.iceberg_uri, short_lifetime_seconds=LIFETIME, s3_endpoint=s3.url, s3_proxy=s3) as catalog:
        args = {"uri": catalog.url, "warehouse": info.warehouse, "credential": info.credential}
        root = Path(__file__).resolve().parents[2]
        proc = subprocess.Popen([sys.executable, str(script), json.dumps(args)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(root)})
        try:
            assert proc.stdout is not None and proc.stdin is not None
            for line in proc.stdout:
                if line.startswith("READY"):
                    break
            s3.max_age_seconds = 0.3 * LIFETIME
            s3.reset_counters()
            catalog.reset_counters()
            proc.stdin.write("go\n")
            proc.stdin.flush()
            out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and lines, err[-4000:]
        result = json.loads(lines[0][len("RESULT "):])
        assert result["executors"] == 4
        assert result["ctas"] == 12000 and result["read"] == 12000
        assert result["sum"] == 3 * sum(i % 7 for i in range(12000))
        assert result["plugin"]["served"] > 0
        report = rejection_report(s3, result["entries"])
        report["seconds"] = round(result["seconds"], 1)
        report["catalog_refresh_requests"] = (catalog.count(kind="stage-create", table="db.early_jvm_copy") - 1
                                              + catalog.count(kind="load", table="db.early_jvm_src")
                                              + catalog.count(kind="credentials", table="db.early_jvm_src"))
        print("4 executor JVMs:", report)
        assert report["rejected_requests"] > 0, report
        assert 1 <= report["reactive_refreshes"] <= report["waves"], report
