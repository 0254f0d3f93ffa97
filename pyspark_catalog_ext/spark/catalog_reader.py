"""A Spark catalog, read from Python through Spark itself: the catalog client of `maintain` (and
of notifications' source) inside a Spark session.

Issue 17: inside Spark, Python reads table state through Spark's own catalog, never by pulling the
catalog's credentials back out of the JVM conf to open a second session. `SparkCatalogReader` has
the read-only part of `CatalogClient`'s interface that those tools use (`namespaces`, `tables`,
`has_namespace`, `has_table`, `load_table_json`, `call("GET", ...)`, `safe_uri`, `warehouse`) and
answers it with the shim's `CatalogReads` over Py4J (`ShimJvm`): listings and loads through the
Spark catalog's Iceberg catalog, a raw GET (Polaris's policy API) through the catalog's own
authenticated HTTP client. Errors are `errors.py`'s, translated by `java_errors` (the one table).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pyspark_catalog_ext.errors import CatalogUnsupportedError, ConfigError
from pyspark_catalog_ext.spark.shim_api import SHIM_CATALOG_IMPL, CatalogInfo, ShimJvm

__all__ = ["SparkCatalogReader"]

T = TypeVar("T")


class SparkCatalogReader:
    """Read-only access to Spark catalog `catalog` of `spark`, with no credential in Python.

    `safe_uri` and `warehouse` are those `CatalogClient` would show for the same catalog (so
    maintenance's state keys stay the same); `shim` tells whether the catalog runs on the shim,
    which `call` needs (only GET).
    """

    def __init__(self, spark: Any, catalog: str) -> None:
        from pyspark_catalog_ext.catalog.urls import safe_url

        self.catalog = catalog
        self._shim = ShimJvm(spark)
        try:
            info: CatalogInfo = self._do(f"open Spark catalog {catalog}", lambda: self._shim.catalog_info(catalog))
        except TypeError:  # py4j's "'JavaPackage' object is not callable": the shim's classes are not loaded
            raise ConfigError("the pyspark-catalog-ext shim is not on this Spark session's classpath; build the "
                              "session with pyspark_catalog_ext.configure(...)") from None
        if not info.uri:
            raise ConfigError(f"Spark catalog {catalog!r} is not an Iceberg REST catalog of this session (no uri); "
                              "configure it with pyspark_catalog_ext.configure(...)")
        self.safe_uri = safe_url(info.uri.rstrip("/"))
        self.warehouse = info.warehouse
        self.shim = info.shim

    def __enter__(self) -> SparkCatalogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        """Nothing to close: the session is Spark's."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(catalog={self.catalog!r}, uri={self.safe_uri!r}, shim={self.shim})"

    # ---- CatalogClient's read-only calls
    def namespaces(self, parent: Sequence[str] = ()) -> list[tuple[str, ...]]:
        """Namespaces directly under `parent` (full levels each)."""
        return self._do(f"list namespaces under {_dotted(parent) or 'the catalog'} in Spark catalog {self.catalog}",
                        lambda: self._shim.list_namespaces(self.catalog, parent))

    def tables(self, namespace: Sequence[str]) -> list[tuple[str, ...]]:
        """Identifiers (namespace levels..., name) of the tables in `namespace`."""
        return self._do(f"list tables of {_dotted(namespace)} in Spark catalog {self.catalog}",
                        lambda: self._shim.list_tables(self.catalog, namespace))

    def has_namespace(self, namespace: Sequence[str]) -> bool:
        return self._do(f"check namespace {_dotted(namespace)} in Spark catalog {self.catalog}",
                        lambda: self._shim.namespace_exists(self.catalog, namespace))

    def has_table(self, identifier: Sequence[str]) -> bool:
        return self._do(f"check table {_dotted(identifier)} in Spark catalog {self.catalog}",
                        lambda: self._shim.table_exists(self.catalog, identifier))

    def load_table_json(self, identifier: Sequence[str]) -> dict[str, Any]:
        """{"metadata-location", "metadata"} as the catalog has it now (Spark's cached copy is
        refreshed); no config and no storage credentials."""
        return self._do(f"load table {_dotted(identifier)} in Spark catalog {self.catalog}",
                        lambda: self._shim.load_table(self.catalog, identifier))

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None) -> Any:
        """GET a route of the catalog ("/polaris/v1/{prefix}/...", "/v1/{prefix}/...") on the Spark
        catalog's own session; parsed JSON or None. Read-only: any other method is refused."""
        if method.upper() != "GET":
            raise ConfigError(f"{method.upper()} {path}: reading through Spark's catalog is GET only")
        if not self.shim:
            raise CatalogUnsupportedError(
                f"Spark catalog {self.catalog!r} does not use catalog-impl={SHIM_CATALOG_IMPL}, so GET {path} cannot "
                "go through its session; configure it with pyspark_catalog_ext.configure(...)")
        query = {str(k): str(v) for k, v in (params or {}).items() if v is not None}
        return self._do(f"GET {path} in Spark catalog {self.catalog}",
                        lambda: self._shim.catalog_get(self.catalog, path, query))

    # ---- internals
    def _do(self, what: str, call: Callable[[], T]) -> T:
        """Run one JVM read; its Java failure becomes a one-line `errors.py` error ("`what` failed: ...")."""
        from pyspark_catalog_ext.spark.java_errors import java_exception_of, translate

        try:
            return call()
        except Exception as exc:  # a Py4JJavaError, or PySpark's conversion of one (UnsupportedOperation...)
            java = java_exception_of(exc)
            ours = None if java is None else translate(java, subject=what)
            if ours is None:
                raise
            raise ours from exc


def _dotted(parts: Sequence[str]) -> str:
    return ".".join(parts)
