"""The location guard's index of each namespace's stored tables, looked up by path.

A check asks which tables hold a path overlapping a new location: the index answers with a few
dictionary look-ups (one per directory level of the path), whatever the namespace's size. It is
built from the catalog once per namespace and kept up to date by the guard, the one writer of
table entries; whatever the guard cannot settle drops the namespace's index, rebuilt on next use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping

from cachetools import LRUCache

from pyspark_catalog_ext.lakehouse.locations import Ident, StoredTable, ancestors, overlap

__all__ = ["NamespaceIndex", "TableIndex", "Namespace", "Neighbours", "MAX_INDEXED_NAMESPACES"]

MAX_INDEXED_NAMESPACES = 256  # namespaces kept indexed (least recently used dropped, then rebuilt on use)

Namespace = tuple[str, tuple[str, ...]]  # (table bucket, namespace levels)


class NamespaceIndex:
    """The stored tables of one namespace and the paths each holds (`StoredTable.occupied`)."""

    def __init__(self, tables: Iterable[StoredTable] = ()) -> None:
        self.tables: dict[Ident, StoredTable] = {}
        self._at: dict[str, set[Ident]] = {}  # path -> tables holding exactly that path
        self._below: dict[str, set[Ident]] = {}  # directory -> tables holding a path strictly under it
        for table in tables:
            self.put(table)

    def __len__(self) -> int:
        return len(self.tables)

    def put(self, table: StoredTable) -> None:
        self.remove(table.ident)
        self.tables[table.ident] = table
        for path in table.occupied:
            self._at.setdefault(path, set()).add(table.ident)
            for above in list(ancestors(path))[1:]:
                self._below.setdefault(above, set()).add(table.ident)

    def remove(self, ident: Ident) -> None:
        table = self.tables.pop(ident, None)
        if table is None:
            return
        for path in table.occupied:
            _discard(self._at, path, ident)
            for above in list(ancestors(path))[1:]:
                _discard(self._below, above, ident)

    def overlapping(self, path: str) -> Iterator[tuple[Ident, str]]:
        """(table, the path it holds) for each table holding `path`, a directory above it or a path below it."""
        for above in ancestors(path):
            for ident in sorted(self._at.get(above, ())):
                yield ident, above
        for ident in sorted(self._below.get(path, ())):
            yield ident, next(p for p in self.tables[ident].occupied if p.startswith(path + "/"))


def _discard(paths: dict[str, set[Ident]], path: str, ident: Ident) -> None:
    holders = paths.get(path)
    if holders is not None:
        holders.discard(ident)
        if not holders:
            del paths[path]


class TableIndex:
    """NamespaceIndex per namespace, least recently used dropped beyond MAX_INDEXED_NAMESPACES. The
    guard reads and changes a namespace's index only under that namespace's lock."""

    def __init__(self, max_namespaces: int = MAX_INDEXED_NAMESPACES) -> None:
        self._indexes: LRUCache = LRUCache(maxsize=max_namespaces)
        self._lock = threading.Lock()

    def get(self, namespace: Namespace) -> NamespaceIndex | None:
        with self._lock:
            return self._indexes.get(namespace)

    def set(self, namespace: Namespace, index: NamespaceIndex) -> None:
        with self._lock:
            self._indexes[namespace] = index

    def forget(self, namespace: Namespace) -> None:
        """Drop a namespace's index (the guard is unsure of it): rebuilt from the catalog on next use."""
        with self._lock:
            self._indexes.pop(namespace, None)


class Neighbours:
    """What a request's changes must not overlap: the indexed tables of its namespaces, tables
    staged here, and the request's own changes (ident -> (paths, how to name it))."""

    def __init__(self, indexes: Iterable[NamespaceIndex], others: Mapping[Ident, tuple[tuple[str, ...], str]]) -> None:
        self.indexes = list(indexes)
        self.others = others

    def overlapping(self, path: str) -> Iterator[tuple[Ident, str, str]]:
        """(table, the path it holds, how to name it) for each neighbour overlapping `path`."""
        for index in self.indexes:
            for ident, held in index.overlapping(path):
                yield ident, held, "table"
        for ident, (paths, label) in self.others.items():
            for held in paths:
                if overlap(path, held):
                    yield ident, held, label
