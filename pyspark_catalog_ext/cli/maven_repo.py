"""`pyspark-catalog-ext maven-repo DIR`: a Maven repository of the pinned jars and the shim, for
`--packages` (`pyspark_catalog_ext.spark.jvm_deps.maven_repo.write_repository`)."""

from __future__ import annotations

import argparse
import sys

from pyspark_catalog_ext.cli.options import add_stack_arguments
from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_stack_jars
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import select_stack
from pyspark_catalog_ext.spark.jvm_deps.maven_repo import writable_directory, write_repository

__all__ = ["register"]


def _cmd(args: argparse.Namespace) -> int:
    stack = select_stack(args.spark, args.iceberg)
    writable_directory(args.directory)  # before any download
    got = resolve_stack_jars(stack, route="pypi" if args.jars == "pypi" else None, user_pick=args.iceberg is not None)
    stores = list(dict.fromkeys(args.store or ()))
    written = write_repository(args.directory, jars=list(got.jars), stack=got.stack, route=got.route, stores=stores)
    for coord in written:
        print(coord)
    flags = f" --spark {got.stack.spark} --iceberg {got.stack.iceberg}" + "".join(f" --store {s}" for s in stores)
    print(f"# next: pyspark-catalog-ext spark-conf --jars packages --repository {args.directory}{flags}", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `maven-repo` to the CLI."""
    p = subparsers.add_parser("maven-repo", help="lay out a Maven repository of the pinned jars and the shim (for --packages)")
    p.add_argument("directory", help="folder to write (created if missing)")
    add_stack_arguments(p)
    p.add_argument("--jars", choices=["offline", "pypi"], default="offline",
                   help="where the jars come from: offline (default): Maven Central; pypi: PyPI wheels (Spark 3.5 + Iceberg 1.10.2)")
    p.add_argument("--store", action="append", choices=["adls", "gcs"],
                   help="also lay out that store's SDK bundle (repeatable; ADLS ~18 MB, GCS ~64 MB), for `spark-conf --jars packages --store ...`")
    p.set_defaults(func=_cmd)
