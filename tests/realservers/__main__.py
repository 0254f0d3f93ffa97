"""`python -m tests.realservers rest-fixture|nessie [--sts]`: start the embedded SeaweedFS and one
real catalog server in front of it, print how to connect, run until Ctrl-C."""
from __future__ import annotations

import argparse
import sys

from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from tests.realservers.artifacts import ServerUnavailable
from tests.realservers.servers import SERVERS, Nessie
from tests.servers.child import run_until_interrupted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.realservers", description=__doc__)
    parser.add_argument("server", choices=sorted(SERVERS))
    parser.add_argument("--sts", action="store_true", help="nessie: vend STS keys from SeaweedFS (client-iam)")
    args = parser.parse_args(argv)
    with start_lakehouse() as lake:
        server = Nessie(lake.info, sts=args.sts) if args.server == "nessie" else SERVERS[args.server](lake.info)
        try:
            server.start()
        except ServerUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        try:
            conn = server.connection()
            print(f"{server.name} {server.version}: {server.uri}")
            print(f"  profile={server.profile} warehouse={conn['warehouse']} "
                  + " ".join(f"{k}={v}" for k, v in conn.items() if k not in ("uri", "warehouse")))
            print(f"  S3 (SeaweedFS): {lake.info.s3_endpoint}  log: {server.log_path}")
            sys.stdout.flush()
            run_until_interrupted()
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
