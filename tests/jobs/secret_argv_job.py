"""A local-cluster session built by configure() with a catalog secret, run by test_secret_argv.py
in a subprocess: prints one JSON line with the command lines of the driver and executor JVMs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from pyspark_catalog_ext.spark.session import configure
from tests.jobs.local_cluster import stop_and_remove_work, work_dir

HADOOP_SECRET_KEYS = ("spark.hadoop.fs.s3a.access.key", "spark.hadoop.fs.s3a.secret.key",
                      "spark.hadoop.fs.azure.account.key.argvacct.dfs.core.windows.net",
                      "spark.hadoop.fs.gs.auth.service.account.private.key")


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def main() -> None:
    args = json.loads(sys.argv[1])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master("local-cluster[1,1,512]").appName("catalog-ext-argv")
    # Hadoop/cloud secrets a job may carry beside the catalog's (Spark's default redaction misses some).
    hadoop = {k: args["hadoop_secret"] for k in HADOOP_SECRET_KEYS} if args.get("hadoop_secret") else {}
    builder = configure(builder, "local", "lake", uri=args["uri"], warehouse=args["warehouse"],
                        credential=args["credential"],
                        extra_conf={"spark.ui.enabled": "false", "spark.executor.memory": "512m", **hadoop})
    spark = builder.getOrCreate()
    # A catalog call and a job, so that the catalog authenticated and an executor JVM runs.
    namespaces = spark.sql("SHOW NAMESPACES IN lake").count()
    spark.range(0, 100, 1, 2).count()
    driver = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    executors = [p for p in _children(driver) if "CoarseGrainedExecutorBackend" in _cmdline(p)]
    work = work_dir(spark)
    print("RESULT " + json.dumps({"driver": _cmdline(driver), "executors": [_cmdline(p) for p in executors],
                                  "namespaces": namespaces, "work_dir": str(work), "work_dir_used": work.is_dir()}), flush=True)
    stop_and_remove_work(spark)


if __name__ == "__main__":
    main()
