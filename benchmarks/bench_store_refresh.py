"""Benchmark: the package's ADLS and GCS refresh against Iceberg's own, on the emulated stores, as ratios.

Per store (tests/stores: Azurite, fake-gcs-server behind its token front; Iceberg's REST fixture behind
the vending front), in one run, each side a Spark job of its own (its own driver JVM, the installed
pyspark's line, Iceberg --iceberg, --executors executor JVMs):

1. requests per lifetime: a read of a committed table spread over --lifetimes token lifetimes of
   --lifetime s, the table served by its refresh endpoint (Polaris's style). Plain Iceberg: its own
   refresh (1.11: GCS per client, google-auth's margins; ADLS per FileIO, its provider's margin).
   The package: the driver's single flight, executors served over the plugin channel, renewing at
   3/4 of a token's life. The catalog's /credentials requests for the table during the read, per
   token lifetime, and their ratio.
2. staged CTAS time: a CTAS of --rows rows with tokens of an hour (plain Iceberg survives it),
   --repeat times in each of two sessions per side (plain, package, package, plain): the median step
   time (session start excluded), and the package's over plain Iceberg's.

    python benchmarks/bench_store_refresh.py [--stores adls,gcs] [--iceberg 1.11.0] [--lifetime 60]
        [--lifetimes 2] [--executors 2] [--rows 200000] [--repeat 3]

The table the reads read is made first by a job with hour-long tokens and no refresh endpoint (plain
Iceberg's staged create cannot use the endpoint: a staged table's /credentials is a 404). Under a
loaded machine the absolute times stretch; compare the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.stores

from tests.stores.catalog import StoreStack, store_catalog  # noqa: E402
from tests.stores.store_job import run_job, summarize  # noqa: E402

TABLE = "renewals"
# The package renews once a quarter of a token's life is left (as tests/slow/test_stores.py).
POLICY = {"min_ahead_s": 0, "lifetime_fraction": 0.25, "check_interval_s": 1}


def job(stack: StoreStack, mode: str, args: argparse.Namespace, steps: list[dict]) -> dict:
    master = f"local-cluster[{args.executors},1,1024]"
    extra = {"policy": POLICY} if mode == "package" else {}
    kind, report = run_job({"mode": mode, "store": stack.store, "uri": stack.uri, "iceberg": args.iceberg,
                            "master": master, "steps": steps, **extra}, timeout=3600)
    if kind != "RESULT":
        raise SystemExit(f"{stack.store} {mode} job failed: {summarize(report.get('error', ''))}")
    for step in report["steps"]:
        if step["kind"] != "RESULT":
            raise SystemExit(f"{stack.store} {mode} {step['table']}: {summarize(step['error'])}")
    return report


def ctas_seconds(stack: StoreStack, mode: str, args: argparse.Namespace, run: int) -> list[float]:
    stack.front.lifetime_s = 3600
    steps = [{"action": "ctas-bulk", "table": f"ctas_{mode}_{run}_{i}", "rows": args.rows, "parts": args.executors}
             for i in range(args.repeat)]
    report = job(stack, mode, args, steps)
    for step in report["steps"]:
        assert (step["rows"], step["sum"]) == (args.rows, 3 * sum(range(args.rows))), step
    return [step["seconds"] for step in report["steps"]]


def requests_per_lifetime(stack: StoreStack, mode: str, args: argparse.Namespace) -> tuple[float, int, float]:
    """(requests per lifetime, requests, seconds) of a read over args.lifetimes lifetimes."""
    stack.front.lifetime_s = args.lifetime
    stack.front.endpoint_tables = {f"db.{TABLE}"}
    files = 4 * args.executors * args.lifetimes  # each task one lifetime / 4 slow: 4 per executor per lifetime
    try:
        report = job(stack, mode, args, [{"action": "read", "table": TABLE, "rows": files, "ms": int(args.lifetime * 250)}])
    finally:
        stack.front.endpoint_tables = set()
    read = report["steps"][0]
    assert read["rows"] == files, read
    asked = [e for e in stack.front.entries() if e["kind"] == "credentials" and e["table"] == f"db.{TABLE}"
             and read["read_started"] <= e["time"] <= read["read_ended"]]
    seconds = read["read_ended"] - read["read_started"]
    return len(asked) / (seconds / args.lifetime), len(asked), seconds


def run_store(store: str, args: argparse.Namespace) -> None:
    with store_catalog(store, lifetime_s=3600) as stack:
        print(f"\n== {store}: Iceberg {args.iceberg}, {args.executors} executor JVMs", flush=True)
        files = 4 * args.executors * args.lifetimes
        job(stack, "package", args, [{"action": "files", "table": TABLE, "rows": files, "ms": 0}])
        plain_rate, plain_n, plain_s = requests_per_lifetime(stack, "plain", args)
        ours_rate, ours_n, ours_s = requests_per_lifetime(stack, "package", args)
        print(f"  /credentials requests per {args.lifetime:.0f} s token lifetime, reading over {args.lifetimes} lifetimes:"
              f" plain Iceberg {plain_rate:.1f} ({plain_n} in {plain_s:.0f} s), the package {ours_rate:.2f}"
              f" ({ours_n} in {ours_s:.0f} s; renewing at 3/4 of a lifetime makes 1.33):"
              f" plain/package = {plain_rate / ours_rate if ours_rate else float('inf'):.1f}", flush=True)
        # plain, package, package, plain: neither side always runs first or on a warmer machine
        times: dict[str, list[float]] = {"plain": [], "package": []}
        for run, mode in enumerate(("plain", "package", "package", "plain")):
            times[mode] += ctas_seconds(stack, mode, args, run)
        plain_ctas, ours_ctas = statistics.median(times["plain"]), statistics.median(times["package"])
        print(f"  staged CTAS of {args.rows} rows, 1 h tokens, median of {2 * args.repeat} in two sessions each:"
              f" plain Iceberg {plain_ctas:.2f} s,"
              f" the package {ours_ctas:.2f} s: package/plain = {ours_ctas / plain_ctas:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default="adls,gcs")
    parser.add_argument("--iceberg", default="1.11.0")
    parser.add_argument("--lifetime", type=float, default=60, help="token lifetime of the reads, seconds")
    parser.add_argument("--lifetimes", type=int, default=2)
    parser.add_argument("--executors", type=int, default=2)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    started = time.monotonic()
    for store in (s.strip() for s in args.stores.split(",") if s.strip()):
        run_store(store, args)
    print(f"\n{time.monotonic() - started:.0f} s in all", flush=True)


if __name__ == "__main__":
    main()
