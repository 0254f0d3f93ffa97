"""Refreshing storage credentials for S3FileIO, supplied from Python through the JVM shim."""

from .manager import CredentialManager, TableStatus, attach
from .scheduler import RefreshPolicy, RefreshScheduler, TableState
from .sources import AssumeRoleSource, CredentialSource, FunctionSource, StorageCredentials, TableInfo

__all__ = [
    "AssumeRoleSource",
    "CredentialManager",
    "CredentialSource",
    "FunctionSource",
    "RefreshPolicy",
    "RefreshScheduler",
    "StorageCredentials",
    "TableInfo",
    "TableState",
    "TableStatus",
    "attach",
]
