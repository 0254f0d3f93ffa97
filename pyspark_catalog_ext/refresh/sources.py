"""User credential sources: what only Python can do.

The catalog's own strategies run in the JVM shim. For a catalog registered with
`attach(spark, sources=...)`, the JVM asks the source through a Py4J callback, with a timeout
(`catalog-ext.refresh.timeout-ms`); the request carries the table's identity, never a secret.
The answer's shape: ``{"strategy": name, "config": {...}, "storage-credentials": [{"prefix", "config"}]}``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyspark_catalog_ext.catalog.storage_keys import S3_ACCESS_KEY_ID, S3_EXPIRY, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN
from pyspark_catalog_ext.errors import CredentialRefreshError

if TYPE_CHECKING:
    from botocore.client import BaseClient

TableRequest = dict  # the JVM's description of a table (no secrets): RefreshSubject.describe(), sent by RefreshSources
BridgeAnswer = dict


@dataclass(frozen=True)
class TableInfo:
    """What a user credential source is told about the table it must serve (no secrets)."""

    catalog: str
    namespace: tuple[str, ...]
    table: str
    location: str | None
    staged: bool

    @property
    def name(self) -> str:
        return ".".join([self.catalog, *self.namespace, self.table])

    @staticmethod
    def from_request(req: TableRequest) -> TableInfo:
        return TableInfo(
            catalog=req.get("catalog", ""),
            namespace=tuple(req.get("namespace", [])),
            table=req.get("table", ""),
            location=req.get("location"),
            staged=bool(req.get("staged")),
        )


@dataclass(frozen=True)
class StorageCredentials:
    """S3 credentials from a user source. `repr` never shows the keys."""

    access_key_id: str = field(repr=False)
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    expires_at: _dt.datetime | None = None
    prefix: str | None = None

    def to_config(self) -> dict[str, str]:
        config = {S3_ACCESS_KEY_ID: self.access_key_id, S3_SECRET_ACCESS_KEY: self.secret_access_key}
        if self.session_token:
            config[S3_SESSION_TOKEN] = self.session_token
        if self.expires_at is not None:
            expires = self.expires_at if self.expires_at.tzinfo else self.expires_at.replace(tzinfo=_dt.timezone.utc)
            config[S3_EXPIRY] = str(int(expires.timestamp() * 1000))
        return config


@runtime_checkable
class CredentialSource(Protocol):
    """A user's own credentials: a boto3 session, an AssumeRole, a company token service..."""

    def fetch(self, table: TableInfo) -> StorageCredentials:
        """Fresh credentials for `table`. Raise with a one-line message on failure."""


class FunctionSource:
    """Adapts a plain function ``table -> StorageCredentials`` to a CredentialSource."""

    def __init__(self, fn: Callable[[TableInfo], StorageCredentials], name: str = "function") -> None:
        self._fn = fn
        self.name = name

    def fetch(self, table: TableInfo) -> StorageCredentials:
        return self._fn(table)


class AssumeRoleSource:
    """Credentials from STS AssumeRole, for catalogs that vend nothing (boto3's default chain signs)."""

    def __init__(self, role_arn: str, session_name: str = "pyspark-catalog-ext",
                 duration_seconds: int = 3600, sts_client: BaseClient | None = None, **client_kwargs: Any) -> None:
        import boto3

        self.role_arn = role_arn
        self.session_name = session_name
        self.duration_seconds = duration_seconds
        self._sts = sts_client or boto3.client("sts", **client_kwargs)

    def fetch(self, table: TableInfo) -> StorageCredentials:
        resp = self._sts.assume_role(
            RoleArn=self.role_arn, RoleSessionName=self.session_name, DurationSeconds=self.duration_seconds
        )
        c = resp["Credentials"]
        return StorageCredentials(c["AccessKeyId"], c["SecretAccessKey"], c.get("SessionToken"), c.get("Expiration"))

    def __repr__(self) -> str:
        return f"AssumeRoleSource(role_arn={self.role_arn!r})"


def user_answer(source: CredentialSource, req: TableRequest) -> BridgeAnswer:
    """The user's own source, in the bridge's answer shape."""
    creds = source.fetch(TableInfo.from_request(req))
    if not isinstance(creds, StorageCredentials):
        raise CredentialRefreshError(
            f"credential source {type(source).__name__} returned {type(creds).__name__}; return a StorageCredentials"
        )
    answer: BridgeAnswer = {"strategy": f"user-source:{type(source).__name__}", "config": creds.to_config(),
                            "storage-credentials": []}
    if creds.prefix:
        answer["storage-credentials"] = [{"prefix": creds.prefix, "config": creds.to_config()}]
    return answer
