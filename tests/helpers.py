"""Helpers shared by the tests and the benchmarks (one copy each): loopback ports and Spark
catalogs registered at runtime."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

from pyspark_catalog_ext.spark.conf import SPARK_CATALOG, catalog_properties


def free_port() -> int:
    """A loopback port that was free a moment ago (for pre-choosing server ports)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def busy_port() -> Iterator[int]:
    """A loopback port someone is listening on, for as long as the block runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def add_spark_catalog(spark: Any, lakehouse: Any, name: str, uri: str, *, shim: bool = True) -> None:
    """Register catalog `name` at runtime, configured like the lakehouse's but reached via `uri`."""
    props = catalog_properties("local", uri=uri, lakehouse=lakehouse, warehouse=lakehouse.info.warehouse,
                               credential=lakehouse.info.credential, shim=shim)
    spark.conf.set(f"spark.sql.catalog.{name}", SPARK_CATALOG)
    for key, value in props.items():
        spark.conf.set(f"spark.sql.catalog.{name}.{key}", value)


def add_admin_spark_catalog(spark: Any, lakehouse: Any, name: str = "lakeadmin") -> str:
    """A runtime catalog with the lakehouse admin's static S3 keys and no vending: vended
    credentials only reach a table's own location, and some tests write elsewhere on purpose."""
    info = lakehouse.info
    add_spark_catalog(spark, lakehouse, name, info.iceberg_uri, shim=False)
    spark.conf.unset(f"spark.sql.catalog.{name}.header.X-Iceberg-Access-Delegation")
    for key, value in {"s3.access-key-id": info.access_key, "s3.secret-access-key": info.secret_key,
                       "s3.endpoint": info.s3_endpoint, "s3.path-style-access": "true",
                       "client.region": "us-east-1"}.items():
        spark.conf.set(f"spark.sql.catalog.{name}.{key}", value)
    return name


def catalog_client(lakehouse: Any, url: str | None = None, **kwargs: Any) -> Any:
    """The package's one catalog client (`CatalogClient`) as the lakehouse's admin, at `url` (a proxy in
    front of the lakehouse) or the lakehouse itself."""
    from pyspark_catalog_ext.catalog.rest import open_catalog

    info = lakehouse.info
    props = catalog_properties("local", uri=url or info.iceberg_uri, lakehouse=lakehouse, warehouse=info.warehouse,
                               credential=info.credential, shim=False)
    return open_catalog(props, **kwargs)
