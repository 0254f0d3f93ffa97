"""`pyspark-catalog-ext staged cleanup`: list (and with `--apply` delete) what a killed staged job
left under a table's location (`pyspark_catalog_ext.staging.cleanup.find_orphans`)."""

from __future__ import annotations

import argparse
import json
import sys

from pyspark_catalog_ext.catalog.local_lakehouse import running_info
from pyspark_catalog_ext.catalog.resolve import catalog_connection
from pyspark_catalog_ext.cli.options import add_connection_arguments, connection_kwargs, secret_argument
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.progress import Progress
from pyspark_catalog_ext.staging.cleanup import DEFAULT_MIN_AGE_SECONDS, find_orphans, s3_client

__all__ = ["register"]


def _cmd(args: argparse.Namespace) -> int:
    # PyIceberg's catalog module reads .pyiceberg.yaml when imported: only when the command runs.
    from pyspark_catalog_ext.catalog.rest import open_catalog
    connection = catalog_connection(args.profile, lakehouse=running_info(), **connection_kwargs(args))
    s3 = None
    secret_key = secret_argument(args, "s3_secret_key")
    if args.s3_access_key or secret_key:
        if not (args.s3_access_key and secret_key):
            raise ConfigError("pass both --s3-access-key and the secret (--s3-secret-key-env VAR, "
                              "--s3-secret-key-file PATH or --s3-secret-key)")
        s3 = s3_client(args.s3_endpoint, args.s3_access_key, secret_key, secret_argument(args, "s3_session_token"),
                       args.s3_region or args.region, not args.s3_virtual_hosted)
    with open_catalog(connection) as client, Progress() as progress:
        report = find_orphans(client, args.location, table=args.table, s3=s3, min_age_seconds=args.min_age,
                              apply=args.apply, allow_min_age_under_24h=args.allow_min_age_under_24h,
                              allow_non_table_prefix=args.allow_non_table_prefix, progress=progress)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0
    listed = report.deleted if args.apply else [u for u, _, _ in report.orphans]
    sizes = {u: (s, a) for u, s, a in report.orphans}
    for uri in listed:
        size, age = sizes[uri]
        print(f"{'deleted' if args.apply else 'orphan'}\t{uri}\t{size}\t{age:.0f}s")
    total = sum(sizes[u][0] for u in listed)
    tables = ", ".join(report.tables) or "none"
    summary = (f"{len(listed)} orphaned file(s), {total} bytes, under {report.location} "
               f"({report.listed} listed, {report.referenced} referenced by committed tables: {tables}; "
               f"{report.too_young} younger than {args.min_age:g}s kept"
               + (f"; {len(report.kept_committed_meanwhile)} committed meanwhile, kept" if report.kept_committed_meanwhile else "")
               + ")")
    if args.apply:
        print(f"deleted {summary}")
    else:
        print(summary)
        if report.orphans:
            print("dry run: add --apply to delete them", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `staged cleanup` to the CLI."""
    staged = subparsers.add_parser("staged", help="staged tables: find and remove orphaned staged files")
    sub = staged.add_subparsers(dest="staged_command", metavar="ACTION")
    p = sub.add_parser("cleanup", help="list (and with --apply delete) files under one table's location that no "
                                       "committed table references")
    p.add_argument("--table", metavar="NS.TABLE", help="the table whose location is cleaned; S3 credentials are "
                                                       "vended for it (loaded if committed, else staged)")
    p.add_argument("--location", help="s3://bucket/path to clean (default: the location of --table); must be a "
                                      "table's or namespace's location in the catalog")
    p.add_argument("--allow-non-table-prefix", action="store_true",
                   help="also clean a --location the catalog knows no table or namespace at (RISK: Hive or raw "
                        "data files there have no Iceberg metadata and would be deleted)")
    p.add_argument("--allow-min-age-under-24h", action="store_true",
                   help="accept --min-age under 86400 (RISK: files of a staged job still running are deleted)")
    p.add_argument("--apply", action="store_true", help="delete the orphans (default: dry run, list only)")
    p.add_argument("--min-age", type=float, default=DEFAULT_MIN_AGE_SECONDS, metavar="SECONDS",
                   help="only files older than this (default 259200 = 3 days, at least 86400 unless "
                        "--allow-min-age-under-24h: a running job may still write)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_connection_arguments(p)  # catalog options as for spark-conf (incl. --s3-endpoint for explicit keys)
    # Secrets also from an environment variable or a file (recommended): an argument shows in `ps`.
    p.add_argument("--s3-access-key")
    p.add_argument("--s3-secret-key", help="S3 secret key (prefer --s3-secret-key-env/-file)")
    p.add_argument("--s3-secret-key-env", metavar="VAR", help="read --s3-secret-key from environment variable VAR")
    p.add_argument("--s3-secret-key-file", metavar="PATH", help="read --s3-secret-key from the file PATH")
    p.add_argument("--s3-session-token")
    p.add_argument("--s3-session-token-env", metavar="VAR", help="read --s3-session-token from environment variable VAR")
    p.add_argument("--s3-session-token-file", metavar="PATH", help="read --s3-session-token from the file PATH")
    p.add_argument("--s3-region")
    p.add_argument("--s3-virtual-hosted", action="store_true", help="virtual-hosted addressing (default: path style)")
    p.set_defaults(func=_cmd)
