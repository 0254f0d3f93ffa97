"""`pyspark-catalog-ext` command line.

Each subcommand lives in the module that does the job and registers itself with a small
`register(subparsers)` function; add a module name to `_COMMAND_MODULES` to add a command.
Expected errors (CatalogExtError) print one `error: ...` line and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from . import __version__
from .errors import CatalogExtError

# Modules that may not exist yet (added by later work) are skipped quietly.
_COMMAND_MODULES = ("local", "session", "demo", "doctor", "cleanup", "maintenance")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyspark-catalog-ext",
        description="PySpark + Iceberg REST catalogs with vended credentials that don't expire mid-job",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.{name}":
                continue
            raise
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
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


if __name__ == "__main__":  # python -m pyspark_catalog_ext.cli
    sys.exit(main())
