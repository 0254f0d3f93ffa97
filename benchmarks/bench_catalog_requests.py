"""Benchmark 2: credential requests reaching the catalog during a 16-task CTAS over >= 3 refresh cycles.

Ours (the shim: one driver-side refresh per table) against Iceberg's own VendedCredentialsProvider
(one per S3 client, i.e. per task), both pointed at the same refresh endpoint served by the loopback
catalog proxy, which also shortens credential lifetimes (and the S3 proxy enforces them).

The lifetime defaults to 360 s: Iceberg prefetches 5 minutes before expiry, so with anything
shorter it would refresh on every S3 call, which would not be a fair comparison. Both sides then
renew about every 60 s; a run takes ~4 minutes per side. Renewals are counted from each side's
measured time (a loaded machine stretches the tasks past --task-seconds).

The herd needs executors in JVMs of their own: in one JVM (`--master local[16]`) every task shares
the broadcast FileIO, so Iceberg's provider also asks once per cycle. The default master runs
4 executor JVMs with 4 task slots each, as a small cluster would.

    python benchmarks/bench_catalog_requests.py [--lifetime 360] [--task-seconds 200] [--tasks 16]
        [--master local-cluster[4,4,1024]]
"""

from __future__ import annotations

import argparse
import math
import time

from _common import add_spark_catalog, spark_session

from pyspark_catalog_ext.credentials import RefreshPolicy, attach
from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from tests.servers import CatalogProxy, S3ExpiryProxy


def run_ctas(spark, table: str, tasks: int, task_seconds: float) -> float:
    rows_per_task = 10_000
    ms_per_row = task_seconds * 1000 / rows_per_task
    started = time.monotonic()
    (spark.range(0, tasks * rows_per_task, 1, tasks)
     .where(f"java_method('java.lang.Thread', 'sleep', CAST({ms_per_row:.0f} AS BIGINT)) IS NOT NULL")
     .selectExpr("id", "id * 2 AS v")
     .writeTo(table)
     .tableProperty("write.target-file-size-bytes", "1")  # a new file (and S3 PUT) every 1000 rows
     .create())
    elapsed = time.monotonic() - started
    assert spark.table(table).count() == tasks * rows_per_task
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lifetime", type=float, default=360.0)
    parser.add_argument("--task-seconds", type=float, default=200.0)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--master", default="local-cluster[4,4,1024]")
    args = parser.parse_args()

    with start_lakehouse() as lake, S3ExpiryProxy(lake.info.s3_endpoint, exempt=(lake.info.access_key,)) as s3, \
            CatalogProxy(lake.info.iceberg_uri, short_lifetime_seconds=args.lifetime, s3_endpoint=s3.url,
                         s3_proxy=s3, advertise_refresh_endpoint=True) as catalog:
        s3.max_age_seconds = args.lifetime
        spark = spark_session(lake, args.master)  # sleeping tasks: all 16 run at once
        add_spark_catalog(spark, lake, "ours", catalog.url, shim=True)
        add_spark_catalog(spark, lake, "iceberg", catalog.url, shim=False)
        attach(spark, policy=RefreshPolicy(check_interval_s=5))  # renew max(5 min, 20%) ahead: as Iceberg
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ours.bench")

        results = {}
        for name in ("ours", "iceberg"):
            catalog.reset_counters()
            s3.reset_counters()
            elapsed = run_ctas(spark, f"{name}.bench.ctas_{int(time.time())}", args.tasks, args.task_seconds)
            counts = catalog.counts()
            results[name] = (elapsed, counts.get("credentials", 0), counts.get("stage-create", 0), s3.total_rejected)

        period = max(1.0, args.lifetime - 300.0)  # both renew 5 min before expiry
        print(f"CTAS on {args.master}: {args.tasks} concurrent tasks x {args.task_seconds:.0f} s, credential lifetime "
              f"{args.lifetime:.0f} s: a renewal due every {period:.0f} s")
        print(f"{'client':<10} {'elapsed s':>10} {'renewals':>9} {'refresh requests':>17} {'per renewal':>12} "
              f"{'stage-creates':>14} {'S3 403s':>8}")
        per_renewal = {}
        for name, (elapsed, refreshes, stages, rejected) in results.items():
            # Renewals due while this side's job ran (a loaded machine stretches the tasks).
            renewals = max(1, math.floor(elapsed / period))
            per_renewal[name] = refreshes / renewals
            print(f"{name:<10} {elapsed:>10.1f} {renewals:>9} {refreshes:>17} {per_renewal[name]:>12.2f} "
                  f"{stages:>14} {rejected:>8}")
        print(f"refresh requests per table per renewal: ours {per_renewal['ours']:.2f}, "
              f"Iceberg {per_renewal['iceberg']:.2f}")
        spark.stop()


if __name__ == "__main__":
    main()
