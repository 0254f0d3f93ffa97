"""Benchmark 5: catalog refresh requests per table per renewal on each emulated catalog.

For every catalog family of tests/emulators (its documented /v1/config, auth, vending, refresh
endpoint and quirks, in front of the real SeaweedFS), a PyIceberg table is read by a herd of
threads for several credential lifetimes while an S3 proxy rejects expired keys. The catalog's
log is the ground truth: every request that can renew keys (GET .../credentials, a table reload,
a re-stage) after the table was loaded, divided by the renewals the refresher made. The target is
exactly 1, whatever the number of readers. Families that vend no keys (Glue: the job's own AWS keys)
have nothing to renew and are listed as such.

    python benchmarks/bench_emulated_requests.py [--lifetime 3] [--lifetimes 4] [--readers 8]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.emulators, tests.servers

import pyarrow as pa  # noqa: E402
from _common import scan_concurrently  # noqa: E402

from pyspark_catalog_ext.lakehouse.server import start_lakehouse  # noqa: E402
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog  # noqa: E402
from pyspark_catalog_ext.refresh import RefreshPolicy  # noqa: E402
from pyspark_catalog_ext.spark.conf import spark_conf  # noqa: E402
from tests.emulators.behaviour import FAMILIES, NONE, Behaviour  # noqa: E402
from tests.emulators.emulator import Emulator, connection  # noqa: E402
from tests.servers import S3ExpiryProxy  # noqa: E402

RENEWING_KINDS = ("credentials", "load", "stage-create")  # every request that can hand out new keys
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def run_family(b: Behaviour, lake, s3: S3ExpiryProxy, args: argparse.Namespace) -> dict:
    policy = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.5,
                           assumed_lifetime_s=args.lifetime)
    with Emulator(b, lake, s3, args.lifetime) as emu:
        name = f"bench.t_{b.id.replace('.', '_').replace('-', '_').replace('+', '_')}"
        admin = pyiceberg_catalog(lake)
        admin.create_namespace_if_not_exists("bench")
        if admin.table_exists(name):
            admin.drop_table(name)
        admin.create_table(name, SCHEMA).append(pa.table({"id": pa.array(range(1000), pa.int64())}, schema=SCHEMA))
        cat = pyiceberg_catalog(spark_conf(b.profile, "bench", jars=None, **connection(b, emu)), "bench", policy=policy)
        table = cat.load_table(name)
        emu.reset_counters()
        s3.reset_counters()
        scans, errors = scan_concurrently(table, args.readers, args.lifetimes * args.lifetime, 1000)
        time.sleep(2 * args.lifetime)  # let a renewal already under way finish: both counts then stand still
        counts = emu.counts()
        requests = sum(counts.get(k, 0) for k in RENEWING_KINDS)
        renewals = sum(sum(row["refreshes_by_strategy"].values()) for row in cat.refresher.status()) if cat.refresher else 0
        cat.close()
        return {"requests": requests, "renewals": renewals, "scans": scans, "rejected": s3.total_rejected,
                "errors": sorted(set(errors)), "kinds": {k: counts.get(k, 0) for k in RENEWING_KINDS if counts.get(k)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lifetime", type=float, default=3.0, help="seconds a vended key lives")
    parser.add_argument("--lifetimes", type=float, default=4.0, help="how many lifetimes the readers run")
    parser.add_argument("--readers", type=int, default=8, help="concurrent scans of the one table")
    args = parser.parse_args()
    with start_lakehouse() as lake:
        os.environ.update({"AWS_ACCESS_KEY_ID": lake.info.access_key, "AWS_SECRET_ACCESS_KEY": lake.info.secret_key,
                           "AWS_REGION": "us-east-1"})  # Glue: the job's own keys
        s3 = S3ExpiryProxy(lake.info.s3_endpoint, exempt=(lake.info.access_key,)).start()
        s3.max_age_seconds = args.lifetime
        print(f"PyIceberg, {args.readers} readers of one table for {args.lifetimes:g} x {args.lifetime:g} s credential lifetimes")
        print(f"{'catalog':<24} {'renewals':>8} {'requests':>8} {'per renewal':>11} {'scans':>6} {'S3 403':>6}  requests by kind")
        try:
            for b in FAMILIES:
                if b.vends == NONE:
                    print(f"{b.id:<24} {'-':>8} {'-':>8} {'n/a':>11} {'':>6} {'':>6}  vends no keys (the job's own)")
                    continue
                r = run_family(b, lake, s3, args)
                ratio = f"{r['requests'] / r['renewals']:.3f}" if r["renewals"] else "no renewal"
                note = f"  errors: {', '.join(r['errors'])}" if r["errors"] else ""
                print(f"{b.id:<24} {r['renewals']:>8} {r['requests']:>8} {ratio:>11} {r['scans']:>6} {r['rejected']:>6}  {r['kinds']}{note}")
        finally:
            s3.stop()


if __name__ == "__main__":
    main()
