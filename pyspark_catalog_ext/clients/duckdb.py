"""DuckDB on an Iceberg REST catalog: the `CREATE SECRET` / `ATTACH` statements for a connection,
and a DuckDB connection with the catalog attached (for notebooks).

DuckDB's extensions come from the `[duckdb]` extra as PyPI packages (`duckdb-extension-iceberg`,
`-httpfs`, `-avro`), each holding one `.duckdb_extension` file for DuckDB's own version: that file
is LOADed by path, and DuckDB's automatic extension download is switched off, so nothing is
fetched at run time.

DuckDB reads storage with the credentials the catalog vends (`ACCESS_DELEGATION_MODE
'vended_credentials'`); it has no S3 remote signing, so a remote-signing connection is refused
here with that reason.
"""

from __future__ import annotations

import re
from importlib import import_module, resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pyspark_catalog_ext.catalog.connection import CatalogConnection
from pyspark_catalog_ext.errors import CatalogError, ConfigError

__all__ = ["DUCKDB_VERSION", "EXTENSIONS", "INSTALL_HINT", "duckdb_statements", "duckdb_connect", "extension_file"]

DUCKDB_VERSION = "1.5.5"  # the [duckdb] extra's pin: the extension packages are built for exactly this DuckDB
EXTENSIONS = ("httpfs", "avro", "iceberg")  # in load order: iceberg reads manifests with avro and files with httpfs
INSTALL_HINT = "pip install 'pyspark-catalog-ext[duckdb]'"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
MASK = "***"


def _sql(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def _name(catalog: str) -> str:
    if not _NAME.fullmatch(catalog):
        raise ConfigError(f"catalog name {catalog[:40]!r} must be a plain identifier (letters, digits, _; not starting with a digit)")
    return catalog


def duckdb_statements(conn: CatalogConnection, catalog: str = "lake", *, show_secrets: bool = False,
                      read_only: bool | None = None) -> list[str]:
    """`CREATE SECRET` and `ATTACH` for `conn` as DuckDB catalog `catalog`. The client secret or
    token is `***` unless `show_secrets`; the only URLs are the connection's (the catalog URI and
    its OAuth2 token endpoint), never one a server answered. `read_only`: None leaves the choice to
    DuckDB, which attaches some catalogs read-only (Iceberg's REST fixture 1.11); False asks for writes."""
    name = _name(catalog)
    if conn.remote_signing:
        raise ConfigError("DuckDB cannot use delegation 'remote-signing': its iceberg extension reads storage only with vended "
                          "credentials (no S3 remote signing); use --delegation vended-credentials")
    secret_name = f"{name}_iceberg"
    if conn.auth == "oauth2":
        client_id, _, client_secret = str(conn.credential).partition(":")
        options = [f"CLIENT_ID {_sql(client_id)}", f"CLIENT_SECRET {_sql(client_secret if show_secrets else MASK)}",
                   f"OAUTH2_SERVER_URI {_sql(str(conn.oauth2_server_uri))}"]
        if conn.scope:
            options.append(f"OAUTH2_SCOPE {_sql(conn.scope)}")
    elif conn.auth == "token":
        options = [f"TOKEN {_sql(str(conn.token) if show_secrets else MASK)}"]
    else:
        raise ConfigError(f"DuckDB on this catalog needs OAuth2 client credentials or a bearer token, not {conn.auth!r} auth; "
                          "pass --credential or --token")
    attach = ["TYPE iceberg", f"SECRET {secret_name}", f"ENDPOINT {_sql(conn.uri)}",
              "ACCESS_DELEGATION_MODE 'vended_credentials'"]
    if conn.region:
        # DuckDB refuses vended keys that come without a region (Iceberg's REST fixture vends none);
        # the catalog's answer still sets the region where it names one.
        attach.append(f"DEFAULT_REGION {_sql(conn.region)}")
    if read_only is not None:
        attach.append(f"READ_ONLY {'true' if read_only else 'false'}")
    return [*_s3_settings(conn), f"CREATE OR REPLACE SECRET {secret_name} (TYPE iceberg, {', '.join(options)})",
            f"ATTACH {_sql(conn.warehouse or '')} AS {name} ({', '.join(attach)})"]


def _s3_settings(conn: CatalogConnection) -> list[str]:
    """The user's S3 endpoint as DuckDB's session defaults: a catalog that vends keys without an
    endpoint (Iceberg's REST fixture) is then read there, not on AWS; an endpoint the catalog vends
    still wins, as the keys' own secret."""
    if not conn.s3_endpoint:
        return []
    url = urlsplit(conn.s3_endpoint)
    # GLOBAL: a cursor is a connection of its own, with its own session settings
    return [f"SET GLOBAL s3_endpoint = {_sql(url.netloc)}", f"SET GLOBAL s3_use_ssl = {'true' if url.scheme == 'https' else 'false'}",
            f"SET GLOBAL s3_url_style = {_sql('path' if conn.path_style else 'vhost')}"]


def extension_file(name: str) -> Path:
    """The `.duckdb_extension` file of extension `name` from its PyPI package; a one-line
    ConfigError naming the install command when it is missing or for another DuckDB."""
    try:
        duckdb = import_module("duckdb")
        package = import_module(f"duckdb_extension_{name}")
    except ImportError:
        raise ConfigError(f"DuckDB or its {name} extension is not installed: {INSTALL_HINT}") from None
    path = Path(str(resources.files(package))) / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise ConfigError(f"the installed duckdb-extension-{name} has no build for DuckDB {duckdb.__version__}: {INSTALL_HINT} "
                          f"(DuckDB {DUCKDB_VERSION} and its extension packages of the same version)")
    return path


def duckdb_connect(conn: CatalogConnection | None = None, catalog: str = "lake", *, database: str = ":memory:",
                   read_only: bool | None = None, **resolve: Any) -> Any:
    """A DuckDB connection (`duckdb.DuckDBPyConnection`) with the catalog attached as `catalog`
    (`read_only` as `duckdb_statements` takes it).

    `conn` is a `CatalogConnection` (e.g. `lakehouse.connection()`), or else one is resolved from
    `resolve` (`profile=`, `uri=`, `credential=`, ... as `CatalogConnection.resolve` takes them).
    Tables are then `catalog.namespace.table`."""
    if conn is None:
        profile = resolve.pop("profile", "local")
        conn = CatalogConnection.resolve(profile, **resolve)
    statements = duckdb_statements(conn, catalog, show_secrets=True, read_only=read_only)
    files = [extension_file(name) for name in EXTENSIONS]
    import duckdb

    # no download at run time: every extension is LOADed from its package's file
    db = duckdb.connect(database, config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    try:
        for path in files:
            db.execute(f"LOAD {_sql(str(path))}")
        for statement in statements:
            db.execute(statement)
    except duckdb.Error as exc:
        db.close()
        # DuckDB's message may quote the statement: the secret is masked before it reaches a traceback or log
        message = str(exc)
        for secret in (conn.credential.partition(":")[2] if conn.credential else None, conn.token):
            if secret:
                message = message.replace(secret, MASK)
        raise CatalogError(f"DuckDB could not attach the catalog {conn.uri}: {type(exc).__name__}: {message}") from None
    except BaseException:
        db.close()
        raise
    return db
