"""`pyspark-catalog-ext maven-repo DIR`: a Maven repository of the pinned jars and the shim, for
`--packages` (`pyspark_catalog_ext.spark.maven_repo.write_repository`)."""

from __future__ import annotations

import argparse
import sys

from pyspark_catalog_ext.cli.options import add_stack_arguments
from pyspark_catalog_ext.spark.jars import select_stack
from pyspark_catalog_ext.spark.maven_repo import write_repository

__all__ = ["register"]


def _cmd(args: argparse.Namespace) -> int:
    stack = select_stack(args.spark, args.iceberg)
    written = write_repository(args.directory, stack=stack)
    for coord in written:
        print(coord)
    flags = "" if stack.is_default else f" --spark {stack.spark} --iceberg {stack.iceberg}"
    print(f"# next: pyspark-catalog-ext spark-conf --jars packages --repository {args.directory}{flags}", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `maven-repo` to the CLI."""
    p = subparsers.add_parser("maven-repo", help="lay out a Maven repository of the pinned jars and the shim (for --packages)")
    p.add_argument("directory", help="folder to write (created if missing)")
    add_stack_arguments(p)
    p.set_defaults(func=_cmd)
