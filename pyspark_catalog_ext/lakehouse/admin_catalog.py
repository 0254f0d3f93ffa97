"""SeaweedFS's Iceberg catalog as the location guard calls it: with the admin keys, canonical targets."""

from __future__ import annotations

import threading
import time
from typing import Any

from pyspark_catalog_ext.lakehouse.canonical import CATALOG_ROUTES, Route, canonical_body
from pyspark_catalog_ext.lakehouse.locations import Ident, StoredTable
from pyspark_catalog_ext.lakehouse.proxy import TOKEN_PATH, UPSTREAM_TIMEOUT

__all__ = ["AdminCatalog", "MAX_LISTED"]

MAX_LISTED = 100_000  # tables of one namespace (or namespaces) listed: beyond that the guard refuses rather than guess


class AdminCatalog:
    """Calls to SeaweedFS's catalog at `catalog_uri` with the admin keys (`warehouse`: its prefix)."""

    def __init__(self, catalog_uri: str, access_key: str, secret_key: str, warehouse: str) -> None:
        self.catalog_uri = catalog_uri.rstrip("/")
        self.warehouse = warehouse
        self._access_key, self._secret_key = access_key, secret_key
        self._token: tuple[str, float] | None = None
        self._lock = threading.Lock()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"<AdminCatalog {self.catalog_uri}>"

    def session(self) -> Any:
        """This thread's requests session to the upstream catalog (a Session is not thread-safe)."""
        import requests

        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def authorization(self) -> str:
        """`Bearer <token>` for SeaweedFS, with the admin keys; renewed after 30 min (tokens last 1 h)."""
        with self._lock:
            cached = self._token
        if cached is not None and time.monotonic() < cached[1]:
            return cached[0]
        resp = self.session().post(self.catalog_uri + TOKEN_PATH, timeout=UPSTREAM_TIMEOUT, data={
            "grant_type": "client_credentials", "client_id": self._access_key, "client_secret": self._secret_key, "scope": "catalog"})
        resp.raise_for_status()
        value = "Bearer " + resp.json()["access_token"]
        with self._lock:
            self._token = (value, time.monotonic() + 1800)
        return value

    def call(self, method: str, route: Route, body: Any = None) -> Any:
        """An admin call to SeaweedFS (canonical target); the JSON answer, None for 404."""
        resp = self.session().request(method, self.catalog_uri + route.target(), timeout=UPSTREAM_TIMEOUT, allow_redirects=False,
                                      headers={"Authorization": self.authorization(), "Content-Type": "application/json"},
                                      data=canonical_body(body) if body is not None else None)
        if resp.status_code == 404:
            return None
        resp.raise_for_status()
        return resp.json() if resp.content else {}

    def route(self, name: str, ident: Ident | None = None, **query: str) -> Route:
        spec = next(s for s in CATALOG_ROUTES if s.name == name)
        bucket, namespace, table = ident or (self.warehouse, (), "")
        return Route(spec.name, spec.method, spec.path, bucket, namespace, table, query=tuple(query.items()))

    def load_stored(self, ident: Ident) -> StoredTable | None:
        """What the catalog stored for `ident` (loaded now), or None if it is not stored."""
        body = self.call("GET", self.route("load-table", ident))
        return StoredTable.from_answer(ident, body) if body else None

    def listed(self, namespace: tuple[str, tuple[str, ...]]) -> list[Ident]:
        """The tables the catalog lists in a namespace (names only)."""
        bucket, levels = namespace
        return [(bucket, tuple(listed.get("namespace") or levels), str(listed.get("name")))
                for listed in self._pages("list-tables", (bucket, levels, ""), "identifiers")]

    def top_namespaces(self) -> set[str]:
        """The first level of each namespace the catalog lists at the top of the warehouse."""
        return {str(levels[0]) for levels in self._pages("list-namespaces", None, "namespaces") if isinstance(levels, list) and levels}

    def _pages(self, name: str, ident: Ident | None, key: str) -> list[Any]:
        """The items under `key` of every page of a list route; OverflowError beyond MAX_LISTED."""
        items: list[Any] = []
        token: str | None = None
        for _ in range(10_000):  # bounded: a server that keeps answering a page token cannot loop us
            query = {"pageToken": token} if token else {}
            body = self.call("GET", self.route(name, ident, **query)) or {}
            items.extend(body.get(key) or [])
            if len(items) > MAX_LISTED:
                raise OverflowError
            token = body.get("next-page-token")
            if not token:
                return items
        raise OverflowError
