"""`pyspark-catalog-ext demo`: the embedded lakehouse and a Spark CTAS with vended credentials, end
to end (`pyspark_catalog_ext.lakehouse.demo.run_demo`)."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from pyspark_catalog_ext.lakehouse.demo import DemoResult, run_demo

__all__ = ["register"]


def _summary(result: DemoResult) -> str:
    if result.credential_expires_at is not None:
        left = (result.credential_expires_at - datetime.now(timezone.utc)).total_seconds()
        expiry = f"{result.credential_expires_at.isoformat(timespec='seconds')} (in {left / 60:.0f} min; secret not shown)"
    else:
        expiry = "the catalog vended no expiry"
    return "\n".join([
        "demo finished:",
        f"  rows                  {result.rows:,}",
        f"  data files            {result.data_files}",
        f"  snapshot id           {result.snapshot_id}",
        f"  vended creds expire   {expiry}",
        f"  elapsed               {result.elapsed_s:.1f} s",
    ])


def _cmd(args: argparse.Namespace) -> int:
    result = run_demo(rows=args.rows, out=lambda line: print(line, flush=True))
    print(_summary(result))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `demo` to the CLI."""
    p = subparsers.add_parser("demo", help="embedded lakehouse + a 1M-row Spark CTAS with vended credentials, end to end")
    p.add_argument("--rows", type=int, default=1_000_000, help="rows to write (default 1,000,000)")
    p.set_defaults(func=_cmd)
