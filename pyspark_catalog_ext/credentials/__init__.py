"""The Python face of the JVM shim's storage-credential refresh: status, knobs (`RefreshPolicy`)
and user credential sources."""

from pyspark_catalog_ext.credentials.manager import CredentialManager, TableStatus, attach
from pyspark_catalog_ext.credentials.policy import RefreshPolicy
from pyspark_catalog_ext.credentials.sources import AssumeRoleSource, CredentialSource, FunctionSource, StorageCredentials, TableInfo

__all__ = [
    "AssumeRoleSource",
    "CredentialManager",
    "CredentialSource",
    "FunctionSource",
    "RefreshPolicy",
    "StorageCredentials",
    "TableInfo",
    "TableStatus",
    "attach",
]
