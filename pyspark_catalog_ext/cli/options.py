"""The catalog connection options every command that talks to a catalog shares, and secrets read
from an argument, an environment variable or a file."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.catalog.profiles import DELEGATIONS
from pyspark_catalog_ext.errors import ConfigError

__all__ = ["add_connection_arguments", "connection_kwargs", "secret_argument", "add_stack_arguments"]


def add_stack_arguments(p: argparse.ArgumentParser) -> None:
    """Add --spark/--iceberg: which Spark x Iceberg combination the jars are for."""
    p.add_argument("--spark", metavar="VERSION", help="Spark line the jars are for, e.g. 4.1 (default: the installed pyspark's)")
    p.add_argument("--iceberg", metavar="VERSION",
                   help="Iceberg release, e.g. 1.12 (default: the newest with a runtime for that Spark line; Spark 3.5 on Java 11: 1.10.2)")


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
    """The `CatalogConnection.resolve` keyword arguments from options added by `add_connection_arguments`."""
    return dict(
        uri=args.uri, warehouse=args.warehouse, credential=secret_argument(args, "credential"),
        token=secret_argument(args, "token"),
        sigv4=True if args.sigv4 else None, oauth2_server_uri=args.oauth2_server_uri, scope=args.scope,
        region=args.region, signing_name=args.signing_name, s3_endpoint=args.s3_endpoint,
        from_pyiceberg=args.from_pyiceberg, delegation=getattr(args, "delegation", None),
        signer_uri=getattr(args, "signer_uri", None), signer_endpoint=getattr(args, "signer_endpoint", None),
    )


def secret_argument(args: argparse.Namespace, name: str) -> str | None:
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
