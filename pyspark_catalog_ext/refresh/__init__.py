"""What a storage-credential refresh is told, in either runtime: its knobs (`RefreshPolicy`) and
user credential sources. A Spark session's refresh (`attach`, `CredentialManager`, status) is
`pyspark_catalog_ext.spark.credentials`; `attach` is also on the package's face."""

from pyspark_catalog_ext.refresh.policy import RefreshPolicy
from pyspark_catalog_ext.refresh.sources import AssumeRoleSource, CredentialSource, FunctionSource, StorageCredentials, TableInfo

__all__ = [
    "AssumeRoleSource",
    "CredentialSource",
    "FunctionSource",
    "RefreshPolicy",
    "StorageCredentials",
    "TableInfo",
]
