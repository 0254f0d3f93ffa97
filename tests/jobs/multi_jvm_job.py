"""A Spark job in executor JVMs of their own (local-cluster), run by test_credential_refresh.py in a
subprocess. Prints one JSON line with what the test checks."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import urllib.request

from pyspark.sql import SparkSession

from pyspark_catalog_ext.refresh import FunctionSource, RefreshPolicy
from pyspark_catalog_ext.spark.conf import SPARK_CATALOG, catalog_properties
from pyspark_catalog_ext.spark.credentials import attach
from pyspark_catalog_ext.spark.session import configure
from tests.jobs.local_cluster import stop_and_remove_work


def main() -> None:
    args = json.loads(sys.argv[1])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master("local-cluster[2,1,1024]").appName("catalog-ext-multi-jvm")
    # Everything a leak could hide in is switched on: INFO logs everywhere, the UI, event logs.
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    extra = {"spark.ui.enabled": "true", "spark.ui.port": "0", "spark.eventLog.enabled": "true",
             "spark.eventLog.dir": args["event_log_dir"],
             # Spark's own RPC authentication and encryption carry the plugin's messages.
             "spark.authenticate": "true", "spark.network.crypto.enabled": "true"}
    # Catalog `dead`: the same catalog, for read_with_no_refresh_possible. Set at startup, not with
    # spark.conf.set: Spark's event log redacts job properties only for keys of the SparkConf.
    dead = catalog_properties("local", uri=args["uri"], warehouse=args["warehouse"], credential=args["credential"])
    extra.update({"spark.sql.catalog.dead": SPARK_CATALOG, **{f"spark.sql.catalog.dead.{k}": v for k, v in dead.items()}})
    # Standalone/local-cluster Spark takes its RPC secret only from the conf (a test-only secret).
    builder = builder.config("spark.authenticate.secret", os.environ["CATALOG_EXT_TEST_AUTH_SECRET"])
    builder = configure(builder, "local", "fast", uri=args["uri"], warehouse=args["warehouse"],
                        credential=args["credential"], extra_conf=extra)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("INFO")
    from pyspark_catalog_ext.spark import credentials as manager_module

    auto_attached = bool(manager_module._MANAGERS)  # configure() alone must be enough
    manager = attach(spark, policy=RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS fast.db")
    table = args["table"]
    (spark.range(0, args["rows"], 1, 4)
     .where(f"java_method('java.lang.Thread', 'sleep', CAST({args['ms_per_row']} AS BIGINT)) IS NOT NULL")
     .selectExpr("id", "id * 3 AS v")
     .writeTo(table).tableProperty("write.target-file-size-bytes", "1").create())
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    ui = spark.sparkContext.uiWebUrl
    app_id = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app_id}/environment", timeout=30) as resp:
        environment_page = resp.read().decode()
    result = {
        "environment_page": environment_page,
        "auto_attached": auto_attached,
        "count": spark.table(table).count(),
        "executors": executors,
        "plugin": manager.plugin_stats(),
        "rpc_encrypted": spark.sparkContext.getConf().get("spark.network.crypto.enabled"),
        "status": [{"name": s.name, "by_strategy": s.refreshes_by_strategy, "failures": s.failure_count}
                   for s in manager.status()],
    }
    result["refresh_fails"] = read_with_no_refresh_possible(spark, manager, table)
    result["work_dir"] = str(stop_and_remove_work(spark, keep=True))  # the test reads the executors' logs, then removes it
    print("RESULT " + json.dumps(result), flush=True)


REFUSAL = "the test's credential source refuses every request"


def read_with_no_refresh_possible(spark, manager, table: str) -> dict:
    """Catalog `dead` (the same catalog) served by a Python source that always fails. A read that
    outlives the table's first credentials must end in the documented error in the executors,
    carrying the driver's error, within a bounded time."""
    def refuse(_table):
        raise RuntimeError(REFUSAL)

    manager.set_policy(RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4, timeout_s=4))
    attach(spark, sources={"dead": FunctionSource(refuse)})
    dead_table = "dead." + table.split(".", 1)[1]
    started = time.monotonic()
    try:
        rows = spark.table(dead_table).where(
            "java_method('java.lang.Thread', 'sleep', CAST(5 AS BIGINT)) IS NOT NULL").count()
        return {"rows": rows, "error": None, "seconds": time.monotonic() - started}
    except Exception as exc:  # noqa: BLE001 - the test checks the message
        return {"rows": None, "error": str(exc), "seconds": time.monotonic() - started}


if __name__ == "__main__":
    main()
