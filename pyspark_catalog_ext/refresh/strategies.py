"""The catalog's refresh strategies for PyIceberg tables, tried in order: storage-refresh-token,
refresh endpoint, re-stage (staged tables), `GET .../credentials`, reload.

Each turns a table request into an answer:
``{"strategy": name, "config": {...}, "storage-credentials": [{"prefix", "config", "storage-refresh-token"?}]}``.
The request carries the table's identity, whether it is staged, the stage-create body for
re-staging, a server-given refresh endpoint, and its storage-refresh-tokens (secret; never logged).
Spark's tables use the same strategies in the JVM shim (io.catalogext.shim.refresh.CatalogRefresher).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from cachetools import TTLCache

if TYPE_CHECKING:
    from pyspark_catalog_ext.catalog.rest import CatalogClient

from pyspark_catalog_ext.catalog.locations import longest_prefix
from pyspark_catalog_ext.errors import CatalogAuthError, CatalogError, CatalogNotFoundError, CatalogUnsupportedError, CredentialRefreshError
from pyspark_catalog_ext.refresh.rules import MISSING_ENDPOINT_FORGET_S
from pyspark_catalog_ext.refresh.sources import BridgeAnswer, TableRequest
from pyspark_catalog_ext.refresh.vended import has_credentials, is_vended_key


def _answer(strategy: str, response: dict) -> BridgeAnswer:
    """Keeps only what the JVM needs from a LoadTable/LoadCredentials response."""
    creds = response.get("storage-credentials") or []
    config = {k: v for k, v in (response.get("config") or {}).items() if k.startswith("s3.") or is_vended_key(k)}
    if not creds and not has_credentials(config):
        raise CatalogError(f"the catalog answered the {strategy} request without storage credentials")
    return {"strategy": strategy, "config": config, "storage-credentials": creds}


def _identifier(req: TableRequest) -> tuple[str, ...]:
    return (*req["namespace"], req["table"])


class Strategy:
    """One way to get fresh credentials from the catalog."""

    name = "strategy"

    def applies(self, req: TableRequest) -> bool:
        raise NotImplementedError

    def fetch(self, client: CatalogClient, req: TableRequest) -> BridgeAnswer:
        raise NotImplementedError


class RefreshTokenStrategy(Strategy):
    """the proposed storage-refresh-token: GET .../credentials?storageRefreshToken=..."""

    name = "storage-refresh-token"

    def applies(self, req: TableRequest) -> bool:
        return bool(req.get("storage_refresh_tokens"))

    def fetch(self, client: CatalogClient, req: TableRequest) -> BridgeAnswer:
        tokens: dict[str, str] = req["storage_refresh_tokens"]
        prefix = longest_prefix(tokens, req.get("location"))
        if prefix is None:  # no prefix covers the location: the first token, as the shim's tokenFor
            prefix = next(iter(tokens), None)
        response = client.load_credentials_json(
            _identifier(req), storage_refresh_token=tokens[prefix] if prefix is not None else None
        )
        return _answer(self.name, response)


class RefreshEndpointStrategy(Strategy):
    """a `client.refresh-credentials-endpoint` the server sent in the table config."""

    name = "refresh-endpoint"

    def applies(self, req: TableRequest) -> bool:
        return bool(req.get("refresh_endpoint"))

    def fetch(self, client: CatalogClient, req: TableRequest) -> BridgeAnswer:
        return _answer(self.name, client.get_url(req["refresh_endpoint"]))


class RestageStrategy(Strategy):
    """stage-create the same identifier at the same location again: fresh credentials, nothing visible."""

    name = "re-stage"

    def applies(self, req: TableRequest) -> bool:
        return bool(req.get("staged")) and bool(req.get("stage_create_request"))

    def fetch(self, client: CatalogClient, req: TableRequest) -> BridgeAnswer:
        body = dict(req["stage_create_request"])
        body["stage-create"] = True
        response = client.create_table_json(tuple(req["namespace"]), body, stage_create=True)
        location = (response.get("metadata") or {}).get("location")
        if req.get("location") and location and location.rstrip("/") != req["location"].rstrip("/"):
            raise CatalogError(
                f"re-staging moved the table from {req['location']} to {location}; the catalog does not keep staged locations"
            )
        return _answer(self.name, response)


class CredentialsEndpointStrategy(Strategy):
    """GET .../tables/{t}/credentials for a committed table.

    Tried whether or not /v1/config lists it: a list may leave out a route the server serves
    (Polaris omits this one and answers it). A catalog without the route answers 404/405 once, and
    `StrategyChain` remembers that."""

    name = "credentials-endpoint"

    def applies(self, req: TableRequest) -> bool:
        return not req.get("staged")

    #: As the REST spec's `endpoints` list in /v1/config names it.
    ENDPOINT = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"

    def fetch(self, client: CatalogClient, req: TableRequest) -> BridgeAnswer:
        return _answer(self.name, client.load_credentials_json(_identifier(req)))


class ReloadStrategy(Strategy):
    """load the table again: most catalogs vend new credentials on every load."""

    name = "reload"

    def applies(self, req: TableRequest) -> bool:
        return not req.get("staged")

    def fetch(self, client: CatalogClient, req: TableRequest) -> BridgeAnswer:
        return _answer(self.name, client.load_table_json(_identifier(req)))


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
    FORGET_MISSING_AFTER_S = MISSING_ENDPOINT_FORGET_S  # the shared spec's: the shim forgets after the same time

    def __init__(self, strategies: tuple[Strategy, ...] = CATALOG_STRATEGIES,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self._strategies = strategies
        # strategy names that got 404/405/"no route" from this catalog or that it does not advertise
        # (expired entries vanish from `in`)
        self._unsupported: TTLCache[str, bool] = TTLCache(maxsize=max(1, len(strategies)),
                                                          ttl=self.FORGET_MISSING_AFTER_S, timer=timer)

    def mark_missing(self, name: str) -> None:
        """The catalog lacks strategy `name`'s endpoint: not tried again for `FORGET_MISSING_AFTER_S`."""
        self._unsupported[name] = True

    def plan(self, req: TableRequest) -> list[Strategy]:
        return [s for s in self._strategies if s.applies(req) and s.name not in self._unsupported]

    def fetch(self, client: CatalogClient, req: TableRequest) -> BridgeAnswer:
        failures: list[str] = []
        for strategy in self.plan(req):
            try:
                answer = strategy.fetch(client, req)
                if failures:
                    answer["strategy"] = f"{strategy.name} (after {'; '.join(failures)})"
                return answer
            except (CatalogNotFoundError, CatalogUnsupportedError) as exc:
                if strategy.name == "credentials-endpoint":
                    self.mark_missing(strategy.name)  # the catalog has no such endpoint
                failures.append(f"{strategy.name} failed: {exc}")
            except (CatalogAuthError, CatalogError) as exc:
                failures.append(f"{strategy.name} failed: {exc}")
        name = ".".join([req.get("catalog", "?"), *req.get("namespace", []), req.get("table", "?")])
        if not failures:
            raise CredentialRefreshError(f"no refresh strategy applies to table {name} (staged={bool(req.get('staged'))})")
        raise CredentialRefreshError(f"cannot refresh storage credentials for table {name}: {'; '.join(failures)}")
