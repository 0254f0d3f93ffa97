"""PyIceberg with the guarantees Spark jobs get: refreshed vended credentials and guarded commits.

`ExtRestCatalog` (catalog.py) is PyIceberg's RestCatalog with `RefreshingFileIO`s (fileio.py) fed
by a `CredentialRefresher` (refresher.py), and commits through `GuardedCommit` (commits.py).
`pyspark_catalog_ext.pyiceberg_catalog(...)` returns one.
"""

from .catalog import ExtRestCatalog
from .commits import CommitPolicy, PyIcebergCommitFailedError, PyIcebergCommitStateUnknownError
from .fileio import RefreshingFileIO
from .refresher import ENV_PREFIX, CredentialRefresher, TableCredentials, policy_from_env

__all__ = [
    "ENV_PREFIX",
    "CommitPolicy",
    "CredentialRefresher",
    "ExtRestCatalog",
    "PyIcebergCommitFailedError",
    "PyIcebergCommitStateUnknownError",
    "RefreshingFileIO",
    "TableCredentials",
    "policy_from_env",
]
