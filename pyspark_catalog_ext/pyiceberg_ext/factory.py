"""A PyIceberg catalog (`GuardedRestCatalog`, a `RestCatalog`) with the same settings as a Spark session (the PyIceberg bridge)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark_catalog_ext.catalog.connection import CatalogConnection, pyiceberg_names, spark_catalog_properties
from pyspark_catalog_ext.errors import ConfigError

if TYPE_CHECKING:
    from pyiceberg.catalog.rest import RestCatalog

__all__ = ["pyiceberg_catalog"]


def _pyiceberg_props(source: Any, catalog: str) -> dict[str, Any]:
    if isinstance(source, CatalogConnection):
        return source.pyiceberg_properties()
    if isinstance(source, Mapping):
        props = spark_catalog_properties(source, catalog) if any(k.startswith("spark.") for k in source) else dict(source)
        if not props:
            raise ConfigError(f"the conf has no spark.sql.catalog.{catalog}.* settings; pass the catalog name it uses")
        return pyiceberg_names(props)
    if not callable(getattr(source, "connection", None)):
        raise ConfigError(f"cannot make a PyIceberg catalog from a {type(source).__name__}: pass a CatalogConnection, "
                          "a Lakehouse or LakehouseInfo, or a conf from spark_conf()")
    return source.connection().pyiceberg_properties()


def pyiceberg_catalog(source: Any, catalog: str = "lake", *, refresh: bool = True, policy: Any = None,
                      credential_source: Any = None, **overrides: str) -> RestCatalog:
    """A PyIceberg catalog with the same settings (vended-credentials header included).

    `source` is a `CatalogConnection`, a Lakehouse / LakehouseInfo, or a conf from `spark_conf()` (or
    a plain dict of catalog properties). The catalog is an `GuardedRestCatalog` (a RestCatalog subclass): with
    `refresh=True` (default) its tables' FileIOs keep vended credentials fresh in the background
    (`policy`: a `RefreshPolicy`, default from PYSPARK_CATALOG_EXT_REFRESH_* or Spark's defaults;
    `credential_source`: your own `CredentialSource` instead of the catalog), and every commit is
    guarded (Idempotency-Key or reconciliation). `refresh=False` keeps the first keys, as plain PyIceberg.
    On a catalog that signs instead of vending (`delegation="remote-signing"`), each table's FileIO has
    no key and signs every S3 request at the table's signer (docs/signing.md; the `[signing]` extra).
    """
    from pyspark_catalog_ext.pyiceberg_ext import GuardedRestCatalog

    props = {**_pyiceberg_props(source, catalog), **overrides}
    # Errors are already one line: CatalogClient translates the catalog's answers (errors.py's types).
    return GuardedRestCatalog(catalog, refresh=refresh, policy=policy, source=credential_source, **props)
