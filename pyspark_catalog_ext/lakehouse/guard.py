"""The embedded lakehouse's table-location rule, enforced in front of SeaweedFS's Iceberg catalog.

SeaweedFS accepts any table location, and both its vended credentials and our remote signer are
scoped to a table's location: a table created (or moved with `set-location`) at another table's
location, or at a namespace root, would get access to that data; and SeaweedFS's DROP TABLE purges
the directory of a table's metadata file, so such a table's drop would delete another's files.
So, as Apache Polaris does (no unstructured locations, no overlap), a table's location must:

* lie strictly under its namespace's location: SeaweedFS's layout, `s3://<table bucket>/<namespace
  levels joined by .>` (namespace levels cannot contain `.`, so no two namespaces' directories
  overlap, and a table's neighbours are all in its own namespace);
* overlap no other table's location, metadata directory or catalog entry (`<namespace>/<name>`,
  where SeaweedFS keeps the entry), nor a table staged through this guard, nor another change of
  the same request (a multi-table transaction).

Every request is first read once (canonical.py: an allow-list of routes, strict JSON); what is
forwarded is re-encoded from that reading. Then, per route:

* create and stage-create: the location is decided here (the client's, or `<namespace>/<name>`)
  and sent to SeaweedFS explicitly, so nothing SeaweedFS would derive itself (a `warehouse`
  property, its environment) moves it;
* register: the location inside the registered metadata file (read with the admin keys);
* commits (single-table and transactions) with `set-location` or `assert-create`;
* rename: only within a namespace (a table keeps its location when renamed), and the new name's
  entry must not overlap another table;
* drop: refused when the directory SeaweedFS would purge overlaps another table.

After a create, register or location change, what SeaweedFS actually stored is loaded and checked
again. If it breaks the rule the change is rolled back and refused: a moved table is moved back;
a new entry is removed through the filer (filer.py), never with SeaweedFS's DROP (which would
purge another table's files) and only when no file lies under the entry. What cannot be rolled
back is quarantined: this guard refuses every call naming it. A refusal is one Iceberg ErrorModel
line (403 for a conflict, 400 for a malformed request or location).

Checks run one namespace at a time (a lock per namespace, striped): check, forward, record and
verify do not interleave with another change in the same namespace, and a create never lists
other namespaces. `LocationGuard` is the rule plus what it needs from the catalog (it logs in with
the admin keys); `CatalogGuardProxy` is the loopback HTTP proxy that puts it in front of SeaweedFS
for vended credentials; the remote signer (signer.py) applies the same guard in its forwarding.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pyspark_catalog_ext.lakehouse.canonical import (
    CATALOG_ROUTES,
    TABLE_NAME,
    Refusal,
    Route,
    bad_request,
    canonical_body,
    identifier_of,
    namespace_of,
    parse_json,
    parse_target,
    struct_keys_refusal,
)
from pyspark_catalog_ext.lakehouse.filer import FilerAccess
from pyspark_catalog_ext.lakehouse.proxy import (
    MAX_CATALOG_BODY,
    MAX_TOKEN_BODY,
    TOKEN_PATH,
    UPSTREAM_TIMEOUT,
    ProxyHandler,
    ProxyServer,
)
from pyspark_catalog_ext.lakehouse.tokens import CLIENT_ID, TOKEN_SECONDS, ClientTokens
from pyspark_catalog_ext.lakehouse.views import VIEW_ROUTES, answer_view

__all__ = ["LocationGuard", "CatalogGuardProxy", "Refusal", "StoredTable", "Answer", "namespace_location"]

log = logging.getLogger("pyspark_catalog_ext.lakehouse.guard")

WAREHOUSE = "warehouse"
MAX_STAGED = 10_000  # staged tables remembered (they are not stored until committed)
STAGED_SECONDS = 24 * 3600  # a staged table older than this is forgotten (a CTAS that never commits)
MAX_LISTED = 100_000  # tables looked at for one check: beyond that the guard refuses rather than guess
MAX_QUARANTINED = 10_000
# Stored tables already loaded are reused this long (each check still lists its namespace, so a new
# table is always seen; a table changed through this guard is forgotten at once; one changed behind
# its back, with the admin keys on SeaweedFS's own port, is seen after this long at most).
KNOWN_SECONDS = 30
LOCK_STRIPES = 256  # one lock per namespace, striped: bounded memory, two namespaces rarely share one
_SCHEMES = ("s3", "s3a", "s3n")
# Headers forwarded to SeaweedFS (an allow-list: anything else a client sends stays here).
FORWARDED_HEADERS = ("authorization", "content-type", "accept", "x-iceberg-access-delegation", "user-agent",
                     "x-client-version", "x-client-git-commit-short", "idempotency-key", "if-none-match")
# Keys of the request bodies the guard reads (anything else is refused: Go would read a field the
# guard did not see).
_CREATE_KEYS = ("name", "location", "schema", "partition-spec", "write-order", "stage-create", "properties")
_REGISTER_KEYS = ("name", "metadata-location", "overwrite")
_COMMIT_KEYS = ("identifier", "requirements", "updates")
_NAMESPACE_KEYS = ("namespace", "properties")
_PROPERTIES_KEYS = ("removals", "updates")

Ident = tuple[str, tuple[str, ...], str]  # (table bucket, namespace levels, table name)
Answer = tuple[int, bytes, Mapping[str, str]]
Send = Callable[[str, bytes | None], Answer]  # (canonical target, canonical body) -> upstream answer


def _shown(ident: Ident) -> str:
    return ".".join([*ident[1], ident[2]])


def _refused(refusal: Refusal) -> Answer:
    return refusal.status, refusal.body(), {"Content-Type": "application/json"}


def _location(value: Any, strict: bool = False) -> str | None:
    """`value` as `bucket/key-prefix` (no scheme, no trailing /), or None if it is no plain S3 URL.
    `strict` (a location a request asks for): every segment of letters, digits and `_.=+-`, none
    starting with `.` (SeaweedFS keeps its own state in dot directories)."""
    if not isinstance(value, str) or any(ord(c) < 32 or ord(c) == 127 for c in value) or "\\" in value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in _SCHEMES or not parts.netloc or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    if value.endswith("#") or value.endswith("?"):
        return None
    segments = parts.path.strip("/").split("/") if parts.path.strip("/") else []
    # "a//b", "." and ".." (also percent-encoded) would be another key on a server that normalizes
    if any(seg in ("", ".", "..") or unquote(seg) in (".", "..") for seg in segments):
        return None
    if strict and not all(_plain_segment(seg) for seg in [parts.netloc, *segments]):
        return None
    return "/".join([parts.netloc, *segments])


def _plain_segment(seg: str) -> bool:
    return bool(seg) and not seg.startswith(".") and all(c.isascii() and (c.isalnum() or c in "_.=+-") for c in seg)


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def namespace_location(bucket: str, namespace: tuple[str, ...]) -> str:
    """SeaweedFS's location of a namespace (`bucket/levels.joined.by.dots`), without scheme."""
    return f"{bucket}/{'.'.join(namespace)}"


def entry_path(ident: Ident) -> str:
    """Where SeaweedFS keeps the catalog entry of `ident` (`bucket/ns/name`, also its default location)."""
    return f"{namespace_location(ident[0], ident[1])}/{ident[2]}"


def _purged_dir(metadata_location: str | None) -> str | None:
    """The directory SeaweedFS's DROP TABLE purges: the one holding `metadata/<file>`."""
    if not metadata_location:
        return None
    head, _, _ = metadata_location.rpartition("/")
    parent, _, last = head.rpartition("/")
    return parent if last == "metadata" and parent else head or None


@dataclass(frozen=True)
class StoredTable:
    """What SeaweedFS stored for a table: its location and metadata file (`bucket/key`, None when
    not a plain S3 URL) and uuid."""

    ident: Ident
    location: str | None
    metadata_location: str | None
    uuid: str

    @classmethod
    def from_answer(cls, ident: Ident, body: Mapping[str, Any]) -> StoredTable:
        metadata: Mapping[str, Any] = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
        return cls(ident, _location(metadata.get("location")), _location(body.get("metadata-location")),
                   str(metadata.get("table-uuid") or ""))

    @property
    def occupied(self) -> tuple[str, ...]:
        """Every path this table holds: location, purged directory and catalog entry."""
        paths = {entry_path(self.ident)}
        if self.location:
            paths.add(self.location)
        purged = _purged_dir(self.metadata_location)
        if purged:
            paths.add(purged)
        return tuple(sorted(paths))


@dataclass(frozen=True)
class Change:
    """A location a request gives table `ident`: `kind` is `stage` (stage-create), `create` (a new
    catalog entry: create, register, a staged table's commit) or `move` (set-location)."""

    ident: Ident
    location: str  # bucket/key-prefix
    what: str
    kind: str
    metadata_dir: str | None = None  # register: where its metadata file lies


@dataclass(frozen=True)
class Rename:
    source: Ident
    destination: Ident


@dataclass
class Plan:
    """What one request does, as the guard read it, and the body to forward (None: none)."""

    changes: list[Change]
    renames: list[Rename]
    body: bytes | None
    drop: Ident | None = None


class LocationGuard:
    """The location rule (module docstring) over SeaweedFS's catalog at `catalog_uri`. `filer`:
    the lakehouse's filer access, used only to roll back a new catalog entry (without it such an
    entry is quarantined instead)."""

    def __init__(self, catalog_uri: str, s3_endpoint: str, access_key: str, secret_key: str, *,
                 warehouse: str = WAREHOUSE, filer: FilerAccess | None = None) -> None:
        from cachetools import TTLCache

        self.catalog_uri = catalog_uri.rstrip("/")
        self.s3_endpoint = s3_endpoint.rstrip("/")  # to read a registered table's metadata file
        self.warehouse = warehouse
        self._access_key, self._secret_key = access_key, secret_key
        self._filer = filer
        self._staged: TTLCache = TTLCache(maxsize=MAX_STAGED, ttl=STAGED_SECONDS)  # Ident -> StoredTable (as staged)
        self._known: TTLCache = TTLCache(maxsize=MAX_LISTED, ttl=KNOWN_SECONDS)  # Ident -> StoredTable
        self._quarantined: TTLCache = TTLCache(maxsize=MAX_QUARANTINED, ttl=10 * 365 * 24 * 3600)  # Ident -> why
        self._token: tuple[str, float] | None = None
        self._stripes = [threading.Lock() for _ in range(LOCK_STRIPES)]
        self._lock = threading.Lock()
        self._local = threading.local()
        self._listeners: list[Callable[[Ident], None]] = []

    def __repr__(self) -> str:
        return f"<LocationGuard -> {self.catalog_uri}>"

    def on_table_change(self, listener: Callable[[Ident], None]) -> None:
        """Call `listener(ident)` after a table is dropped, renamed away, moved or rolled back."""
        self._listeners.append(listener)

    def _changed(self, ident: Ident) -> None:
        with self._lock:
            self._known.pop(ident, None)
        for listener in self._listeners:
            listener(ident)

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

    def _call(self, method: str, route: Route, body: Any = None) -> Any:
        """An admin call to SeaweedFS (canonical target); the JSON answer, None for 404."""
        resp = self.session().request(method, self.catalog_uri + route.target(), timeout=UPSTREAM_TIMEOUT, allow_redirects=False,
                                      headers={"Authorization": self.authorization(), "Content-Type": "application/json"},
                                      data=canonical_body(body) if body is not None else None)
        if resp.status_code == 404:
            return None
        resp.raise_for_status()
        return resp.json() if resp.content else {}

    def _route(self, name: str, ident: Ident | None = None, **query: str) -> Route:
        spec = next(s for s in CATALOG_ROUTES if s.name == name)
        bucket, namespace, table = ident or (self.warehouse, (), "")
        return Route(spec.name, spec.method, spec.path, bucket, namespace, table, query=tuple(query.items()))

    def load_stored(self, ident: Ident) -> StoredTable | None:
        """What the catalog stored for `ident` (loaded now), or None if it is not stored."""
        body = self._call("GET", self._route("load-table", ident))
        return StoredTable.from_answer(ident, body) if body else None

    def stored(self, ident: Ident) -> StoredTable | None:
        """`load_stored`, reused for KNOWN_SECONDS."""
        with self._lock:
            cached = self._known.get(ident)
        if cached is not None:
            return cached
        table = self.load_stored(ident)
        if table is not None:
            with self._lock:
                self._known[ident] = table
        return table

    def staged(self, ident: Ident) -> StoredTable | None:
        """The table `ident` as staged through this guard (not stored yet), or None."""
        with self._lock:
            return self._staged.get(ident)

    def quarantined(self, ident: Ident) -> str | None:
        with self._lock:
            return self._quarantined.get(ident)

    def _namespace_tables(self, bucket: str, namespace: tuple[str, ...]) -> dict[Ident, StoredTable]:
        """The stored tables of one namespace (listed now; each loaded or reused)."""
        out: dict[Ident, StoredTable] = {}
        token: str | None = None
        for _ in range(10_000):  # bounded: a server that keeps answering a page token cannot loop us
            query = {"pageToken": token} if token else {}
            body = self._call("GET", self._route("list-tables", (bucket, namespace, ""), **query)) or {}
            for ident in body.get("identifiers") or []:
                if len(out) >= MAX_LISTED:
                    raise OverflowError
                key: Ident = (bucket, tuple(ident.get("namespace") or namespace), str(ident.get("name")))
                table = self.stored(key)
                if table is not None:
                    out[key] = table
            token = body.get("next-page-token")
            if not token:
                return out
        raise OverflowError

    # -- locks --------------------------------------------------------------------------------------
    def _locked(self, namespaces: set[tuple[str, tuple[str, ...]]]) -> ExitStack:
        """The locks of these namespaces, taken in one order (no two requests deadlock)."""
        stack = ExitStack()
        stripes = sorted({int(hashlib.sha256(repr(ns).encode()).hexdigest()[:8], 16) % LOCK_STRIPES for ns in namespaces})
        for stripe in stripes:
            stack.enter_context(self._stripes[stripe])
        return stack

    # -- the rule ---------------------------------------------------------------------------------
    def _conflict(self, ident: Ident, paths: tuple[str, ...], what: str, shown: str, neighbours: Mapping[Ident, tuple[str, ...]],
                  kinds: Mapping[Ident, str]) -> Refusal | None:
        for other, occupied in neighbours.items():
            if other == ident:
                continue
            for path in paths:
                hit = next((o for o in occupied if _overlap(path, o)), None)
                if hit is not None:
                    label = kinds.get(other, "table")
                    return Refusal(403, "ForbiddenException", f"{what}: location {shown} overlaps {label} {_shown(other)} at s3://{hit}; "
                                                              f"choose a location of its own for {_shown(ident)}")
        return None

    def _neighbours(self, namespaces: set[tuple[str, tuple[str, ...]]], changes: list[Change],
                    renames: list[Rename]) -> tuple[dict[Ident, tuple[str, ...]], dict[Ident, str], dict[Ident, StoredTable]]:
        """(ident -> paths it holds, ident -> how to name it, stored tables) of the namespaces a
        request touches: stored tables, tables staged here, and the request's own other changes."""
        stored: dict[Ident, StoredTable] = {}
        for bucket, ns in namespaces:
            stored.update(self._namespace_tables(bucket, ns))
        held: dict[Ident, set[str]] = {ident: set(t.occupied) for ident, t in stored.items()}
        kinds: dict[Ident, str] = {}
        with self._lock:
            staged = list(self._staged.items())
        for ident, table in staged:
            if (ident[0], ident[1]) in namespaces and ident not in stored:
                held.setdefault(ident, set()).update(table.occupied)
                kinds[ident] = "staged table"
        for change in changes:  # a transaction's changes against each other: old and new places both count
            held.setdefault(change.ident, set()).update({change.location, entry_path(change.ident)})
        for rename in renames:
            held.setdefault(rename.destination, set()).add(entry_path(rename.destination))
        return {i: tuple(sorted(p)) for i, p in held.items()}, kinds, stored

    def check(self, changes: list[Change], renames: list[Rename]) -> tuple[Refusal | None, dict[Ident, StoredTable]]:
        """None if these changes keep the rule (the caller holds their namespaces' locks), else the
        refusal; and the stored tables seen."""
        namespaces = {(c.ident[0], c.ident[1]) for c in changes} | {(r.source[0], r.source[1]) for r in renames}
        try:
            neighbours, kinds, stored = self._neighbours(namespaces, changes, renames)
        except OverflowError:
            return Refusal(403, "ForbiddenException", f"over {MAX_LISTED} tables to compare; the location rule cannot be checked"), {}
        for change in changes:
            refusal = self._change_refusal(change, neighbours, kinds)
            if refusal is not None:
                return refusal, stored
        for rename in renames:
            source, dest = rename.source, rename.destination
            if dest in stored:
                continue  # SeaweedFS answers 409: nothing moves
            others = {i: p for i, p in neighbours.items() if i != source}
            refusal = self._conflict(dest, (entry_path(dest),), f"rename to {_shown(dest)}", f"s3://{entry_path(dest)}", others, kinds)
            if refusal is not None:
                return refusal, stored
        return None, stored

    def _change_refusal(self, change: Change, neighbours: Mapping[Ident, tuple[str, ...]], kinds: Mapping[Ident, str]) -> Refusal | None:
        bucket, namespace, _ = ident = change.ident
        ns_loc = namespace_location(bucket, namespace)
        shown = f"s3://{change.location}"
        if not change.location.startswith(ns_loc + "/"):
            return Refusal(403, "ForbiddenException", f"{change.what}: location {shown} is not under its namespace's location "
                                                      f"s3://{ns_loc}/; omit the location or choose one below it")
        paths = [change.location]
        if change.kind in ("create", "stage"):
            paths.append(entry_path(ident))
        if change.metadata_dir:
            paths.append(change.metadata_dir)
        return self._conflict(ident, tuple(paths), change.what, shown, neighbours, kinds)

    # -- reading a request --------------------------------------------------------------------------
    def plan(self, route: Route, raw: bytes) -> Plan | Refusal:
        """What a request does to table locations, and the body to forward."""
        if route.name in ("config", "list-namespaces", "load-namespace", "namespace-exists", "drop-namespace", "list-tables",
                          "load-table", "table-exists"):
            return Plan([], [], None)
        if route.name == "token":
            return Plan([], [], raw)
        if route.name == "drop-table":
            return Plan([], [], None, drop=route.ident)
        body = parse_json(raw)
        if isinstance(body, Refusal):
            return body
        if route.name == "report-metrics":
            return Plan([], [], canonical_body(body))
        if route.name in ("create-namespace", "update-namespace-properties"):
            return self._namespace_plan(route, body)
        if route.name == "create-table":
            return self._create_plan(route, body)
        if route.name == "register-table":
            return self._register_plan(route, body)
        if route.name == "commit-table":
            return self._commit_plan(route, body)
        if route.name == "commit-transaction":
            return self._transaction_plan(route, body)
        if route.name == "rename-table":
            return self._rename_plan(route, body)
        return Refusal(404, "NotFoundException", f"{route.name} is not served here")

    def _namespace_plan(self, route: Route, body: Any) -> Plan | Refusal:
        """A namespace's `location` property can only be its own directory: SeaweedFS and clients
        read it as the place for the namespace's tables."""
        if route.name == "create-namespace":
            refusal = struct_keys_refusal(body, "the namespace", _NAMESPACE_KEYS)
            if refusal is not None:
                return refusal
            namespace = namespace_of(body.get("namespace"))
            if isinstance(namespace, Refusal):
                return namespace
            properties = body.get("properties") or {}
        else:
            refusal = struct_keys_refusal(body, "the property update", _PROPERTIES_KEYS)
            if refusal is not None:
                return refusal
            namespace, properties = route.namespace, body.get("updates") or {}
        if not isinstance(properties, dict):
            return bad_request("namespace properties must be an object of strings")
        own = f"s3://{namespace_location(route.prefix, namespace)}"
        given = properties.get("location")
        if given is not None and _location(given) != _location(own):
            return Refusal(403, "ForbiddenException", f"a namespace's location is {own} in this lakehouse; omit the location property")
        return Plan([], [], canonical_body(body))

    def _default_location(self, ident: Ident) -> str:
        staged = self.staged(ident)
        if staged is not None and staged.location:
            return staged.location  # a re-stage (Spark's CTAS) keeps its place
        return entry_path(ident)

    def _create_plan(self, route: Route, body: Any) -> Plan | Refusal:
        refusal = struct_keys_refusal(body, "the create request", _CREATE_KEYS)
        if refusal is not None:
            return refusal
        name = body.get("name")
        if not isinstance(name, str) or not TABLE_NAME.fullmatch(name):
            return bad_request("the request needs a table name of a-z, 0-9, _ and -, starting with a letter or digit")
        if not isinstance(body.get("stage-create", False), bool):
            return bad_request("stage-create must be true or false")
        staged = body.get("stage-create") is True
        what = "stage-create" if staged else "create"
        ident: Ident = (route.prefix, route.namespace, name)
        given = body.get("location")
        if given is not None:
            location = _location(given, strict=True)
            if location is None:
                return _bad_location(what, given)
        else:
            location = self._default_location(ident)
        # The location is always sent: SeaweedFS would otherwise derive one itself (from a
        # `warehouse` property or its environment), which is not what was checked.
        forwarded = {**body, "location": f"s3://{location}"}
        return Plan([Change(ident, location, what, "stage" if staged else "create")], [], canonical_body(forwarded))

    def _register_plan(self, route: Route, body: Any) -> Plan | Refusal:
        refusal = struct_keys_refusal(body, "the register request", _REGISTER_KEYS)
        if refusal is not None:
            return refusal
        name = body.get("name")
        if not isinstance(name, str) or not TABLE_NAME.fullmatch(name):
            return bad_request("the request needs a table name of a-z, 0-9, _ and -, starting with a letter or digit")
        metadata_location = _location(body.get("metadata-location"), strict=True)
        if metadata_location is None or "/" not in metadata_location:
            return _bad_location("register", body.get("metadata-location"))
        # Read nothing outside the namespace the table joins: the guard reads with the admin keys,
        # and the answer must not tell a caller what another bucket or namespace holds.
        home = namespace_location(route.prefix, route.namespace)
        if not metadata_location.startswith(home + "/"):
            return Refusal(403, "ForbiddenException", f"register: the metadata file s3://{metadata_location} lies outside "
                                                      f"namespace {'.'.join(route.namespace)} (s3://{home}/)")
        location = self._registered_location(metadata_location)
        if isinstance(location, Refusal):
            return location
        ident: Ident = (route.prefix, route.namespace, name)
        change = Change(ident, location, "register", "create", metadata_dir=_purged_dir(metadata_location))
        return Plan([change], [], canonical_body(body))

    def _commit_changes(self, ident: Ident, body: Any, what: str) -> list[Change] | Refusal:
        refusal = struct_keys_refusal(body, what, _COMMIT_KEYS)
        if refusal is not None:
            return refusal
        updates, requirements = body.get("updates") or [], body.get("requirements") or []
        if not isinstance(updates, list) or not isinstance(requirements, list):
            return bad_request("updates and requirements must be lists")
        for item in [*updates, *requirements]:
            refusal = struct_keys_refusal(item, f"{what}: an update or requirement")
            if refusal is not None:
                return refusal
        creates = any(r.get("type") == "assert-create" for r in requirements)
        locations = [u.get("location") for u in updates if u.get("action") == "set-location"]
        out: list[Change] = []
        for given in locations:
            location = _location(given, strict=True)
            if location is None:
                return _bad_location("commit with set-location", given)
            out.append(Change(ident, location, "commit with set-location", "create" if creates else "move"))
        if creates and not out:  # a staged table's commit that names no location: where it was staged
            out.append(Change(ident, self._default_location(ident), "commit of a staged table", "create"))
        return out

    def _commit_plan(self, route: Route, body: Any) -> Plan | Refusal:
        ident = route.ident
        if isinstance(body, dict) and body.get("identifier") is not None:
            named = identifier_of(body.get("identifier"), "the commit's identifier")
            if isinstance(named, Refusal):
                return named
            if named != (ident[1], ident[2]):
                return bad_request("the commit's identifier names another table than its path")
        changes = self._commit_changes(ident, body, "the commit")
        if isinstance(changes, Refusal):
            return changes
        return Plan(changes, [], canonical_body(body))

    def _transaction_plan(self, route: Route, body: Any) -> Plan | Refusal:
        refusal = struct_keys_refusal(body, "the transaction", ("table-changes",))
        if refusal is not None:
            return refusal
        table_changes = body.get("table-changes")
        if not isinstance(table_changes, list) or not table_changes:
            return bad_request("a transaction needs a list of table-changes")
        out: list[Change] = []
        seen: set[Ident] = set()
        for change in table_changes:
            named = identifier_of(change.get("identifier") if isinstance(change, dict) else None, "a table change's identifier")
            if isinstance(named, Refusal):
                return named
            ident: Ident = (route.prefix, *named)
            if ident in seen:
                return bad_request(f"the transaction changes {_shown(ident)} twice; send one change per table")
            seen.add(ident)
            changes = self._commit_changes(ident, change, f"the change of {_shown(ident)}")
            if isinstance(changes, Refusal):
                return changes
            out += changes
        return Plan(out, [], canonical_body(body))

    def _rename_plan(self, route: Route, body: Any) -> Plan | Refusal:
        refusal = struct_keys_refusal(body, "the rename", ("source", "destination"))
        if refusal is not None:
            return refusal
        source, dest = identifier_of(body.get("source"), "the rename's source"), identifier_of(body.get("destination"), "the rename's destination")
        if isinstance(source, Refusal):
            return source
        if isinstance(dest, Refusal):
            return dest
        if source[0] != dest[0]:
            if self._call("GET", self._route("load-namespace", (route.prefix, dest[0], ""))) is None:
                # what SeaweedFS answers (Spark sends RENAME TO lake.db.t2 as namespace ["lake", "db"])
                return Refusal(404, "NoSuchNamespaceException", f"Namespace does not exist: {'.'.join(dest[0])}")
            return Refusal(403, "ForbiddenException", f"a renamed table keeps its location, which must stay under its namespace's: "
                                                      f"rename {_shown((route.prefix, *source))} within {'.'.join(source[0])}")
        return Plan([], [Rename((route.prefix, *source), (route.prefix, *dest))], canonical_body(body))

    def _registered_location(self, metadata_location: str) -> str | Refusal:
        """The location inside the metadata file a register call points at (read with the admin keys)."""
        import boto3
        from botocore.config import Config

        bucket, key = metadata_location.split("/", 1)
        s3 = boto3.client("s3", endpoint_url=self.s3_endpoint, region_name="us-east-1", aws_access_key_id=self._access_key,
                          aws_secret_access_key=self._secret_key, config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))
        shown = f"s3://{metadata_location}"
        try:
            obj = s3.get_object(Bucket=bucket, Key=key)
            if int(obj.get("ContentLength") or 0) > MAX_CATALOG_BODY:
                return bad_request(f"register: the metadata file {shown} is too large")
            location = json.loads(obj["Body"].read()).get("location")
        except Exception:  # noqa: BLE001 - unreadable metadata: refused
            return bad_request(f"register: the metadata file {shown} cannot be read as Iceberg metadata")
        # What the file says is never echoed (it would make the guard a reader of any file's content).
        table_loc = _location(location, strict=True)
        if table_loc is None:
            return bad_request(f"register: the metadata file {shown} names no plain s3://bucket/path table location")
        if not metadata_location.startswith(table_loc + "/"):
            return Refusal(403, "ForbiddenException", f"register: metadata {shown} lies outside the table location it names")
        return table_loc

    # -- forwarding ---------------------------------------------------------------------------------
    def handle(self, route: Route, raw: bytes, send: Send) -> Answer:
        """Check a recognised catalog call against the rule, forward it (re-encoded) unless
        refused, and check what SeaweedFS stored after it; the answer (status, body, headers)."""
        if route.name in VIEW_ROUTES:  # SeaweedFS has no views: answered here (views.py)
            return answer_view(route, send)
        for ident in _named_tables(route):
            why = self.quarantined(ident)
            if why is not None:
                return _refused(Refusal(403, "ForbiddenException", f"{_shown(ident)} is quarantined: {why}"))
        plan = self.plan(route, raw)
        if isinstance(plan, Refusal):
            return _refused(plan)
        for ident in [c.ident for c in plan.changes] + [r.source for r in plan.renames] + [r.destination for r in plan.renames]:
            why = self.quarantined(ident)
            if why is not None:
                return _refused(Refusal(403, "ForbiddenException", f"{_shown(ident)} is quarantined: {why}"))
        if plan.drop is not None:
            return self._drop(route, plan.drop, send)
        if not plan.changes and not plan.renames:
            return send(route.target(), plan.body)
        namespaces = {(c.ident[0], c.ident[1]) for c in plan.changes} | {(r.source[0], r.source[1]) for r in plan.renames}
        with self._locked(namespaces):
            try:
                refusal, before = self.check(plan.changes, plan.renames)
            except Exception as exc:  # noqa: BLE001 - cannot check: refuse rather than let it through
                refusal, before = Refusal(503, "ServiceUnavailableException",
                                          f"the location rule could not be checked ({type(exc).__name__}); retry"), {}
            if refusal is not None:
                return _refused(refusal)
            status, content, headers = send(route.target(), plan.body)
            if not 200 <= status < 300:
                return status, content, headers
            self._record(plan, content)
            refusal = self._verify(plan, before)
            if refusal is not None:
                return _refused(refusal)
            return status, content, headers

    def _drop(self, route: Route, ident: Ident, send: Send) -> Answer:
        """SeaweedFS's DROP purges the directory of the table's metadata file: refused when that
        directory (or the location) overlaps another table or leaves the namespace."""
        with self._locked({(ident[0], ident[1])}):
            try:
                table = self.load_stored(ident)
                neighbours = self._namespace_tables(ident[0], ident[1]) if table is not None else {}
            except Exception as exc:  # noqa: BLE001
                return _refused(Refusal(503, "ServiceUnavailableException", f"drop: the table could not be checked ({type(exc).__name__}); retry"))
            if table is not None:
                ns_loc = namespace_location(ident[0], ident[1])
                purged = [p for p in (table.location, _purged_dir(table.metadata_location)) if p]
                outside = [p for p in purged if not p.startswith(ns_loc + "/")]
                if outside or not purged:
                    where = f"s3://{outside[0]}" if outside else "an unreadable location"
                    return _refused(Refusal(403, "ForbiddenException", f"drop {_shown(ident)}: SeaweedFS would purge {where}, "
                                                                       f"outside the namespace's location s3://{ns_loc}/; not dropped"))
                held = {i: t.occupied for i, t in neighbours.items()}
                refusal = self._conflict(ident, tuple(purged), f"drop {_shown(ident)}", f"s3://{purged[-1]}", held, {})
                if refusal is not None:
                    return _refused(replace(refusal, message=refusal.message.split("; choose")[0] + "; SeaweedFS's drop would delete its files, so it is not dropped"))
            answer = send(route.target(), None)
            if 200 <= answer[0] < 300:
                self._changed(ident)
            return answer

    def _record(self, plan: Plan, content: bytes) -> None:
        """Remember staged tables (with the uuid of the answer) and forget changed ones."""
        uuid = ""
        if plan.changes and plan.changes[0].kind == "stage":
            try:
                uuid = str(((json.loads(content) or {}).get("metadata") or {}).get("table-uuid") or "")
            except ValueError:
                uuid = ""
        for change in plan.changes:
            with self._lock:
                if change.kind == "stage":
                    self._staged[change.ident] = StoredTable(change.ident, change.location, None, uuid)
                else:
                    self._staged.pop(change.ident, None)
                    self._known.pop(change.ident, None)
            if change.kind == "move":  # the same table elsewhere: what was issued for its old place ends
                self._changed(change.ident)
        for rename in plan.renames:
            self._changed(rename.source)
            self._changed(rename.destination)

    def _verify(self, plan: Plan, before: Mapping[Ident, StoredTable]) -> Refusal | None:
        """Check what SeaweedFS stored after the changes it accepted; roll back what breaks the rule."""
        stored_changes = [c for c in plan.changes if c.kind != "stage"]
        if not stored_changes:
            return None
        try:
            after = {c.ident: self.load_stored(c.ident) for c in stored_changes}
        except Exception as exc:  # noqa: BLE001
            return Refusal(503, "ServiceUnavailableException", f"the stored tables could not be checked ({type(exc).__name__})")
        neighbours: dict[Ident, tuple[str, ...]] = {i: t.occupied for i, t in before.items()}
        for ident, table in after.items():
            if table is not None:
                neighbours[ident] = table.occupied
        problems: list[tuple[Change, StoredTable, str]] = []
        for change in stored_changes:
            table = after[change.ident]
            if table is None:
                continue  # answered 2xx but not stored (a create over a name SeaweedFS refused to keep)
            why = self._stored_violation(table, neighbours)
            if why is not None:
                problems.append((change, table, why))
        if not problems:
            return None
        outcomes = [self._roll_back(change, table, before.get(change.ident)) for change, table, _ in problems]
        change, table, why = problems[0]
        return Refusal(403, "ForbiddenException", f"{change.what} of {_shown(change.ident)}: SeaweedFS stored {why}; {outcomes[0]}")

    def _stored_violation(self, table: StoredTable, neighbours: Mapping[Ident, tuple[str, ...]]) -> str | None:
        bucket, namespace, _ = table.ident
        ns_loc = namespace_location(bucket, namespace)
        if table.location is None:
            return "a location that is no plain s3:// URL"
        for path in (table.location, _purged_dir(table.metadata_location)):
            if path is None or not path.startswith(ns_loc + "/"):
                return f"s3://{path} outside its namespace's location s3://{ns_loc}/"
            for other, occupied in neighbours.items():
                if other != table.ident and any(_overlap(path, o) for o in occupied):
                    return f"s3://{path}, which overlaps table {_shown(other)}"
        return None

    def _roll_back(self, change: Change, table: StoredTable, before: StoredTable | None) -> str:
        """Undo one stored change without deleting a file: a moved table goes back; a new entry is
        removed through the filer. Returns what happened, for the refusal."""
        ident = table.ident
        if before is not None and change.kind == "create":
            return "it existed before this call and is left as it was"  # a create over its name changed nothing
        try:
            if before is not None and before.location:
                self._call("POST", self._route("commit-table", ident), {
                    "requirements": [{"type": "assert-table-uuid", "uuid": table.uuid}],
                    "updates": [{"action": "set-location", "location": f"s3://{before.location}"}]})
                self._changed(ident)
                return f"moved back to s3://{before.location}"
            if before is None and change.kind == "create":  # an entry this call made: nothing else may go
                why = self._remove_entry(ident)
                if why is None:
                    self._changed(ident)
                    return "its catalog entry was removed (no file was deleted)"
                return self._quarantine(ident, f"it could not be rolled back ({why})")
        except Exception as exc:  # noqa: BLE001
            return self._quarantine(ident, f"it could not be rolled back ({type(exc).__name__})")
        return self._quarantine(ident, "it could not be rolled back (no earlier location to return to)")

    def _remove_entry(self, ident: Ident) -> str | None:
        """Remove a new catalog entry without deleting files (see filer.py); None when done."""
        import boto3
        from botocore.config import Config

        if self._filer is None:
            return "this guard has no filer access"
        bucket, key = entry_path(ident).split("/", 1)
        s3 = boto3.client("s3", endpoint_url=self.s3_endpoint, region_name="us-east-1", aws_access_key_id=self._access_key,
                          aws_secret_access_key=self._secret_key, config=Config(s3={"addressing_style": "path"}))
        if s3.list_objects_v2(Bucket=bucket, Prefix=key + "/", MaxKeys=1).get("KeyCount", 0):
            return f"files lie under its entry s3://{bucket}/{key}/"
        why = self._filer.remove_empty_entry(f"/buckets/{bucket}/{key}")
        if why is None and self.load_stored(ident) is not None:
            return "the entry is still listed after its removal"
        return why

    def _quarantine(self, ident: Ident, why: str) -> str:
        log.warning("quarantined %s: %s", _shown(ident), why)
        with self._lock:
            self._quarantined[ident] = why
            self._known.pop(ident, None)
        for listener in self._listeners:
            listener(ident)
        return f"{why}; this lakehouse now refuses every call naming it"


def _named_tables(route: Route) -> Iterator[Ident]:
    if route.table:
        yield route.ident


def _bad_location(what: str, value: Any) -> Refusal:
    shown = repr(str(value)[:200])
    return bad_request(f"{what}: location {shown} is not a plain s3://bucket/path URL (segments of letters, digits and _.=+-, "
                       "none empty, . or .., no query or fragment)")


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
            return self._reply(*_refused(route))
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
    from pyspark_catalog_ext.lakehouse.proxy import HOP_BY_HOP

    return {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}


CatalogGuardProxy.handler = _GuardHandler
