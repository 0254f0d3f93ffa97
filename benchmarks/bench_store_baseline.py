"""Benchmark: plain Iceberg (no shim) on Spark against the emulated ADLS and GCS stores, for the record.

Each store (tests/stores: Azurite, fake-gcs-server behind its token front) runs under Iceberg's REST
fixture behind the vending front, which hands out tokens of a stated lifetime. Plain Iceberg's
SparkCatalog, REST client and ADLSFileIO / GCSFileIO do everything; this prints what they manage:

1. committed   create a table, insert, read back, with the vended tokens (lifetime --lifetime);
2. ctas-time   a staged CTAS of --rows rows in a job much shorter than a token's life: seconds
               (median of --repeat), the time a refresh mechanism must not add to;
3. expiry      a staged CTAS whose tasks outlive the token (--lifetime), once with no refresh
               endpoint, once with the endpoint advertised (the front's /credentials serves
               committed tables only, as Polaris does): how it ends and after how long;
4. renewals    a read of a committed table spread over --renew-lifetimes token lifetimes of
               --renew-lifetime s each, on --executors executor JVMs (local-cluster), with the
               refresh endpoint advertised: the catalog's /credentials requests (and loads) per
               table, per lifetime. One request per lifetime is what a single-flight refresh makes.

    python benchmarks/bench_store_baseline.py [--stores adls,gcs] [--iceberg 1.11.0] [--lifetime 30]
        [--rows 200000] [--repeat 2] [--renew-lifetime 300] [--renew-lifetimes 2] [--executors 4]
        [--skip renewals]

The SDKs' own margins shape what plain Iceberg does with short tokens: google-auth treats a token
with under 3 min left as expired (GCS then fails at once without an endpoint, and refreshes before
every request with one); Iceberg's ADLS provider ignores a vended SAS with under 5 min left and
azure-core's token cache renews one that close at most every 30 s. docs/stores.md has the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.stores

from tests.refresh_support import slow  # noqa: E402
from tests.stores.catalog import StoreStack, store_catalog  # noqa: E402
from tests.stores.install import install_seconds  # noqa: E402
from tests.stores.plain_spark import CATALOG, plain_session  # noqa: E402
from tests.stores.store_job import summarize  # noqa: E402


def first_line(exc: BaseException) -> str:
    """What the store or client said, in one line: the HTTP status and Azure error code where there is
    one, else the innermost cause's first line."""
    return summarize(str(exc)) or type(exc).__name__


def committed(spark, stack: StoreStack) -> str:
    table = f"{CATALOG}.bench.committed"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    try:
        spark.sql(f"CREATE TABLE {table} (id bigint, v string) USING iceberg")
        spark.sql(f"INSERT INTO {table} SELECT id, cast(id AS string) FROM range(10000)")
        rows = spark.table(table).count()
        return "works" if rows == 10000 else f"wrong row count {rows}"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return "fails: " + first_line(exc)


def ctas_time(spark, rows: int, repeat: int) -> tuple[float, str]:
    times = []
    for i in range(repeat):
        table = f"{CATALOG}.bench.ctas_{i}"
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        started = time.monotonic()
        try:
            spark.sql(f"CREATE TABLE {table} USING iceberg AS SELECT id, id * 3 AS v, uuid() AS u FROM range({rows})")
        except Exception as exc:  # noqa: BLE001
            return float("nan"), "fails: " + first_line(exc)
        times.append(time.monotonic() - started)
        assert spark.table(table).count() == rows
    return statistics.median(times), "works"


def expiry(spark, stack: StoreStack, lifetime: float, endpoint: bool) -> tuple[str, float]:
    """A staged CTAS with 4 single-row tasks, each sleeping 0.8 lifetimes before it writes: the later
    tasks write with a token past its expiry."""
    stack.front.lifetime_s = lifetime
    stack.front.advertise_refresh_endpoint = endpoint
    table = f"{CATALOG}.bench.expiry_{'endpoint' if endpoint else 'plain'}"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    started = time.monotonic()
    try:
        spark.sql(f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1') AS "
                  f"SELECT id FROM range(0, 4, 1, 1) WHERE {slow(int(lifetime * 800))}")
        outcome = "works" if spark.table(table).count() == 4 else "wrong row count"
    except Exception as exc:  # noqa: BLE001
        outcome = "fails: " + first_line(exc)
    return outcome, time.monotonic() - started


def renewals(stack: StoreStack, args: argparse.Namespace) -> dict:
    """Requests per lifetime of Iceberg's own refresh, reading a committed table on executor JVMs."""
    stack.front.lifetime_s = args.renew_lifetime
    stack.front.advertise_refresh_endpoint = True
    master = f"local-cluster[{args.executors},1,1024]"
    spark = plain_session(stack.store, stack.uri, iceberg=args.iceberg, master=master)
    try:
        table, name = f"{CATALOG}.bench.renewals", "bench.renewals"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.bench")
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        # One file per task: 4 reads per executor per lifetime. Made with the refresh endpoint off:
        # plain Iceberg's staged create cannot use it (a staged table's /credentials is a 404).
        files = 4 * args.executors * args.renew_lifetimes
        stack.front.advertise_refresh_endpoint = False
        spark.sql(f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1', "
                  f"'read.split.target-size'='1') AS SELECT id FROM range(0, {files}, 1, {files})")
        stack.front.advertise_refresh_endpoint = True
        before = {k: stack.front.count(kind=k, table=name) for k in ("credentials", "load")}
        started = time.monotonic()
        per_task_ms = int(args.renew_lifetime * 1000 / 4)
        error = ""
        try:
            rows = spark.sql(f"SELECT count(*) FROM {table} WHERE {slow(per_task_ms)}").collect()[0][0]
            if rows != files:
                error = f"wrong row count {rows}"
        except Exception as exc:  # noqa: BLE001
            error = first_line(exc)
        seconds = time.monotonic() - started
        after = {k: stack.front.count(kind=k, table=name) for k in ("credentials", "load")}
        lifetimes = seconds / args.renew_lifetime
        creds = after["credentials"] - before["credentials"]
        return {"seconds": seconds, "lifetimes": lifetimes, "credentials": creds, "loads": after["load"] - before["load"],
                "per_lifetime": creds / lifetimes if lifetimes else float("nan"), "error": error}
    finally:
        spark.stop()


def run_store(store: str, args: argparse.Namespace) -> None:
    started = time.monotonic()
    with store_catalog(store, lifetime_s=args.lifetime) as stack:
        up = time.monotonic() - started
        print(f"\n== {store} (Iceberg {args.iceberg}, plain; store + catalog up in {up:.1f} s)", flush=True)
        if "committed" not in args.skip or "ctas-time" not in args.skip or "expiry" not in args.skip:
            spark = plain_session(store, stack.uri, iceberg=args.iceberg)
            try:
                spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.bench")
                if "committed" not in args.skip:
                    for lifetime in (600, args.lifetime):
                        stack.front.lifetime_s = lifetime
                        print(f"  committed table, {lifetime:.0f} s tokens: {committed(spark, stack)}", flush=True)
                if "ctas-time" not in args.skip:
                    stack.front.lifetime_s = 3600
                    seconds, outcome = ctas_time(spark, args.rows, args.repeat)
                    print(f"  staged CTAS of {args.rows} rows, 1 h tokens: {seconds:.2f} s (median of {args.repeat}) {outcome}", flush=True)
                if "expiry" not in args.skip:
                    for endpoint in (False, True):
                        outcome, seconds = expiry(spark, stack, args.lifetime, endpoint)
                        how = "refresh endpoint advertised" if endpoint else "no refresh endpoint"
                        print(f"  staged CTAS outliving {args.lifetime:.0f} s tokens, {how}: after {seconds:.1f} s {outcome}", flush=True)
            finally:
                spark.stop()
        if "renewals" not in args.skip:
            r = renewals(stack, args)
            print(f"  renewals: read over {r['lifetimes']:.2f} lifetimes of {args.renew_lifetime:.0f} s on "
                  f"{args.executors} executor JVMs: {r['credentials']} /credentials requests "
                  f"({r['per_lifetime']:.1f} per lifetime), {r['loads']} loads; {r['seconds']:.0f} s"
                  + (f"; fails: {r['error']}" if r["error"] else ""), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default="adls,gcs")
    parser.add_argument("--iceberg", default="1.11.0", help="Iceberg release of the Spark 3.5 runtime")
    parser.add_argument("--lifetime", type=float, default=30, help="token lifetime for the expiry runs, seconds")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--renew-lifetime", type=float, default=300)
    parser.add_argument("--renew-lifetimes", type=int, default=2)
    parser.add_argument("--executors", type=int, default=4)
    parser.add_argument("--skip", default="", help="comma list of: committed, ctas-time, expiry, renewals")
    args = parser.parse_args()
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if len(stores) > 1:
        # One process (one driver JVM) per store: a JVM's classpath is fixed by its first session,
        # and each store's SDK bundle comes in as spark.jars.
        argv = sys.argv[1:]
        if "--stores" in argv:
            at = argv.index("--stores")
            del argv[at:at + 2]
        for store in stores:
            subprocess.run([sys.executable, __file__, "--stores", store, *argv], check=False)
        return
    from tests.stores import install

    path = install.azurite_blob_main().parents[5] if stores[0] == "adls" else install.fake_gcs_server().parents[1]
    took = install_seconds(path)
    print(f"{stores[0]} emulator: {path.name}" + (f", first install took {took:.0f} s" if took else ""), flush=True)
    run_store(stores[0], args)


if __name__ == "__main__":
    main()
