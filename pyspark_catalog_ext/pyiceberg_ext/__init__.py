"""PyIceberg with the guarantees Spark jobs get: refreshed vended credentials and guarded commits.

`GuardedRestCatalog` (catalog.py) is PyIceberg's RestCatalog with `RefreshingFileIO`s (fileio.py) fed
by a `CredentialRefresher` (pyspark_catalog_ext/refresh/refresher.py), and commits through
`GuardedCommit` (commits.py). Only the adapter lives here; the refresh engine is in `refresh/` and
the commit rule in `commit/`, beside their Java twins' packages.
`pyspark_catalog_ext.pyiceberg_catalog(...)` returns one.
"""


import importlib
from typing import Any

# Exports load on first use: the package root imports `factory` from here, and importing
# pyspark_catalog_ext must not import PyIceberg.
_EXPORTS = {
    "CommitPolicy": "commits",
    "CredentialRefresher": "pyspark_catalog_ext.refresh.refresher",
    "ENV_PREFIX": "pyspark_catalog_ext.refresh.policy",
    "GuardedRestCatalog": "catalog",
    "PROPERTY_PREFIX": "pyspark_catalog_ext.refresh.policy",
    "PyIcebergCommitFailedError": "commits",
    "PyIcebergCommitStateUnknownError": "commits",
    "RefreshingFileIO": "fileio",
    "TableEntry": "pyspark_catalog_ext.refresh.entry",
    "refresh_policy": "pyspark_catalog_ext.refresh.policy",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module = _EXPORTS[name]
        return getattr(importlib.import_module(module if "." in module else f"{__name__}.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ENV_PREFIX",
    "PROPERTY_PREFIX",
    "CommitPolicy",
    "CredentialRefresher",
    "GuardedRestCatalog",
    "PyIcebergCommitFailedError",
    "PyIcebergCommitStateUnknownError",
    "RefreshingFileIO",
    "TableEntry",
    "refresh_policy",
]
