"""The embedded lakehouse's own OAuth2 clients and tokens, for both of its catalog fronts (the
location guard and the remote signer).

SeaweedFS's OAuth2 client id and secret *are* its S3 admin keys, which its own catalog and S3 ports
accept: a client that held them could skip the front (and its location rule) entirely. So the
fronts are the token endpoint (`POST /v1/oauth/tokens`): clients log in with a client id and a
secret random per lakehouse instance, get opaque tokens of ours, and the fronts talk to SeaweedFS
with the admin keys, which never leave the lakehouse's process. Tokens are kept as SHA-256 tags,
per client and bounded, so a client flooding logins evicts only its own.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus

# The OAuth2 client id of the embedded lakehouse's clients: it reaches the catalog front (and the
# signer), but it is no S3 key. Its secret is random per instance (LakehouseInfo.credential).
from pyspark_catalog_ext.catalog.local_lakehouse import CLIENT_ID

__all__ = ["CLIENT_ID", "ClientTokens", "MAX_TOKENS", "TOKEN_EXCHANGE", "TOKEN_SECONDS"]

MAX_TOKENS = 4096  # live tokens per client
TOKEN_SECONDS = 3600
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


class ClientTokens:
    """Configured OAuth2 clients (id -> secret) and the tokens issued to them."""

    def __init__(self, clients: Mapping[str, str], token_seconds: int = TOKEN_SECONDS) -> None:
        if not clients or any(not cid or not secret for cid, secret in clients.items()):
            raise ValueError("every lakehouse client needs a non-empty id and secret")
        from cachetools import TTLCache

        self.clients = dict(clients)
        self.token_seconds = int(token_seconds)
        self._lock = threading.Lock()
        self._tokens: dict[str, Any] = {cid: TTLCache(maxsize=MAX_TOKENS, ttl=self.token_seconds) for cid in self.clients}

    def issue(self, form: Mapping[str, list[str]], authorization: str | None = None) -> dict[str, Any] | None:
        """An OAuth2 token answer for valid client credentials (in the form, or as HTTP Basic in
        `authorization`: RFC 6749 2.3.1, which DuckDB uses), or for a token exchange of one of our
        tokens (how Iceberg refreshes), else None."""
        first = {k: v[0] for k, v in form.items() if v}
        grant = first.get("grant_type")
        client: str | None = None
        if grant == "client_credentials":
            cid, given = first.get("client_id", ""), first.get("client_secret", "")
            if not cid and authorization:
                cid, given = _basic(authorization)
            expected = self.clients.get(cid)
            # compare anyway on an unknown id: no timing difference between "no such client" and "wrong secret"
            if secrets.compare_digest(given.encode(), (expected or "\0" + given).encode()) and expected is not None:
                client = cid
        elif grant == TOKEN_EXCHANGE:
            client = self.client_of("Bearer " + first.get("subject_token", ""))
        if client is None:
            return None
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[client][_tag(token)] = time.monotonic() + self.token_seconds
        return {"access_token": token, "token_type": "bearer", "expires_in": self.token_seconds,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}

    def grant(self, authorization: str | None) -> tuple[str, float] | None:
        """(client, expiry) of the live token `authorization` (`Bearer <token>`) carries, or None."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        tag = _tag(authorization[7:].strip())
        with self._lock:
            for client, tokens in self._tokens.items():  # a handful of configured clients
                expires = tokens.get(tag)
                if expires is not None:
                    return client, expires
        return None

    def client_of(self, authorization: str | None) -> str | None:
        """The client whose live token `authorization` carries, or None."""
        found = self.grant(authorization)
        return found[0] if found else None


def _basic(authorization: str) -> tuple[str, str]:
    """(client id, secret) of an HTTP Basic header, each form-urlencoded as RFC 6749 2.3.1 says; ("", "") if none."""
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return "", ""
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return "", ""
    cid, sep, secret = decoded.partition(":")
    return (unquote_plus(cid), unquote_plus(secret)) if sep else ("", "")


def _tag(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
