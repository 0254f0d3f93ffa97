"""Benchmark 6: catalog requests per credential renewal on each REAL catalog server run here.

Like bench_emulated_requests.py, on the real servers of tests/realservers (Iceberg's REST fixture,
Project Nessie with STS vending from SeaweedFS), each in front of the embedded SeaweedFS behind a
loopback logging proxy: a herd of PyIceberg readers scans one table for several (assumed) credential
lifetimes. Neither server states an expiry (the REST fixture hands out static keys; Nessie's STS keys
come without `s3.session-token-expires-at-ms`), so the refresher renews by `assumed_lifetime_s`.
The proxy's log is the ground truth: every request after the table was loaded that can hand out keys
(a table load, GET .../credentials), divided by the renewals the refresher made. The target is 1.

Iceberg's own provider (S3FileIO's refresh through `client.refresh-credentials-endpoint`) cannot
run on either server: neither advertises a refresh endpoint, so the column says so.

    python benchmarks/bench_real_server_requests.py [--lifetime 3] [--lifetimes 4] [--readers 8] [--server nessie]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.realservers, tests.servers

import pyarrow as pa  # noqa: E402
from _common import scan_concurrently  # noqa: E402

from pyspark_catalog_ext.lakehouse.server import start_lakehouse  # noqa: E402
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog  # noqa: E402
from pyspark_catalog_ext.refresh import RefreshPolicy  # noqa: E402
from pyspark_catalog_ext.spark.conf import spark_conf  # noqa: E402
from tests.realservers.servers import Nessie, RealServer, RestFixture  # noqa: E402
from tests.servers import BufferedProxy  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
SERVERS = {"rest-fixture": lambda info: RestFixture(info), "nessie": lambda info: Nessie(info, sts=True)}


def renewing(entries: list[dict], table: str, since: float) -> dict[str, int]:
    """Requests after `since` that can hand out new keys for `table`, by kind."""
    load = re.compile(rf"/tables/{table}(\?.*)?$")
    creds = re.compile(rf"/tables/{table}/credentials(\?.*)?$")
    out = {"load": 0, "credentials": 0}
    for e in entries:
        if e.get("time", since) < since or e["method"] != "GET":
            continue
        path = e["path"]
        if creds.search(path):
            out["credentials"] += 1
        elif load.search(path):
            out["load"] += 1
    return out


def run_server(key: str, lake, args: argparse.Namespace) -> dict:
    server: RealServer = SERVERS[key](lake.info)
    with server:
        upstream = server.uri.removesuffix("/iceberg")
        proxy = BufferedProxy(upstream).start()
        try:
            uri = proxy.url + server.uri[len(upstream):]
            conn = {**server.connection(), "uri": uri, "delegation": "vended-credentials"}
            policy = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.5,
                                   assumed_lifetime_s=args.lifetime)
            conf = spark_conf(server.profile, "bench", jars=None, refresh=None, **conn)
            cat = pyiceberg_catalog(conf, "bench", policy=policy)
            cat.create_namespace_if_not_exists("bench")
            name = "bench.renewals"
            if cat.table_exists(name):
                cat.drop_table(name)
            cat.create_table(name, SCHEMA).append(pa.table({"id": pa.array(range(1000), pa.int64())}, schema=SCHEMA))
            table = cat.load_table(name)
            since = time.time()
            scans, errors = scan_concurrently(table, args.readers, args.lifetimes * args.lifetime, 1000)
            time.sleep(2 * args.lifetime)  # a renewal under way finishes: both counts then stand still
            renewals = (sum(sum(row["refreshes_by_strategy"].values()) for row in cat.refresher.status())
                        if cat.refresher else 0)
            kinds = renewing(proxy.entries(), "renewals", since)
            cat.close()
        finally:
            proxy.stop()
    return {"server": f"{server.name} {server.version}", "renewals": renewals, "requests": sum(kinds.values()),
            "kinds": {k: v for k, v in kinds.items() if v}, "scans": scans, "errors": sorted(set(errors))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lifetime", type=float, default=3.0, help="assumed seconds a vended key lives")
    parser.add_argument("--lifetimes", type=float, default=4.0, help="how many lifetimes the readers run")
    parser.add_argument("--readers", type=int, default=8, help="concurrent scans of the one table")
    parser.add_argument("--server", choices=sorted(SERVERS), action="append", help="default: every server")
    args = parser.parse_args()
    print(f"PyIceberg, {args.readers} readers of one table for {args.lifetimes:g} x {args.lifetime:g} s (assumed) lifetimes")
    print(f"{'server':<28} {'renewals':>8} {'requests':>8} {'per renewal':>11} {'scans':>6}  "
          f"{'Iceberg provider':<28} requests by kind")
    with start_lakehouse() as lake:
        for key in args.server or sorted(SERVERS):
            r = run_server(key, lake, args)
            ratio = f"{r['requests'] / r['renewals']:.3f}" if r["renewals"] else "no renewal"
            note = f"  errors: {', '.join(r['errors'])}" if r["errors"] else ""
            print(f"{r['server']:<28} {r['renewals']:>8} {r['requests']:>8} {ratio:>11} {r['scans']:>6}  "
                  f"{'n/a: no refresh endpoint':<28} {r['kinds']}{note}", flush=True)


if __name__ == "__main__":
    main()
