"""The loopback HTTP proxy that puts the location guard (guard.py) in front of SeaweedFS's Iceberg
catalog for vended credentials: its clients' token endpoint, and the one caller of SeaweedFS."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from pyspark_catalog_ext.lakehouse.canonical import Refusal, parse_target
from pyspark_catalog_ext.lakehouse.guard import Answer, LocationGuard, refused
from pyspark_catalog_ext.lakehouse.proxy import (
    HOP_BY_HOP,
    MAX_CATALOG_BODY,
    MAX_TOKEN_BODY,
    UPSTREAM_TIMEOUT,
    ProxyHandler,
    ProxyServer,
)
from pyspark_catalog_ext.lakehouse.tokens import CLIENT_ID, TOKEN_SECONDS, ClientTokens

__all__ = ["CatalogGuardProxy", "forwarded_headers", "FORWARDED_HEADERS"]

log = logging.getLogger("pyspark_catalog_ext.lakehouse.guard")

# Headers forwarded to SeaweedFS (an allow-list: anything else a client sends stays here).
FORWARDED_HEADERS = ("authorization", "content-type", "accept", "x-iceberg-access-delegation", "user-agent",
                     "x-client-version", "x-client-git-commit-short", "idempotency-key", "if-none-match")


def forwarded_headers(headers: Any, drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The client's headers SeaweedFS gets: FORWARDED_HEADERS minus `drop`."""
    return {k: v for k, v in headers.items() if k.lower() in FORWARDED_HEADERS and k.lower() not in drop}


class CatalogGuardProxy(ProxyServer):
    """A loopback HTTP proxy in front of SeaweedFS's Iceberg catalog that forwards each recognised
    call re-encoded (the client's delegation header included) after `LocationGuard` let it through.
    It is its clients' OAuth2 token endpoint (tokens.py: `clients`, default `CLIENT_ID` with a random
    secret) and calls SeaweedFS with the admin keys: a client never holds a credential SeaweedFS's
    own ports accept, so none can go around the location rule."""

    thread_name = "catalog-guard"

    def __init__(self, guard: LocationGuard, port: int = 0, host: str = "127.0.0.1",
                 clients: Mapping[str, str] | None = None, token_seconds: int = TOKEN_SECONDS) -> None:
        super().__init__(port, host)
        self.guard = guard
        self.catalog_uri = guard.catalog_uri
        self.tokens = ClientTokens(dict(clients) if clients else {CLIENT_ID: secrets.token_urlsafe(32)}, token_seconds)
        self.clients = self.tokens.clients

    def __repr__(self) -> str:
        return f"<CatalogGuardProxy {self.url if self._httpd else 'stopped'} -> {self.catalog_uri}>"


class _GuardHandler(ProxyHandler):
    proxy: CatalogGuardProxy

    def _dispatch(self) -> None:
        guard = self.proxy.guard
        route = parse_target(self.command, self.raw_target(), guard.warehouse)
        if isinstance(route, Refusal):
            self.close_connection = not self._drained()
            return self._reply(*refused(route))
        try:
            raw = self._body(MAX_TOKEN_BODY if route.name == "token" else MAX_CATALOG_BODY)
        except ValueError as exc:
            self.close_connection = True
            status, reason = exc.args
            return self._error(status, "BadRequestException", reason)
        if route.name == "token":  # our clients' logins: never forwarded (SeaweedFS's would be its admin keys)
            issued = self.proxy.tokens.issue(parse_qs(raw.decode("utf-8", "replace")), self.headers.get("Authorization"))
            if issued is None:
                return self._json(401, {"error": "invalid_client", "error_description": "unknown client id/secret or token"})
            return self._json(200, issued, {"Cache-Control": "no-store"})
        if route.name != "config" and self.proxy.tokens.grant(self.headers.get("Authorization")) is None:
            return self._error(401, "NotAuthorizedException", "a bearer token from this catalog's /v1/oauth/tokens is required")
        try:
            answer = guard.handle(route, raw, self._send)
        except Exception as exc:  # noqa: BLE001 - an answer rather than a dropped connection (a commit's outcome is then unknown)
            log.warning("the catalog proxy failed on %s: %s", route.name, type(exc).__name__)
            self.close_connection = True
            answer = 500, Refusal(500, "ServiceFailureException", f"the catalog proxy failed on {route.name}: {type(exc).__name__}").body(), {
                "Content-Type": "application/json"}
        self._reply(*answer)

    def _send(self, target: str, payload: bytes | None) -> Answer:
        import requests

        headers = forwarded_headers(self.headers, drop=("authorization",))
        headers["Authorization"] = self.proxy.guard.authorization()  # the admin keys' token, never the client's
        headers["Accept-Encoding"] = "identity"
        try:
            resp = self.proxy.guard.session().request(
                self.command, self.proxy.catalog_uri + target, headers=headers, data=payload,
                timeout=UPSTREAM_TIMEOUT, allow_redirects=False)
        except requests.RequestException as exc:
            return 502, Refusal(502, "ServiceUnavailableException", f"catalog unreachable: {type(exc).__name__}").body(), {"Content-Type": "application/json"}
        return resp.status_code, resp.content, _answer_headers(resp.headers)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _dispatch


def _answer_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}


CatalogGuardProxy.handler = _GuardHandler
