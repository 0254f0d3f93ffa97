"""`pyspark-catalog-ext maintain`: plan (`--dry-run`, no Spark) or run the catalog's maintenance
policies (`pyspark_catalog_ext.governance.maintenance`)."""

from __future__ import annotations

import argparse
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from pyspark_catalog_ext.catalog.local_lakehouse import running_info
from pyspark_catalog_ext.catalog.resolve import catalog_connection
from pyspark_catalog_ext.cli.options import add_connection_arguments, connection_kwargs
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.governance.maintenance import default_state_file, plan_with_catalog, run, split_targets
from pyspark_catalog_ext.progress import Progress

__all__ = ["register"]


def _cmd(args: argparse.Namespace) -> int:
    # PyIceberg's catalog module reads .pyiceberg.yaml when imported: only when the command runs.
    from pyspark_catalog_ext.catalog.rest import open_catalog
    from pyspark_catalog_ext.spark.session import configure  # imports pyspark: only for a run

    targets = args.targets or [args.catalog]
    catalog, _ = split_targets(targets)
    if catalog != args.catalog:
        raise ConfigError(f"targets must be in catalog {args.catalog!r} (--catalog), got {catalog!r}")
    state_file = Path(args.state_file) if args.state_file else default_state_file()
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    if args.dry_run:  # no Spark needed to plan
        with open_catalog(catalog_connection(args.profile, lakehouse=running_info(), **connection_kwargs(args))) as client:
            the_plan = plan_with_catalog(client, targets, policy_file=args.policy_file, state_file=state_file,
                                         force=args.force, now=now)
        print(json.dumps(the_plan.as_dict(), indent=2, default=str) if args.json else the_plan.render())
        return 1 if any(t.error for t in the_plan.tables) else 0
    from pyspark.sql import SparkSession

    if args.profile == "local":  # Spark picks its address before reading any conf
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(args.master).appName("pyspark-catalog-ext maintain")
    builder = configure(builder, args.profile, args.catalog, extra_conf={"spark.ui.showConsoleProgress": "false"},
                        **connection_kwargs(args))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with Progress() as bar:
            report = run(spark, targets, policy_file=args.policy_file, state_file=state_file, force=args.force, now=now,
                         bar=bar)
    finally:
        spark.stop()
    print(json.dumps(report.as_dict(), indent=2) if args.json else report.render())
    return 1 if report.failed else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `maintain` to the CLI."""
    p = subparsers.add_parser("maintain", help="run the catalog's maintenance policies (compaction, snapshot expiry, "
                                               "orphan removal) on a catalog, namespace or tables")
    p.add_argument("targets", nargs="*", metavar="TARGET", help="lake | lake.ns | lake.ns.table (default: --catalog)")
    p.add_argument("--catalog", default="lake", help="Spark catalog name (default: lake)")
    p.add_argument("--policy-file", help="policies from this JSON file instead of the catalog's Polaris policy API")
    p.add_argument("--dry-run", action="store_true", help="print the plan only")
    p.add_argument("--json", action="store_true", help="JSON output")
    p.add_argument("--force", action="store_true", help="also run tables unchanged since their last successful run")
    p.add_argument("--state-file", help="where the last successful runs are remembered (default: in the cache dir)")
    p.add_argument("--master", default="local[2]", help="Spark master for the run (default: local[2])")
    add_connection_arguments(p)
    p.set_defaults(func=_cmd)
