"""A plain PySpark job for spark-submit, run by test_spark_submit.py. Its Spark settings come only
from the properties file it is submitted with. Prints its driver JVM's listening sockets, then the
time of its last statement (spark.stop())."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession


def listening_sockets(pid: int) -> list[int]:
    """Local ports of TCP sockets in LISTEN state owned by process `pid` (from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def main() -> None:
    args = json.loads(sys.argv[1])
    spark = SparkSession.builder.getOrCreate()
    if args.get("attach"):
        import pyspark_catalog_ext as pce

        pce.attach(spark)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
    spark.sql(f"CREATE TABLE {args['table']} USING iceberg AS SELECT id, id * 2 AS v FROM range(0, {args['rows']}, 1, 2)")
    print("COUNT", spark.table(args["table"]).count(), flush=True)
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    print("LISTENING " + json.dumps(listening_sockets(pid)), flush=True)
    print(f"LAST {time.time():.3f}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
