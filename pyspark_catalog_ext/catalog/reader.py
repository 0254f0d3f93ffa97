"""`CatalogReader`: what maintenance, notifications and `staged cleanup` read from a catalog.

Two implementations satisfy it: `catalog.rest.CatalogClient` (our PyIceberg REST session, for the
CLI and PyIceberg jobs) and `spark.catalog_reader.SparkCatalogReader` (a Spark catalog read
through Spark's own session, so no catalog secret leaves the JVM).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["CatalogReader"]


@runtime_checkable
class CatalogReader(Protocol):
    """Read-only catalog access by namespace and table identifiers (tuples of name levels)."""

    #: The catalog's URI with no user info or query, fit for messages and state keys.
    safe_uri: str
    #: The warehouse the catalog was opened with, if any.
    warehouse: str | None
    #: Whether the catalog runs on the shim (a session to read Polaris's APIs through).
    shim: bool

    def namespaces(self, parent: Sequence[str] = ()) -> list[tuple[str, ...]]: ...

    def tables(self, namespace: Sequence[str]) -> list[tuple[str, ...]]: ...

    def has_namespace(self, namespace: Sequence[str]) -> bool: ...

    def has_table(self, identifier: Sequence[str]) -> bool: ...

    def load_table_json(self, identifier: Sequence[str]) -> dict[str, Any]: ...

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None) -> Any: ...
