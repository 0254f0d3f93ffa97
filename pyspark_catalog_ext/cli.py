"""`pyspark-catalog-ext` command line.

Each subcommand lives in the module that does the job and registers itself with a small
`register(subparsers)` function; add a module name to `_COMMAND_MODULES` to add a command.
Expected errors (CatalogExtError) print one `error: ...` line and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark_catalog_ext import __version__
from pyspark_catalog_ext.catalog.profiles import DELEGATIONS
from pyspark_catalog_ext.errors import CatalogExtError, ConfigError
from pyspark_catalog_ext.secret_keys import is_secret_key
from pyspark_catalog_ext.spark.catalog_check import check_catalog
from pyspark_catalog_ext.spark.conf import CatalogSparkConf, spark_conf

# The modules that register a subcommand, in help order; "cli" is this module (the spark-conf
# command and the connection options other commands share).
_COMMAND_MODULES = ("lakehouse.server", "cli", "lakehouse.demo", "doctor", "staging.cleanup", "governance.maintenance",
                    "spark.maven_repo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyspark-catalog-ext",
        description="PySpark + Iceberg REST catalogs with vended credentials that don't expire mid-job",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        if name == "cli":
            register_spark_conf(subparsers)
            continue
        importlib.import_module(f"{__package__}.{name}").register(subparsers)
    return parser


# -- CLI: connection options shared by spark-conf and doctor ----------------------------------------
def add_connection_arguments(p: argparse.ArgumentParser) -> None:
    """Add the catalog connection options (--profile, --uri, --warehouse, auth, ...) to `p`."""
    p.add_argument("--profile", default="local", help="vendor profile (default: local)")
    p.add_argument("--uri")
    p.add_argument("--warehouse")
    # Secrets also from an environment variable or a file: an argument shows in `ps` and shell history.
    p.add_argument("--credential", help="OAuth2 client credentials <client-id>:<client-secret>")
    p.add_argument("--credential-env", metavar="VAR", help="read --credential from environment variable VAR")
    p.add_argument("--credential-file", metavar="PATH", help="read --credential from the file PATH")
    p.add_argument("--token", help="bearer token")
    p.add_argument("--token-env", metavar="VAR", help="read --token from environment variable VAR")
    p.add_argument("--token-file", metavar="PATH", help="read --token from the file PATH")
    p.add_argument("--sigv4", action="store_true", help="sign catalog requests with AWS SigV4")
    p.add_argument("--oauth2-server-uri")
    p.add_argument("--scope")
    p.add_argument("--region")
    p.add_argument("--signing-name")
    p.add_argument("--s3-endpoint")
    p.add_argument("--from-pyiceberg", metavar="NAME", help="start from PyIceberg's catalog NAME (.pyiceberg.yaml / env)")
    p.add_argument("--delegation", choices=DELEGATIONS, help="storage access: vended-credentials (keys) or remote-signing (no keys; default: the profile's)")
    p.add_argument("--signer-uri", help="remote signer base URI when the catalog advertises none (default: the catalog URI)")
    p.add_argument("--signer-endpoint", help="remote signer path when the catalog advertises none (default: v1/aws/s3/sign)")


def connection_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The `catalog_properties` keyword arguments from options added by `add_connection_arguments`."""
    return dict(
        uri=args.uri, warehouse=args.warehouse, credential=_secret_argument(args, "credential"),
        token=_secret_argument(args, "token"),
        sigv4=True if args.sigv4 else None, oauth2_server_uri=args.oauth2_server_uri, scope=args.scope,
        region=args.region, signing_name=args.signing_name, s3_endpoint=args.s3_endpoint,
        from_pyiceberg=args.from_pyiceberg, delegation=getattr(args, "delegation", None),
        signer_uri=getattr(args, "signer_uri", None), signer_endpoint=getattr(args, "signer_endpoint", None),
    )


def _secret_argument(args: argparse.Namespace, name: str) -> str | None:
    """--NAME, or the value of the variable named by --NAME-env, or the content of --NAME-file
    (`name` as the attribute: s3_secret_key for --s3-secret-key)."""
    value, var, path = getattr(args, name), getattr(args, f"{name}_env"), getattr(args, f"{name}_file")
    name = name.replace("_", "-")  # the flag's spelling in messages
    if sum(x is not None for x in (value, var, path)) > 1:
        raise ConfigError(f"pass only one of --{name}, --{name}-env and --{name}-file")
    if var is not None:
        value = os.environ.get(var)
        if not value:
            raise ConfigError(f"--{name}-env {var}: the environment variable {var} is not set or empty; export it or pass --{name}-file")
    elif path is not None:
        try:
            value = Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise ConfigError(f"--{name}-file {path}: cannot read it ({reason}); pass a readable file holding only the {name}") from None
        if not value:
            raise ConfigError(f"--{name}-file {path} is empty; put the {name} in it")
    return value


# -- CLI: spark-conf ----------------------------------------------------------------------------
def _format(conf: CatalogSparkConf, fmt: str, show_secrets: bool) -> str:
    shown = dict(conf) if show_secrets else conf.masked()
    if fmt == "defaults":
        return "\n".join(f"{k} {v}" for k, v in shown.items())
    lines = []
    if "spark.jars" in shown:
        lines.append(f"--jars {shlex.quote(shown.pop('spark.jars'))}")
    if "spark.jars.packages" in shown:
        lines.append(f"--packages {shlex.quote(shown.pop('spark.jars.packages'))}")
    if "spark.jars.repositories" in shown:
        lines.append(f"--repositories {shlex.quote(shown.pop('spark.jars.repositories'))}")
    lines += [f"--conf {shlex.quote(f'{k}={v}')}" for k, v in shown.items()]
    return " \\\n".join(lines)


def _cmd(args: argparse.Namespace) -> int:
    extra = {}
    for item in args.conf or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--conf {item!r} must look like key=value")
        extra[key] = value
    for item in args.conf_env or []:  # a secret setting (header.X-Api-Key=...) stays out of argv
        key, sep, var = item.partition("=")
        if not sep or not key or not var:
            raise ConfigError(f"--conf-env {item!r} must look like KEY=VAR (the value is read from environment variable VAR)")
        if not os.environ.get(var):
            raise ConfigError(f"--conf-env {key}={var}: the environment variable {var} is not set or empty; export it")
        extra[key] = os.environ[var]
    conf = spark_conf(
        args.profile, args.catalog, jars=None if args.jars == "none" else args.jars, repository=args.repository, shim=not args.no_shim,
        local=True if args.local else None, extra_conf=extra, **connection_kwargs(args),
    )
    if args.check:
        check_catalog(conf, args.catalog)
    print(_format(conf, args.format, args.show_secrets))
    if not args.show_secrets and any(is_secret_key(k) for k in conf):
        print("# secrets are shown as ***; add --show-secrets to print them", file=sys.stderr)
    return 0


def register_spark_conf(subparsers: argparse._SubParsersAction) -> None:
    """Add `spark-conf` to the CLI."""
    p = subparsers.add_parser("spark-conf", help="print spark-submit flags or a spark-defaults.conf for a catalog")
    add_connection_arguments(p)
    p.add_argument("--catalog", default="lake", help="Spark catalog name (default: lake)")
    p.add_argument("--jars", choices=["offline", "maven", "packages", "none"], default="offline")
    p.add_argument("--repository", metavar="DIR_OR_URL", help="with --jars packages: a folder made by `maven-repo` or a Maven repository URL")
    p.add_argument("--no-shim", action="store_true", help="plain Iceberg REST catalog without the refresh shim")
    p.add_argument("--local", action="store_true", help="bind the driver to 127.0.0.1")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="extra setting (repeatable)")
    p.add_argument("--conf-env", action="append", metavar="KEY=VAR",
                   help="extra setting whose value is read from environment variable VAR, for secrets (repeatable)")
    p.add_argument("--format", choices=["submit", "defaults"], default="submit")
    p.add_argument("--show-secrets", action="store_true", help="print secrets instead of ***")
    p.add_argument("--check", action="store_true", help="probe the catalog (reachable, credentials, warehouse) first")
    p.set_defaults(func=_cmd)


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
