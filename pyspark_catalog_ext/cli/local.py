"""`pyspark-catalog-ext local up|down|status`: the embedded lakehouse, detached
(`pyspark_catalog_ext.lakehouse.detached.up/down/running_info`)."""

from __future__ import annotations

import argparse

from pyspark_catalog_ext.catalog.local_lakehouse import LakehouseInfo, running_info, state_file
from pyspark_catalog_ext.catalog.profiles import DELEGATIONS
from pyspark_catalog_ext.lakehouse.detached import down, up
from pyspark_catalog_ext.lakehouse.server import MIN_CREDENTIAL_SECONDS

__all__ = ["register"]


def _print_info(info: LakehouseInfo) -> None:
    print(f"iceberg uri : {info.iceberg_uri}")
    print(f"delegation  : {info.delegation}" + (" (S3 requests signed by the catalog's signer; Spark holds no keys)" if info.delegation == "remote-signing" else ""))
    print(f"warehouse   : {info.warehouse}")
    print(f"s3 endpoint : {info.s3_endpoint}")
    print(f"credential  : {info.credential.split(':')[0]}:*** (the catalog front's OAuth2 client, no S3 key; random per "
          f"instance, in {state_file()} (0600) and LakehouseInfo.credential)")
    print(f"data dir    : {info.data_dir}")
    print(f"log         : {info.log_file}")
    print(f"pid         : {info.pid}")


def _cmd(args: argparse.Namespace) -> int:
    if args.action == "up":
        before = running_info()
        started = up(args.data_dir, args.credential_seconds, args.iceberg_port, args.s3_port, delegation=args.delegation)
        print("already running" if before else "lakehouse started (stop it with: pyspark-catalog-ext local down)")
        _print_info(started)
        return 0
    if args.action == "down":
        print("lakehouse stopped" if down() else "no lakehouse running")
        return 0
    info = running_info()
    if info is None:
        print("no lakehouse running (start one with: pyspark-catalog-ext local up)")
        return 3
    print("running")
    _print_info(info)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `local up|down|status` to the CLI."""
    p = subparsers.add_parser("local", help="run the embedded SeaweedFS lakehouse (Iceberg REST + S3 + STS) on 127.0.0.1")
    p.add_argument("action", choices=["up", "down", "status"])
    p.add_argument("--data-dir", help="persist data here (default: a temp dir deleted on `down`)")
    p.add_argument("--credential-seconds", type=int, default=MIN_CREDENTIAL_SECONDS, help="lifetime of vended credentials (>= 900)")
    p.add_argument("--iceberg-port", type=int, help="Iceberg REST port (default: a free port)")
    p.add_argument("--s3-port", type=int, help="S3 port (default: a free port)")
    p.add_argument("--delegation", choices=DELEGATIONS, default="vended-credentials",
                   help="how clients get storage access: vended keys, or a remote signer in front of the catalog (no keys)")
    p.set_defaults(func=_cmd)
