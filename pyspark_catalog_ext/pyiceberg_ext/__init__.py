"""PyIceberg with the guarantees Spark jobs get: refreshed vended credentials and guarded commits.

`ExtRestCatalog` (catalog.py) is PyIceberg's RestCatalog with `RefreshingFileIO`s (fileio.py) fed
by a `CredentialRefresher` (refresher.py), and commits through `GuardedCommit` (commits.py).
`pyspark_catalog_ext.pyiceberg_catalog(...)` returns one.
"""

from .catalog import ExtRestCatalog
from .commits import CommitPolicy, PyIcebergCommitFailedError, PyIcebergCommitStateUnknownError
from .fileio import RefreshingFileIO
from .refresher import ENV_PREFIX, PROPERTY_PREFIX, CredentialRefresher, TableCredentials, refresh_policy

__all__ = [
    "ENV_PREFIX",
    "PROPERTY_PREFIX",
    "CommitPolicy",
    "CredentialRefresher",
    "ExtRestCatalog",
    "PyIcebergCommitFailedError",
    "PyIcebergCommitStateUnknownError",
    "RefreshingFileIO",
    "TableCredentials",
    "refresh_policy",
]
