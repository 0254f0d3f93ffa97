"""Benchmark 2: refresh requests reaching the catalog per table per renewal, ours against Iceberg's own provider.

Ours (the shim: one driver-side refresh per table) against Iceberg's own VendedCredentialsProvider
(one per S3 client: one per FileIO instance, i.e. per executor JVM and per driver), both pointed at
the same refresh endpoint, while an S3 proxy makes keys die at the end of their lifetime.

Two workloads:

* default (no --family): a 16-task CTAS on SeaweedFS behind the loopback CatalogProxy, which
  advertises a refresh endpoint that also serves staged tables; ours, then Iceberg's.
* --family NAME|all: for each catalog family of tests/emulators (its /v1/config, auth, vending,
  refresh endpoint and quirks in front of the real SeaweedFS, configured from the family's profile
  and nothing else), a long read of a committed table: 16 tasks, each opening a new data file about
  every task-seconds/20 s. A read, not a CTAS, because Iceberg's provider only has an endpoint to
  call for committed tables on every family (Polaris and Gravitino answer a staged table's refresh
  with 404). Ours and Iceberg's read two identical tables at the same time in the same executors,
  and the catalog's log counts the requests that can hand out keys for each table during its read.
  Where Iceberg's provider cannot run (no endpoint advertised, no vended keys) the output says why
  and ours runs alone.

When Iceberg renews: its provider's keys go stale at expiry and prefetch 5 minutes before, and
the AWS SDK's CachedSupplier jitters that prefetch uniformly up to 1 minute before stale, so each
provider renews at a random point 5 to 1 minutes before expiry: on average 3 minutes before, every
lifetime - 180 s. Lifetimes must exceed 300 s (below, it refreshes on every S3 call). Renewals:
ours are the shim's own count (it tracks each table's refreshes); Iceberg's have no counter, so they
are the renewals one client makes on average in that side's measured time, elapsed / (lifetime -
180 s), and its requests over them show how many clients asked. For the reads ours renews 3 minutes
ahead too, so both denominators count the same renewals. The CTAS keeps its first setting: 360 s
keys, ours renewing every 60 s (5 minutes ahead), ~4 minutes per side.

Iceberg 1.11+ (`--iceberg 1.12.0`; read from the 1.12.0 S3FileIO bytecode) adds a scheduled refresh
beside the provider: when an S3FileIO that holds storage credentials first builds its S3 clients, it
schedules, on a JVM-wide pool, one GET of `client.refresh-credentials-endpoint` at the earliest
`s3.session-token-expires-at-ms` minus exactly 5 minutes (no jitter; at once if that is past), stores
the answer as its storage credentials and schedules the next the same way, until closed. Its S3
clients are not rebuilt and keep renewing through their own providers. So plain Iceberg 1.12 asks
once per FileIO instance (the driver's, one per executor JVM) every lifetime - 300 s, on top of its
providers: for the 360 s CTAS keys every 60 s, and below 300 s it would ask without pause. Iceberg's
denominator stays one provider's renewals (lifetime - 180 s), so the numbers compare across stacks.
Measured on 1.12.0 (docs/benchmarks.md), that scheduled GET fails on every executor with "Invalid
credentials endpoint: null" (apache/iceberg#17810) and is not rescheduled, so plain Iceberg's count
there is its providers'. With the shim Iceberg schedules nothing (the shim hands the expiry under
`catalog-ext.session-token-expires-at-ms` and removes the endpoint): the CTAS prints ours' requests
beyond its own count of renewals, which must be +0, i.e. exactly 1 request per table per renewal.
The reads default to 310 s keys and 400 s tasks (3 renewals of 130 s), ~8 minutes per family.

The herd needs executors in JVMs of their own: in one JVM (`--master local[16]`) every task shares
the broadcast FileIO, so Iceberg's provider also asks once per cycle. The default master runs
4 executor JVMs (4 task slots each for the CTAS, 8 for the reads: both sides at once).

    python benchmarks/bench_catalog_requests.py [--family all|NAME[,NAME...]] [--iceberg 1.12.0] [--timeline] [--lifetime 360]
        [--task-seconds 200] [--tasks 16] [--master local-cluster[4,4,1024]]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from _common import add_spark_catalog, spark_session

from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.spark.conf import spark_conf
from pyspark_catalog_ext.spark.credentials import attach
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import select_stack
from tests.emulators.behaviour import FAMILIES, NO_EXPIRY, NONE, Behaviour
from tests.emulators.emulator import Emulator, connection
from tests.servers import CatalogProxy, S3ExpiryProxy

RENEWING_KINDS = ("credentials", "load", "stage-create")  # every request that can hand out new keys
ICEBERG_PREFETCH_S = 300.0  # Iceberg 1.10's VendedCredentialsProvider: prefetch 5 min before expiry
# ... which the AWS SDK's CachedSupplier jitters uniformly up to 1 min before stale (= expiry): on average
ICEBERG_MEAN_AHEAD_S = (ICEBERG_PREFETCH_S + 60.0) / 2  # 3 minutes before expiry
FILES_PER_TASK = 20
ROWS_PER_FILE = 1000  # Iceberg checks the file size every 1000 rows: with a 1-byte target, a file each
OPEN_FILE_COST = 4 * 1024 * 1024  # read.split.open-file-cost default: a tiny file weighs this much


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


def ctas_main(args: argparse.Namespace) -> None:
    """The original workload: a CTAS on SeaweedFS behind CatalogProxy, ours then Iceberg's."""
    master = args.master or "local-cluster[4,4,1024]"
    with start_lakehouse() as lake, S3ExpiryProxy(lake.info.s3_endpoint, exempt=(lake.info.access_key,)) as s3, \
            CatalogProxy(lake.info.iceberg_uri, short_lifetime_seconds=args.lifetime, s3_endpoint=s3.url,
                         s3_proxy=s3, advertise_refresh_endpoint=True) as catalog:
        s3.max_age_seconds = args.lifetime
        spark = spark_session(lake, master, iceberg=args.iceberg)  # sleeping tasks: all 16 run at once
        stack = spark.sparkContext._jvm.org.apache.iceberg.IcebergBuild.version()
        add_spark_catalog(spark, lake, "ours", catalog.url, shim=True)
        add_spark_catalog(spark, lake, "iceberg", catalog.url, shim=False)
        # renew max(5 min, 20%) ahead: as Iceberg's provider prefetches (and 1.11+'s scheduler fires)
        manager = attach(spark, policy=RefreshPolicy(check_interval_s=5))
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ours.bench")

        results = {}
        for name in ("ours", "iceberg"):
            catalog.reset_counters()
            s3.reset_counters()
            table = f"bench.ctas_{name}_{int(time.time())}"
            elapsed = run_ctas(spark, f"{name}.{table}", args.tasks, args.task_seconds)
            counts = catalog.counts()
            # every request that could hand out keys, less the CTAS's own first stage-create
            requests = counts.get("credentials", 0) + counts.get("stage-create", 0) - 1
            own = shim_refreshes(manager, name, table) if name == "ours" else None
            results[name] = (elapsed, own, requests, counts, s3.total_rejected)

        period = renewal_period(args.lifetime)
        print(f"CTAS on {master}, Spark {spark.version} + Iceberg {stack}: {args.tasks} concurrent tasks x "
              f"{args.task_seconds:.0f} s, credential lifetime {args.lifetime:.0f} s: ours renews every {period:.0f} s, "
              f"Iceberg's provider per S3 client every {iceberg_period(args.lifetime):.0f} s on average"
              + (f", its 1.11+ scheduler per FileIO every {period:.0f} s" if scheduled_refresh(stack) else ""))
        print(f"{'client':<10} {'elapsed s':>10} {'renewals':>9} {'requests':>9} {'per renewal':>12} "
              f"{'beyond ours':>12} {'S3 403s':>8}  requests by kind (incl. the CTAS's first stage-create)")
        per_renewal = {}
        for name, (elapsed, own, requests, counts, rejected) in results.items():
            # ours: the shim's own count of its renewals; Iceberg's: one client's renewals on average
            renewals = own if own else (renewals_due(elapsed, period) if name == "ours"
                                        else elapsed / iceberg_period(args.lifetime))
            per_renewal[name] = requests / renewals
            beyond = f"{requests - own:+d}" if own is not None else "-"  # Iceberg's scheduler or a duplicate
            print(f"{name:<10} {elapsed:>10.1f} {renewals:>9.1f} {requests:>9} {per_renewal[name]:>12.2f} "
                  f"{beyond:>12} {rejected:>8}  {dict(sorted(counts.items()))}")
        print(f"catalog requests per table per renewal on Iceberg {stack}: ours {per_renewal['ours']:.2f}, "
              f"Iceberg {per_renewal['iceberg']:.2f} (ratio {per_renewal['iceberg'] / per_renewal['ours']:.1f}x); "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        spark.stop()


def scheduled_refresh(iceberg: str) -> bool:
    """Iceberg 1.11+'s S3FileIO schedules its own refresh of vended keys (apache/iceberg#15678)."""
    major, minor = (int(x) for x in iceberg.split(".")[:2])
    return (major, minor) >= (1, 11)


def renewal_period(lifetime: float) -> float:
    """Seconds between our renewals when we renew 5 minutes before expiry (the CTAS setting)."""
    return max(1.0, lifetime - ICEBERG_PREFETCH_S)


def iceberg_period(lifetime: float) -> float:
    """Seconds between one Iceberg client's renewals, on average (the SDK's prefetch jitter)."""
    return lifetime - ICEBERG_MEAN_AHEAD_S


def renewals_due(elapsed: float, period: float) -> int:
    """Renewals due while a side's job ran (a loaded machine stretches the tasks)."""
    return max(1, math.floor(elapsed / period))


# ---------------------------------------------------------------------- per emulated family

def iceberg_provider_gap(b: Behaviour) -> str | None:
    """Why Iceberg 1.10's own VendedCredentialsProvider cannot run on this family, or None when it can.

    It runs only when the table answer names `client.refresh-credentials-endpoint` (AwsClientProperties
    then builds it); otherwise S3FileIO keeps the keys of the load until they die."""
    if b.vends == NONE:
        return "vends no keys (the job's own): nothing to refresh"
    if b.refresh_endpoint != NONE:
        return None
    expiry = " and keys without expiry" if b.vends == NO_EXPIRY else ""
    if b.credentials_endpoint != NONE:
        return f"GET .../credentials is served but not advertised{expiry}: Iceberg keeps the first keys"
    return f"no refresh endpoint{expiry}: Iceberg keeps the first keys (ours reloads the table)"


def select_families(names: str) -> list[Behaviour]:
    """`all`, or a comma list of families (`polaris`: every release) and release ids (`polaris-1.7.0`);
    ValueError naming the choices otherwise."""
    if names == "all":
        return list(FAMILIES)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if not any(n in (b.id, b.family) for b in FAMILIES)]
    if unknown or not wanted:
        raise ValueError(f"--family {names!r}: {', '.join(unknown) or 'nothing'} is not an emulated catalog; use all "
                         "or a comma list of: " + ", ".join(sorted({b.family for b in FAMILIES} | {b.id for b in FAMILIES})))
    return [b for b in FAMILIES if any(n in (b.id, b.family) for n in wanted)]


def slug(b: Behaviour) -> str:
    return "".join(c if c.isalnum() else "_" for c in b.id)


@dataclass
class Side:
    """One client reading one table through one family catalog; filled in by the run."""

    name: str  # "ours" | "iceberg"
    catalog: str
    table: str  # "bench.read_x", as the catalog's log names it
    elapsed: float = 0.0
    started: float = 0.0  # wall clock, to cut the catalog's log
    ended: float = 0.0
    renewals: int | None = None  # the shim's own count (ours); None: one client's average (Iceberg)
    kinds: dict[str, int] = field(default_factory=dict)
    s3_403: int = 0
    s3_keys: int = 0  # distinct access keys seen on this table's S3 requests
    timeline: list[str] = field(default_factory=list)  # --timeline: when it asked, which keys it used
    error: str = ""

    @property
    def requests(self) -> int:
        return sum(self.kinds.values())


def write_table(spark: Any, table: str, tasks: int) -> None:
    """A committed table of tasks x FILES_PER_TASK one-thousand-row files, planned FILES_PER_TASK to a task."""
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    (spark.range(0, tasks * FILES_PER_TASK * ROWS_PER_FILE, 1, tasks)
     .selectExpr("id", "id * 2 AS v")
     .writeTo(table)
     .tableProperty("write.target-file-size-bytes", "1")
     .tableProperty("read.split.target-size", str(FILES_PER_TASK * OPEN_FILE_COST))
     # else Iceberg shrinks splits to fill the cluster's cores: 80 short tasks of 4 files, in waves
     .tableProperty("read.split.adaptive-size.enabled", "false")
     .create())


def shim_refreshes(manager: Any, catalog: str, table: str) -> int:
    return sum(s.refresh_count for s in manager.status() if s.name == f"{catalog}.{table}")


def run_family(spark: Any, manager: Any, b: Behaviour, emu: Emulator, s3: S3ExpiryProxy,
               args: argparse.Namespace) -> tuple[list[Side], int]:
    """Both sides' reads at once (ours alone where Iceberg's provider cannot run); returns the
    sides and the OAuth token requests of the window (both sides: tokens name no table)."""
    sides = [Side("ours", f"ours_{slug(b)}", f"bench.read_{slug(b)}_ours")]
    if iceberg_provider_gap(b) is None:
        sides.append(Side("iceberg", f"iceberg_{slug(b)}", f"bench.read_{slug(b)}_iceberg"))
    ms_per_row = args.task_seconds * 1000 / (FILES_PER_TASK * ROWS_PER_FILE)
    slow = f"v >= 0 AND java_method('java.lang.Thread', 'sleep', CAST({ms_per_row:.0f} AS BIGINT)) IS NOT NULL"
    frames = {}
    for side in sides:
        write_table(spark, f"lake.{side.table}", args.tasks)
        frames[side.name] = spark.table(f"{side.catalog}.{side.table}").where(slow)  # the load: before the window
    s3.reset_counters()
    window_start = time.time()
    for side in sides:
        if side.name == "ours":
            side.renewals = -shim_refreshes(manager, side.catalog, side.table)

    def read(side: Side) -> None:
        side.started, t0 = time.time(), time.monotonic()
        try:
            rows = frames[side.name].count()
            if rows != args.tasks * FILES_PER_TASK * ROWS_PER_FILE:
                side.error = f"read {rows} rows"
        except Exception as exc:  # noqa: BLE001 - reported in the table, not raised
            side.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        side.elapsed, side.ended = time.monotonic() - t0, time.time()
        if side.name == "ours":  # read with the log cut at the same moment (a refresh takes milliseconds)
            side.renewals = (side.renewals or 0) + shim_refreshes(manager, side.catalog, side.table)

    with ThreadPoolExecutor(len(sides)) as pool:
        list(pool.map(read, sides))
    log, s3_log = emu.entries(), list(s3.log)
    for side in sides:
        for e in log:
            if e["table"] == side.table and e["kind"] in RENEWING_KINDS and side.started <= e["time"] <= side.ended:
                side.kinds[e["kind"]] = side.kinds.get(e["kind"], 0) + 1
        leaf = side.table.split(".")[-1]
        mine = [e for e in s3_log if f"/{leaf}" in e["path"] and e["at"] >= window_start]
        side.s3_403 = sum(1 for e in mine if e["status"] == 403)
        side.s3_keys = len({e["akid"] for e in mine if e["akid"]})
        if args.timeline:
            asked = [f"{e['time'] - side.started:.0f}" for e in log
                     if e["table"] == side.table and e["kind"] in RENEWING_KINDS and side.started <= e["time"] <= side.ended]
            side.timeline.append(f"requests at s: {' '.join(asked)}")
            used: dict[str, list[float]] = {}
            for e in mine:  # first use, last use, S3 requests
                u = used.setdefault(e["akid"] or "-", [e["at"], e["at"], 0])
                u[1], u[2] = e["at"], u[2] + 1
            side.timeline.append("keys (first-last s, S3 requests): " + ", ".join(
                f"{u[0] - side.started:.0f}-{u[1] - side.started:.0f} ({u[2]})" for u in sorted(used.values())))
    oauth = sum(1 for e in log if e["kind"] == "oauth" and e["time"] >= window_start)
    return sides, oauth


def family_main(args: argparse.Namespace) -> None:
    families = select_families(args.family)
    master = args.master or "local-cluster[4,8,1024]"
    period = iceberg_period(args.lifetime)  # ours renews as far ahead as Iceberg does on average
    with start_lakehouse() as lake, S3ExpiryProxy(lake.info.s3_endpoint, exempt=(lake.info.access_key,)) as s3:
        s3.max_age_seconds = args.lifetime
        spark = spark_session(lake, master, iceberg=args.iceberg)
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
        emus: dict[str, Emulator] = {}
        try:
            for b in families:
                if b.vends == NONE:
                    continue
                emu = emus[b.id] = Emulator(b, lake, s3, args.lifetime).start()
                for side, shim in (("ours", True), ("iceberg", False)):
                    conf = spark_conf(b.profile, f"{side}_{slug(b)}", jars=None, shim=shim, **connection(b, emu))
                    for key, value in conf.items():
                        if key.startswith(f"spark.sql.catalog.{side}_{slug(b)}"):
                            spark.conf.set(key, value)
            # renew max(3 min, 20%) ahead, as Iceberg on average; keys without expiry are assumed to live --lifetime
            manager = attach(spark, policy=RefreshPolicy(check_interval_s=5, min_ahead_s=ICEBERG_MEAN_AHEAD_S,
                                                         assumed_lifetime_s=args.lifetime))
            print(f"Reads of a committed table on {master}: {args.tasks} tasks x {args.task_seconds:.0f} s "
                  f"({FILES_PER_TASK} files each), credential lifetime {args.lifetime:.0f} s: a renewal every "
                  f"{period:.0f} s (Iceberg's: on average). Ours and Iceberg's read at the same time; requests = "
                  "the table's GET .../credentials, loads and re-stages during its read.", flush=True)
            print(f"{'catalog':<24} {'client':<8} {'elapsed s':>9} {'renewals':>8} {'requests':>8} {'per renewal':>11} "
                  f"{'S3 keys':>7} {'S3 403':>6} {'oauth':>5}  requests by kind / note", flush=True)
            for b in families:
                if b.vends == NONE:
                    print(f"{b.id:<24} {'-':<8} {'':>9} {'':>8} {'':>8} {'n/a':>11} {'':>7} {'':>6} {'':>5}  "
                          f"{iceberg_provider_gap(b)}", flush=True)
                    continue
                sides, oauth = run_family(spark, manager, b, emus[b.id], s3, args)
                for side in sides:
                    renewals = side.renewals if side.renewals is not None else side.elapsed / period
                    shown = str(renewals) if side.renewals is not None else f"~{renewals:.1f}"
                    ratio = f"{side.requests / renewals:.3f}" if renewals else "no renewal"
                    note = f"  error: {side.error}" if side.error else ""
                    print(f"{b.id:<24} {side.name:<8} {side.elapsed:>9.1f} {shown:>8} {side.requests:>8} "
                          f"{ratio:>11} {side.s3_keys:>7} {side.s3_403:>6} {oauth:>5}  {side.kinds}{note}", flush=True)
                    for line in side.timeline:
                        print(f"    {side.name}: {line}", flush=True)
                gap = iceberg_provider_gap(b)
                if gap:
                    print(f"{b.id:<24} {'iceberg':<8} {'':>9} {'':>8} {'':>8} {'n/a':>11} {'':>7} {'':>6} {'':>5}  {gap}",
                          flush=True)
        finally:
            for emu in emus.values():
                emu.stop()
            spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", help="read a committed table on these emulated catalogs (all, or a comma list "
                        "of families and release ids) instead of the CTAS on SeaweedFS")
    parser.add_argument("--lifetime", type=float, help="seconds a vended key lives, over 300 (default: 360 for the "
                        "CTAS, 310 for --family)")
    parser.add_argument("--task-seconds", type=float, help="seconds each task runs (default: 200 for the CTAS, "
                        "400 for --family)")
    parser.add_argument("--tasks", type=int, default=16, help="concurrent tasks per side")
    parser.add_argument("--master", help="Spark master (default: local-cluster[4,4,1024] for the CTAS, "
                        "local-cluster[4,8,1024] for --family: both sides at once)")
    parser.add_argument("--iceberg", help="Iceberg release for both sides, e.g. 1.12.0 (default: the installed "
                        "Spark's default stack; pyspark_catalog_ext.spark.jvm_deps.jvm_stacks lists the choices)")
    parser.add_argument("--timeline", action="store_true", help="with --family: also print when each side asked "
                        "the catalog and when it used each key")
    args = parser.parse_args()
    args.lifetime = args.lifetime or (310.0 if args.family else 360.0)
    args.task_seconds = args.task_seconds or (400.0 if args.family else 200.0)
    if args.lifetime <= ICEBERG_PREFETCH_S:
        parser.error(f"--lifetime must be over {ICEBERG_PREFETCH_S:.0f} s: Iceberg refreshes 5 minutes before "
                     "expiry, so a shorter lifetime makes it ask on every S3 call")
    if args.iceberg:
        try:
            select_stack(iceberg=args.iceberg)
        except ConfigError as exc:
            parser.error(f"--iceberg: {exc}")
    if args.family:
        try:
            select_families(args.family)
        except ValueError as exc:
            parser.error(str(exc))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    family_main(args) if args.family else ctas_main(args)


if __name__ == "__main__":
    main()
