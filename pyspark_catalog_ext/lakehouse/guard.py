"""The embedded lakehouse's table-location rule, enforced in front of SeaweedFS's Iceberg catalog.

SeaweedFS accepts any table location, and both its vended credentials and our remote signer are
scoped to a table's location: a table created (or moved with `set-location`) at another table's
location, or at a namespace root, would get access to that data. So, as Apache Polaris does
(no unstructured locations, no overlap), a table's location must:

* lie strictly under its namespace's location: SeaweedFS's layout, `s3://<table bucket>/<namespace
  levels joined by .>` (what it answers itself for a namespace and a default table location);
* overlap no other table's location (neither equal, inside, nor containing it), stored tables of the
  namespaces whose location overlaps this one and tables staged through this guard (not stored
  until their commit) alike.

It is checked on create, stage-create, register, and commits (single-table and multi-table)
carrying `set-location`; a refusal is one Iceberg ErrorModel line (403 for a conflict, 400 for a
location that is no plain S3 URL). Re-staging a name with the location it was staged at, or
creating over its own name, is the same table, hence allowed.

`LocationGuard` is the rule plus what it needs from the catalog (it logs in with the admin keys).
`CatalogGuardProxy` is the loopback HTTP proxy that puts it in front of SeaweedFS for vended
credentials; the remote signer (signer.py) applies the same guard in its own forwarding.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from pyspark_catalog_ext.lakehouse.proxy import (
    HOP_BY_HOP,
    MAX_CATALOG_BODY,
    MAX_TOKEN_BODY,
    TOKEN_PATH,
    UPSTREAM_TIMEOUT,
    ProxyHandler,
    ProxyServer,
)

__all__ = ["LocationGuard", "CatalogGuardProxy", "Refusal", "TABLE_ROUTE", "TABLES_ROUTE"]

MAX_STAGED = 10_000  # staged tables remembered (they are not stored until committed)
STAGED_SECONDS = 24 * 3600  # a staged table older than this is forgotten (a CTAS that never commits)
MAX_LISTED = 100_000  # tables looked at for one check: beyond that the guard refuses rather than guess
# Stored locations of listed tables are reused this long (each check still lists the tables, so a
# new table is always seen; a location changed through this guard is forgotten at once; one changed
# behind its back, with the admin keys on SeaweedFS's own port, is seen after this long at most).
KNOWN_SECONDS = 30
_SCHEMES = ("s3", "s3a", "s3n")
TABLES_ROUTE = re.compile(r"^/v1/(?:(?P<prefix>[^/]+)/)?namespaces/(?P<ns>[^/]+)/(?P<what>tables|register)$")
TABLE_ROUTE = re.compile(r"^/v1/(?:(?P<prefix>[^/]+)/)?namespaces/(?P<ns>[^/]+)/tables/(?P<table>[^/]+)$")
_TRANSACTION = re.compile(r"^/v1/(?:(?P<prefix>[^/]+)/)?transactions/commit$")
# POSTs that set no location: rename keeps it; metrics reports and scan planning read
_NO_LOCATION = re.compile(r"^/v1/(?:[^/]+/)?(tables/rename|namespaces/[^/]+/tables/[^/]+/(metrics|plan(/[^/]+)?|tasks))$")

Ident = tuple[str, tuple[str, ...], str]  # (table bucket, namespace levels, table name)
Send = Callable[[], tuple[int, bytes, Mapping[str, str]]]


@dataclass(frozen=True)
class Refusal:
    """Why the guard refused a catalog call: HTTP status, Iceberg error type, one-line message."""

    status: int
    kind: str
    message: str

    def body(self) -> bytes:
        return json.dumps({"error": {"message": self.message, "type": self.kind, "code": self.status}}).encode()


def _location(value: Any) -> str | None:
    """`value` as `bucket/key-prefix` (no scheme, no trailing /), or None if it is no plain S3 URL."""
    if not isinstance(value, str) or any(ord(c) < 32 or ord(c) == 127 for c in value) or "\\" in value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in _SCHEMES or not parts.netloc or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    segments = parts.path.strip("/").split("/") if parts.path.strip("/") else []
    # "a//b", "." and ".." (also percent-encoded) would be another key on a server that normalizes
    if any(seg in ("", ".", "..") or unquote(seg) in (".", "..") for seg in segments):
        return None
    return "/".join([parts.netloc, *segments])


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def namespace_location(bucket: str, namespace: tuple[str, ...]) -> str:
    """SeaweedFS's location of a namespace (`bucket/levels.joined.by.dots`), without scheme."""
    return f"{bucket}/{'.'.join(namespace)}"


class LocationGuard:
    """The location rule (module docstring) over SeaweedFS's catalog at `catalog_uri`."""

    def __init__(self, catalog_uri: str, s3_endpoint: str, access_key: str, secret_key: str) -> None:
        from cachetools import TTLCache

        self.catalog_uri = catalog_uri.rstrip("/")
        self.s3_endpoint = s3_endpoint.rstrip("/")  # to read a registered table's metadata file
        self._access_key, self._secret_key = access_key, secret_key
        self._staged: TTLCache = TTLCache(maxsize=MAX_STAGED, ttl=STAGED_SECONDS)  # Ident -> location
        self._known: TTLCache = TTLCache(maxsize=MAX_LISTED, ttl=KNOWN_SECONDS)  # Ident -> stored location
        self._token: tuple[str, float] | None = None
        # One location-changing call at a time: check, forward and record must not interleave, or
        # two creates could each pass the check before either exists.
        self._mutating = threading.Lock()
        self._lock = threading.Lock()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"<LocationGuard -> {self.catalog_uri}>"

    # -- upstream ---------------------------------------------------------------------------------
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

    def _get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        resp = self.session().get(self.catalog_uri + path, params=params, timeout=UPSTREAM_TIMEOUT,
                                   headers={"Authorization": self.authorization()}, allow_redirects=False)
        if resp.status_code == 404:
            return None
        resp.raise_for_status()
        return resp.json()

    def stored_location(self, ident: Ident) -> str | None:
        """The location in the catalog's stored metadata of `ident`, or None if it is not stored."""
        bucket, namespace, name = ident
        body = self._get(f"/v1/{quote(bucket, safe='')}/namespaces/{_ns_path(namespace)}/tables/{quote(name, safe='')}")
        return _location(((body or {}).get("metadata") or {}).get("location"))

    def staged_location(self, ident: Ident) -> str | None:
        """Where `ident` was staged through this guard (not stored yet), or None."""
        with self._lock:
            return self._staged.get(ident)

    def _pages(self, path: str, key: str, params: Mapping[str, str]) -> Iterator[Any]:
        token: str | None = None
        for _ in range(10_000):  # bounded: a server that keeps answering a page token cannot loop us
            body = self._get(path, {**params, **({"pageToken": token} if token else {})}) or {}
            yield from body.get(key) or []
            token = body.get("next-page-token")
            if not token:
                return

    def _namespaces(self, bucket: str) -> list[tuple[str, ...]]:
        found: list[tuple[str, ...]] = []
        todo: list[tuple[str, ...]] = [()]
        while todo and len(found) < MAX_LISTED:
            parent = todo.pop()
            params = {"parent": "\x1f".join(parent)} if parent else {}
            for ns in self._pages(f"/v1/{quote(bucket, safe='')}/namespaces", "namespaces", params):
                ns = tuple(ns)
                if ns and ns not in found and ns[:len(parent)] == parent and len(ns) > len(parent):
                    found.append(ns)
                    todo.append(ns)
        return found

    def _tables(self, bucket: str, near: str) -> Iterator[tuple[Ident, str]]:
        """(identifier, location) of stored tables in the namespaces whose location overlaps `near`."""
        count = 0
        for ns in self._namespaces(bucket):
            if not _overlap(namespace_location(bucket, ns), near):
                continue
            for ident in self._pages(f"/v1/{quote(bucket, safe='')}/namespaces/{_ns_path(ns)}/tables", "identifiers", {}):
                count += 1
                if count > MAX_LISTED:
                    raise OverflowError
                key: Ident = (bucket, tuple(ident.get("namespace") or ns), str(ident.get("name")))
                with self._lock:
                    location = self._known.get(key)
                if location is None:
                    location = self.stored_location(key)
                    with self._lock:
                        self._known[key] = location
                if location:
                    yield key, location

    # -- the rule ---------------------------------------------------------------------------------
    def check_location(self, ident: Ident, location: str | None, what: str) -> Refusal | None:
        """None if table `ident` may live at `location` (an s3:// URL, or None for SeaweedFS's
        default `<namespace location>/<name>`), else the refusal."""
        bucket, namespace, name = ident
        ns_loc = namespace_location(bucket, namespace)
        target = _location(location) if location is not None else f"{ns_loc}/{name}"
        shown = f"s3://{target}" if target else repr(str(location)[:200])
        if target is None:
            return Refusal(400, "BadRequestException", f"{what}: location {shown} is not a plain s3://bucket/path URL "
                                                       "(no '.', '..' or empty segments, query or fragment)")
        if not target.startswith(ns_loc + "/"):
            return Refusal(403, "ForbiddenException", f"{what}: location {shown} is not under its namespace's location "
                                                      f"s3://{ns_loc}/; omit the location or choose one below it")
        table = ".".join([*namespace, name])
        try:
            for other, other_loc in self._tables(bucket, ns_loc):
                if other != ident and _overlap(target, other_loc):
                    return Refusal(403, "ForbiddenException", f"{what}: location {shown} overlaps table "
                                                              f"{'.'.join([*other[1], other[2]])} at s3://{other_loc}; "
                                                              f"choose a location of its own for {table}")
        except OverflowError:
            return Refusal(403, "ForbiddenException", f"{what}: over {MAX_LISTED} tables to compare; the location rule cannot be checked")
        with self._lock:
            staged = list(self._staged.items())
        for other, other_loc in staged:
            if other != ident and _overlap(target, other_loc):
                return Refusal(403, "ForbiddenException", f"{what}: location {shown} overlaps staged table "
                                                          f"{'.'.join([*other[1], other[2]])} at s3://{other_loc}")
        return None

    def forward_checked(self, method: str, path: str, body: bytes, send: Send) -> tuple[int, bytes, Mapping[str, str]]:
        """Check a catalog call against the location rule, then `send` it upstream (unless refused);
        the answer (status, body, headers). A call that changes no location is sent as it is."""
        if method != "POST":
            return send()
        if "//" in path or any(seg in (".", "..") for seg in unquote(path).split("/")):
            return _refused(Refusal(400, "BadRequestException", "the request path has empty, . or .. segments"))
        changes = self._changes(path, body)
        if isinstance(changes, Refusal):
            return _refused(changes)
        if not changes:
            return send()
        with self._mutating:
            for ident, location, what, _ in changes:
                try:
                    refusal = self.check_location(ident, location, what)
                except Exception as exc:  # noqa: BLE001 - cannot check: refuse rather than let it through
                    refusal = Refusal(503, "ServiceUnavailableException", f"{what}: the location rule could not be checked ({type(exc).__name__}); retry")
                if refusal is not None:
                    return _refused(refusal)
            status, content, headers = send()
            if 200 <= status < 300:
                self._record(changes)
            return status, content, headers

    def _record(self, changes: list[tuple[Ident, str | None, str, str]]) -> None:
        with self._lock:
            for ident, location, _, kind in changes:
                bucket, namespace, name = ident
                self._known.pop(ident, None)
                if kind == "stage":
                    self._staged[ident] = _location(location) if location else f"{namespace_location(bucket, namespace)}/{name}"
                elif kind == "stored":
                    self._staged.pop(ident, None)

    def _changes(self, path: str, raw: bytes) -> list[tuple[Ident, str | None, str, str]] | Refusal:
        """The (table, location or None for the default, what, kind) a POST sets; kind is `stage`
        for a stage-create, `stored` for a call after which the table is stored."""
        route = urlsplit(path).path
        m_tables, m_table, m_tx = TABLES_ROUTE.match(route), TABLE_ROUTE.match(route), _TRANSACTION.match(route)
        if not (m_tables or m_table or m_tx):
            if _NO_LOCATION.match(route):
                return []
            if re.search(r"/(tables|register|transactions)(/|$)", route):  # a variant we cannot read: refuse
                return Refusal(400, "BadRequestException", f"unexpected catalog path {route[:200]!r}")
            return []
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            return Refusal(400, "BadRequestException", "the request body must be a JSON object")
        m = m_tables or m_table or m_tx
        assert m is not None
        bucket = unquote(m.group("prefix") or "")
        if not bucket:
            return Refusal(400, "BadRequestException", "use the catalog prefix from /v1/config (/v1/<warehouse>/...)")
        if m_tables:
            ns = tuple(unquote(m_tables.group("ns")).split("\x1f"))
            name = body.get("name")
            if not isinstance(name, str) or not name:
                return Refusal(400, "BadRequestException", "the request needs a table name")
            if m_tables.group("what") == "register":
                return [((bucket, ns, name), self._registered_location(body.get("metadata-location")), "register", "stored")]
            staged = body.get("stage-create") is True
            location = body.get("location")
            return [((bucket, ns, name), location if location is not None else None,
                     "stage-create" if staged else "create", "stage" if staged else "stored")]
        if m_table:
            ident = (bucket, tuple(unquote(m_table.group("ns")).split("\x1f")), unquote(m_table.group("table")))
            return self._commit_changes(ident, body)
        out: list[tuple[Ident, str | None, str, str]] = []
        for change in body.get("table-changes") or []:
            ident_body = change.get("identifier") if isinstance(change, dict) else None
            if not isinstance(ident_body, dict):
                return Refusal(400, "BadRequestException", "every table change needs an identifier")
            changes = self._commit_changes((bucket, tuple(ident_body.get("namespace") or ()), str(ident_body.get("name"))), change)
            if isinstance(changes, Refusal):
                return changes
            out += changes
        return out

    def _commit_changes(self, ident: Ident, body: Mapping[str, Any]) -> list[tuple[Ident, str | None, str, str]] | Refusal:
        updates, requirements = body.get("updates") or [], body.get("requirements") or []
        if not isinstance(updates, list) or not isinstance(requirements, list):
            return Refusal(400, "BadRequestException", "updates and requirements must be lists")
        creates = any(isinstance(r, dict) and r.get("type") == "assert-create" for r in requirements)
        out: list[tuple[Ident, str | None, str, str]] = []
        for update in updates:
            if isinstance(update, dict) and update.get("action") == "set-location":
                location = update.get("location")
                if not isinstance(location, str):
                    return Refusal(400, "BadRequestException", "set-location needs a location")
                out.append((ident, location, "commit with set-location", "stored" if creates else "moved"))
        return out

    def _registered_location(self, metadata_location: Any) -> str:
        """The location inside the metadata file a register call points at (read with the admin keys)."""
        import boto3
        from botocore.config import Config

        loc = _location(metadata_location)
        if loc is None or "/" not in loc:
            return str(metadata_location)[:200]  # refused as a bad location by check_location
        bucket, key = loc.split("/", 1)
        s3 = boto3.client("s3", endpoint_url=self.s3_endpoint, region_name="us-east-1", aws_access_key_id=self._access_key,
                          aws_secret_access_key=self._secret_key, config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))
        try:
            obj = s3.get_object(Bucket=bucket, Key=key)
            if int(obj.get("ContentLength") or 0) > MAX_CATALOG_BODY:
                return "metadata file too large"
            location = json.loads(obj["Body"].read()).get("location")
        except Exception:  # noqa: BLE001 - unreadable metadata: refused as no location
            return f"unreadable metadata {metadata_location}"[:200]
        table_loc = _location(location)
        if table_loc is None or not loc.startswith(table_loc + "/"):
            return f"metadata {metadata_location} outside its table location {location}"[:200]
        return str(location)


def _ns_path(namespace: tuple[str, ...]) -> str:
    return quote("\x1f".join(namespace), safe="")


def _refused(refusal: Refusal) -> tuple[int, bytes, Mapping[str, str]]:
    return refusal.status, refusal.body(), {"Content-Type": "application/json"}


class CatalogGuardProxy(ProxyServer):
    """A loopback HTTP proxy in front of SeaweedFS's Iceberg catalog that forwards every call as it
    is (the client's own OAuth2 token and delegation header included) after `LocationGuard` let it
    through."""

    thread_name = "catalog-guard"

    def __init__(self, guard: LocationGuard, port: int = 0, host: str = "127.0.0.1") -> None:
        super().__init__(port, host)
        self.guard = guard
        self.catalog_uri = guard.catalog_uri

    def __repr__(self) -> str:
        return f"<CatalogGuardProxy {self.url if self._httpd else 'stopped'} -> {self.catalog_uri}>"


class _GuardHandler(ProxyHandler):
    proxy: CatalogGuardProxy

    def _dispatch(self) -> None:
        if self._refuse_unless_origin_form():
            return
        path = urlsplit(self.path).path.rstrip("/")
        try:
            raw = self._body(MAX_TOKEN_BODY if path == TOKEN_PATH else MAX_CATALOG_BODY)
        except ValueError as exc:
            self.close_connection = True
            status, reason = exc.args
            return self._error(status, "BadRequestException", reason)
        guard = self.proxy.guard
        status, content, headers = guard.forward_checked(self.command, self.path, raw, lambda: self._send(raw))
        self._reply(status, content, headers)

    def _send(self, raw: bytes) -> tuple[int, bytes, Mapping[str, str]]:
        import requests

        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Accept-Encoding"] = "identity"
        try:
            resp = self.proxy.guard.session().request(
                self.command, self.proxy.catalog_uri + self.path, headers=headers, data=raw or None,
                timeout=UPSTREAM_TIMEOUT, allow_redirects=False)
        except requests.RequestException as exc:
            return 502, Refusal(502, "ServiceUnavailableException", f"catalog unreachable: {type(exc).__name__}").body(), {"Content-Type": "application/json"}
        return resp.status_code, resp.content, {k: v for k, v in resp.headers.items() if k.lower() not in HOP_BY_HOP}

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _dispatch


CatalogGuardProxy.handler = _GuardHandler
