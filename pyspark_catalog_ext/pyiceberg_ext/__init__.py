"""PyIceberg with the guarantees Spark jobs get: refreshed vended credentials and guarded commits.

`GuardedRestCatalog` (catalog.py) is PyIceberg's RestCatalog with `RefreshingFileIO`s (fileio.py) fed
by a `CredentialRefresher` (refresher.py), and commits through `GuardedCommit` (commits.py).
`pyspark_catalog_ext.pyiceberg_catalog(...)` returns one.
"""


import importlib
from typing import Any

# Exports load on first use: the package root imports `factory` from here, and importing
# pyspark_catalog_ext must not import PyIceberg.
_EXPORTS = {
    "CommitPolicy": "commits",
    "CredentialRefresher": "refresher",
    "ENV_PREFIX": "refresher",
    "GuardedRestCatalog": "catalog",
    "PROPERTY_PREFIX": "refresher",
    "PyIcebergCommitFailedError": "commits",
    "PyIcebergCommitStateUnknownError": "commits",
    "RefreshingFileIO": "fileio",
    "TableCredentials": "refresher",
    "refresh_policy": "refresher",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
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
    "TableCredentials",
    "refresh_policy",
]
