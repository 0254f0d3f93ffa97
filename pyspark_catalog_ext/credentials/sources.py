"""Where fresh storage credentials come from: the catalog strategies (a)-(d) and user sources (e).

Each strategy turns a table request from the JVM registry into the bridge's answer:
``{"strategy": name, "config": {...}, "storage-credentials": [{"prefix", "config", "storage-refresh-token"?}]}``.
The table request carries the table's identity, whether it is staged, the stage-create body for
re-staging, a server-given refresh endpoint, and its storage-refresh-tokens (secret; never logged).
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

from cachetools import TTLCache

from ..errors import CatalogAuthError, CatalogError, CatalogNotFoundError, CredentialRefreshError

TableRequest = dict  # the JVM's description of a table, see CredentialRegistry.requestFor
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
    def from_request(req: TableRequest) -> "TableInfo":
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
        config = {"s3.access-key-id": self.access_key_id, "s3.secret-access-key": self.secret_access_key}
        if self.session_token:
            config["s3.session-token"] = self.session_token
        if self.expires_at is not None:
            expires = self.expires_at if self.expires_at.tzinfo else self.expires_at.replace(tzinfo=_dt.timezone.utc)
            config["s3.session-token-expires-at-ms"] = str(int(expires.timestamp() * 1000))
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
                 duration_seconds: int = 3600, sts_client: Any = None, **client_kwargs: Any) -> None:
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


# ---- catalog strategies ------------------------------------------------------------------------

def _answer(strategy: str, response: dict) -> BridgeAnswer:
    """Keeps only what the JVM needs from a LoadTable/LoadCredentials response."""
    creds = response.get("storage-credentials") or []
    config = {k: v for k, v in (response.get("config") or {}).items() if k.startswith("s3.")}
    if not creds and "s3.access-key-id" not in config:
        raise CatalogError(f"the catalog answered the {strategy} request without storage credentials")
    return {"strategy": strategy, "config": config, "storage-credentials": creds}


def _longest_prefix(prefixes: list[str], location: str | None) -> str | None:
    matching = [p for p in prefixes if location and location.startswith(p)]
    return max(matching, key=len) if matching else (prefixes[0] if prefixes else None)


class Strategy:
    """One way to get fresh credentials from the catalog."""

    name = "strategy"

    def applies(self, req: TableRequest) -> bool:
        raise NotImplementedError

    def fetch(self, client: Any, req: TableRequest) -> BridgeAnswer:
        raise NotImplementedError


class RefreshTokenStrategy(Strategy):
    """(a) the proposed storage-refresh-token: GET .../credentials?storageRefreshToken=..."""

    name = "storage-refresh-token"

    def applies(self, req: TableRequest) -> bool:
        return bool(req.get("storage_refresh_tokens"))

    def fetch(self, client: Any, req: TableRequest) -> BridgeAnswer:
        tokens: dict[str, str] = req["storage_refresh_tokens"]
        prefix = _longest_prefix(list(tokens), req.get("location"))
        response = client.load_credentials(
            tuple(req["namespace"]), req["table"], storage_refresh_token=tokens[prefix]
        )
        return _answer(self.name, response)


class RefreshEndpointStrategy(Strategy):
    """(c) a `client.refresh-credentials-endpoint` the server sent in the table config."""

    name = "refresh-endpoint"

    def applies(self, req: TableRequest) -> bool:
        return bool(req.get("refresh_endpoint"))

    def fetch(self, client: Any, req: TableRequest) -> BridgeAnswer:
        return _answer(self.name, client.get_url(req["refresh_endpoint"]))


class RestageStrategy(Strategy):
    """(b) stage-create the same identifier at the same location again: fresh credentials, nothing visible."""

    name = "re-stage"

    def applies(self, req: TableRequest) -> bool:
        return bool(req.get("staged")) and bool(req.get("stage_create_request"))

    def fetch(self, client: Any, req: TableRequest) -> BridgeAnswer:
        body = dict(req["stage_create_request"])
        body["stage-create"] = True
        response = client.create_table(tuple(req["namespace"]), body, stage_create=True)
        location = (response.get("metadata") or {}).get("location")
        if req.get("location") and location and location.rstrip("/") != req["location"].rstrip("/"):
            raise CatalogError(
                f"re-staging moved the table from {req['location']} to {location}; the catalog does not keep staged locations"
            )
        return _answer(self.name, response)


class CredentialsEndpointStrategy(Strategy):
    """(c) GET .../tables/{t}/credentials for a committed table."""

    name = "credentials-endpoint"

    def applies(self, req: TableRequest) -> bool:
        return not req.get("staged")

    def fetch(self, client: Any, req: TableRequest) -> BridgeAnswer:
        return _answer(self.name, client.load_credentials(tuple(req["namespace"]), req["table"]))


class ReloadStrategy(Strategy):
    """(d) load the table again: most catalogs vend new credentials on every load."""

    name = "reload"

    def applies(self, req: TableRequest) -> bool:
        return not req.get("staged")

    def fetch(self, client: Any, req: TableRequest) -> BridgeAnswer:
        return _answer(self.name, client.load_table(tuple(req["namespace"]), req["table"]))


CATALOG_STRATEGIES: tuple[Strategy, ...] = (
    RefreshTokenStrategy(),
    RefreshEndpointStrategy(),
    RestageStrategy(),
    CredentialsEndpointStrategy(),
    ReloadStrategy(),
)


class StrategyChain:
    """Tries the applicable strategies in order; remembers which endpoints a catalog lacks."""

    #: How long a missing endpoint is remembered: a catalog upgraded during a long job gets asked again.
    FORGET_MISSING_AFTER_S = 3600.0

    def __init__(self, strategies: tuple[Strategy, ...] = CATALOG_STRATEGIES,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self._strategies = strategies
        # strategy names that got 404/405 from this catalog (expired entries vanish from `in`)
        self._unsupported: TTLCache[str, bool] = TTLCache(maxsize=max(1, len(strategies)),
                                                          ttl=self.FORGET_MISSING_AFTER_S, timer=timer)

    def plan(self, req: TableRequest) -> list[Strategy]:
        return [s for s in self._strategies if s.applies(req) and s.name not in self._unsupported]

    def fetch(self, client: Any, req: TableRequest) -> BridgeAnswer:
        failures: list[str] = []
        for strategy in self.plan(req):
            try:
                answer = strategy.fetch(client, req)
                if failures:
                    answer["strategy"] = f"{strategy.name} (after {'; '.join(failures)})"
                return answer
            except CatalogNotFoundError as exc:
                if strategy.name == "credentials-endpoint":
                    self._unsupported[strategy.name] = True  # the catalog has no such endpoint
                failures.append(f"{strategy.name} failed: {exc}")
            except (CatalogAuthError, CatalogError) as exc:
                failures.append(f"{strategy.name} failed: {exc}")
        name = ".".join([req.get("catalog", "?"), *req.get("namespace", []), req.get("table", "?")])
        if not failures:
            raise CredentialRefreshError(f"no refresh strategy applies to table {name} (staged={bool(req.get('staged'))})")
        raise CredentialRefreshError(f"cannot refresh storage credentials for table {name}: {'; '.join(failures)}")


def user_answer(source: CredentialSource, req: TableRequest) -> BridgeAnswer:
    """(e) the user's own source, in the bridge's answer shape."""
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
