"""What a storage-credential refresh is told, in either runtime: its knobs (`RefreshPolicy`) and
user credential sources. A Spark session's refresh (`attach`, `CredentialManager`, status) is
`pyspark_catalog_ext.spark.credentials`; `attach` is also on the package's face."""

from typing import Any

from pyspark_catalog_ext.credentials.policy import RefreshPolicy
from pyspark_catalog_ext.credentials.sources import AssumeRoleSource, CredentialSource, FunctionSource, StorageCredentials, TableInfo

__all__ = [
    "AssumeRoleSource",
    "CredentialSource",
    "FunctionSource",
    "RefreshPolicy",
    "StorageCredentials",
    "TableInfo",
]

_MOVED = {"attach": "pyspark_catalog_ext.attach", "CredentialManager": "pyspark_catalog_ext.CredentialManager",
          "TableStatus": "pyspark_catalog_ext.spark.credentials.TableStatus",
          "manager": "pyspark_catalog_ext.spark.credentials"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:  # an ImportError: `from ... import` would replace an AttributeError's words with its own
        raise ImportError(f"pyspark_catalog_ext.credentials.{name} moved to {_MOVED[name]}; import it from there")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
