"""The Python face of the JVM shim's storage-credential refresh: status, knobs (`RefreshPolicy`)
and user credential sources."""

from .manager import CredentialManager, TableStatus, attach
from .policy import RefreshPolicy
from .sources import AssumeRoleSource, CredentialSource, FunctionSource, StorageCredentials, TableInfo

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
