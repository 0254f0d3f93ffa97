"""Trino on an Iceberg REST catalog: the catalog properties file (`etc/catalog/<name>.properties`)
for a connection, with Trino's native S3 file system and the catalog's vended credentials.

Trino's Iceberg connector has no S3 remote signing: a remote-signing connection is refused here
with that reason. Trino's native S3 takes the keys the catalog vends but not an endpoint: a store
other than AWS S3 needs `s3_endpoint` (`--s3-endpoint`), the user's own choice. The test suite
feeds this file to a real Trino 476 (clients/trino_server.py, tests/spark/test_trino_client.py).
"""

from __future__ import annotations

from pyspark_catalog_ext.catalog.connection import CatalogConnection
from pyspark_catalog_ext.errors import ConfigError

__all__ = ["trino_properties", "render_properties"]

MASK = "***"


def trino_properties(conn: CatalogConnection, *, show_secrets: bool = False) -> dict[str, str]:
    """The Iceberg connector's properties for `conn`. The OAuth2 credential or token is `***`
    unless `show_secrets`; the only URLs are the connection's (the catalog URI, its OAuth2 token
    endpoint and an S3 endpoint the user gave), never one a server answered."""
    if conn.remote_signing:
        raise ConfigError("Trino cannot use delegation 'remote-signing': its Iceberg connector reads storage only with vended "
                          "credentials or its own keys (no S3 remote signing); use --delegation vended-credentials")
    props = {"connector.name": "iceberg", "iceberg.catalog.type": "rest", "iceberg.rest-catalog.uri": conn.uri}
    if conn.warehouse:
        props["iceberg.rest-catalog.warehouse"] = conn.warehouse
    if conn.auth == "oauth2":
        client_id, _, secret = str(conn.credential).partition(":")
        props["iceberg.rest-catalog.security"] = "OAUTH2"
        props["iceberg.rest-catalog.oauth2.credential"] = f"{client_id}:{secret if show_secrets else MASK}"
        props["iceberg.rest-catalog.oauth2.server-uri"] = str(conn.oauth2_server_uri)
        if conn.scope:
            props["iceberg.rest-catalog.oauth2.scope"] = conn.scope
    elif conn.auth == "token":
        props["iceberg.rest-catalog.security"] = "OAUTH2"
        props["iceberg.rest-catalog.oauth2.token"] = str(conn.token) if show_secrets else MASK
    else:  # SigV4 catalogs (Glue, S3 Tables): Trino's own settings for them are not generated here
        raise ConfigError(f"--format trino covers OAuth2 client credentials and bearer tokens, not {conn.auth!r} auth; pass --credential or --token")
    props["iceberg.rest-catalog.vended-credentials-enabled"] = "true"
    props["fs.native-s3.enabled"] = "true"
    region = conn.region if conn.region and conn.region != "auto" else "us-east-1"  # R2's "auto": the SDK insists on a region
    props["s3.region"] = region
    if conn.path_style:
        props["s3.path-style-access"] = "true"
    if conn.s3_endpoint:
        props["s3.endpoint"] = conn.s3_endpoint
    return props


def render_properties(props: dict[str, str]) -> str:
    """A Java properties file (one `key=value` a line; `\\`, newlines and leading spaces escaped)."""
    def escape(value: str) -> str:
        value = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        return "\\" + value if value.startswith(" ") else value

    return "\n".join(f"{k}={escape(v)}" for k, v in props.items())
