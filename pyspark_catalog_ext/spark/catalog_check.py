"""A quick preflight of a catalog before a Spark session is built: reachable, credentials
accepted, warehouse exists (one-line errors instead of a JVM stack trace at the first query)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark_catalog_ext.spark.conf import CatalogSparkConf

__all__ = ["check_catalog"]


def check_catalog(conf: Mapping[str, str], catalog: str = "lake", timeout: float = 10.0) -> dict[str, Any]:
    """Probe the catalog behind `conf` (a Spark conf, or a catalog's properties) through the package's
    one catalog client: reachable, credentials accepted, warehouse exists.

    Raises CatalogUnavailableError / CatalogAuthError / CatalogNotFoundError with a one-line
    message; returns the `/v1/config` answer.
    """
    from pyspark_catalog_ext.catalog.rest import open_catalog

    props = CatalogSparkConf(conf).catalog(catalog) if any(k.startswith("spark.") for k in conf) else dict(conf)
    with open_catalog(props, timeout=(min(5.0, timeout), timeout), retries=1) as client:
        client.namespaces()  # some servers (SeaweedFS) answer /v1/config for any warehouse: listing tells the truth
        return client.config_answer
