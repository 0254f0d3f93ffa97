"""`pyspark-catalog-ext` command line: one module per command, each with `register(subparsers)`.

The commands parse, call the package's typed functions, print and set exit codes; the domain
modules hold no argparse. Expected errors (CatalogExtError) print one `error: ...` line and exit 2,
never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pyspark_catalog_ext import __version__
from pyspark_catalog_ext.cli import connect_server, demo, doctor, local, maintain, maven_repo, spark_conf, staged
from pyspark_catalog_ext.errors import CatalogExtError

__all__ = ["main", "build_parser"]

# In help order.
COMMANDS = (local, spark_conf, connect_server, demo, doctor, staged, maintain, maven_repo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyspark-catalog-ext",
        description="PySpark + Iceberg REST catalogs with vended credentials that don't expire mid-job",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CatalogExtError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
