"""`pyspark-catalog-ext connect-server`: a Spark Connect server for one trust domain.

The catalog's secret comes from standard input only: an argument shows in /proc/<pid>/cmdline, an
environment variable in /proc/<pid>/environ, a file on disk stays readable, and every client's UDF
runs as the server's user, a child of this process.
"""

from __future__ import annotations

import argparse
import sys

from pyspark_catalog_ext.cli.options import add_connection_arguments, add_stack_arguments, connection_kwargs
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.secret_keys import is_secret_key
from pyspark_catalog_ext.spark.catalog_check import check_catalog
from pyspark_catalog_ext.spark.conf import spark_conf
from pyspark_catalog_ext.spark.connect_server import (
    DEFAULT_PORT,
    LOOPBACK,
    is_loopback,
    read_connect_token,
    serve,
    server_settings,
)

__all__ = ["register"]

_SECRET_SOURCES = ("credential", "credential_env", "credential_file", "token", "token_env", "token_file", "from_pyiceberg")


def _stdin_line(what: str) -> str:
    value = sys.stdin.readline().strip()
    if not value:
        raise ConfigError(f"standard input holds no line for {what}: pipe the secrets in, one a line, e.g. from your secret manager")
    return value


def _catalog_secret(args: argparse.Namespace) -> dict[str, str | None]:
    """The catalog's credential or token: the first line of standard input."""
    given = [name for name in _SECRET_SOURCES if getattr(args, name) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise ConfigError(f"connect-server takes the catalog's secret from standard input only (--credential-stdin or --token-stdin), "
                          f"not {flag}: every client's UDF can read the server's command line, environment and files")
    if args.credential_stdin and args.token_stdin:
        raise ConfigError("pass only one of --credential-stdin and --token-stdin")
    if args.credential_stdin:
        return {"credential": _stdin_line("--credential-stdin")}
    if args.token_stdin:
        return {"token": _stdin_line("--token-stdin")}
    return {}


def _cmd(args: argparse.Namespace) -> int:
    extra: dict[str, str] = {}
    for item in args.conf or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--conf {item!r} must look like key=value")
        if is_secret_key(key):
            raise ConfigError(f"--conf {key}=...: a secret on the command line can be read by every client's UDF; "
                              f"pass --conf-stdin {key} and its value on standard input")
        extra[key] = value
    token = read_connect_token(args.connect_token_file, args.connect_token_env)
    secret = _catalog_secret(args)
    for key in args.conf_stdin or []:  # after the catalog's secret, one line each, in order
        extra[key] = _stdin_line(f"--conf-stdin {key}")
    kwargs = {**connection_kwargs(args), **secret}
    conf = spark_conf(
        args.profile, args.catalog, jars=None if args.jars == "none" else args.jars, repository=args.repository,
        shim=not args.no_shim, local=True if is_loopback(args.bind) else None, extra_conf=extra, spark=args.spark,
        iceberg=args.iceberg, store=args.store, **kwargs,
    )
    if args.check:
        check_catalog(conf, args.catalog)
    settings = server_settings(dict(conf), token=token, bind=args.bind, port=args.port)
    if not is_loopback(args.bind):
        print(f"connect-server: listening on {args.bind}, beyond this machine: the server speaks plain gRPC and "
              "pyspark-client sends its token to another host over TLS only, so put a TLS proxy in front of it", file=sys.stderr)

    def started(host: str, port: int) -> None:
        # The same words as Spark's SparkConnectServer, so scripts that wait for them keep working.
        print(f"Spark Connect server started at: {host}:{port}", flush=True)

    serve(settings, private=args.conf_stdin or (), started=started)  # a stdin value never reaches a command line
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `connect-server` to the CLI."""
    p = subparsers.add_parser("connect-server", help="run a Spark Connect server for one trust domain (token required, "
                                                     "loopback by default, the catalog's secret from stdin)")
    add_connection_arguments(p)
    p.add_argument("--credential-stdin", action="store_true", help="read the catalog's OAuth2 credential from standard input")
    p.add_argument("--token-stdin", action="store_true", help="read the catalog's bearer token from standard input")
    p.add_argument("--connect-token-file", metavar="PATH", help="the token clients must send: a file only you can read (chmod 600)")
    p.add_argument("--connect-token-env", metavar="VAR", help="the token clients must send, from environment variable VAR")
    p.add_argument("--bind", default=LOOPBACK, metavar="ADDRESS",
                   help=f"address to listen on (default: {LOOPBACK}; another one exposes the server to that network)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default: {DEFAULT_PORT})")
    p.add_argument("--catalog", default="lake", help="Spark catalog name (default: lake)")
    p.add_argument("--jars", choices=["offline", "pypi", "maven", "packages", "none"], default="offline",
                   help="the jars' route, as for spark-conf (default: offline)")
    add_stack_arguments(p)
    p.add_argument("--store", choices=["s3", "gcs", "adls"], default="s3", help="where the catalog's tables keep their files (default: s3)")
    p.add_argument("--repository", metavar="DIR_OR_URL", help="with --jars packages: a folder made by `maven-repo` or a Maven repository URL")
    p.add_argument("--no-shim", action="store_true", help="plain Iceberg REST catalog without the refresh shim")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="extra setting, never a secret (repeatable)")
    p.add_argument("--conf-stdin", action="append", metavar="KEY",
                   help="extra setting whose value is the next line of standard input, for secrets such as "
                        "spark.sql.catalog.<c>.header.X-Api-Key (repeatable; after the catalog's secret)")
    p.add_argument("--check", action="store_true", help="probe the catalog (reachable, credentials, warehouse) first")
    p.set_defaults(func=_cmd)
