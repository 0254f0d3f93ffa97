"""One reading of a request to the lakehouse's catalog proxies (the location guard and the remote
signer), made once and used for everything after it.

The target is decoded and normalised here, matched against an allow-list of routes (method, path,
query keys), and the JSON body is parsed strictly. The proxy checks this reading and forwards the
request *re-encoded from it* (`Route.target`, `canonical_body`), never the client's bytes, so
SeaweedFS cannot route or read anything other than what was checked. What the reading does not
recognise is refused in one line: 400 for a target that is not plain, 404 for no route, 405 for a
route's path with another method. Percent-encoding is decoded once, as SeaweedFS does.

Why: docs/lakehouse.md, section 'Table locations' ("One reading of each request").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

__all__ = ["Route", "Refusal", "parse_target", "parse_json", "canonical_body", "CATALOG_ROUTES", "SIGNER_ROUTES",
           "NAMESPACE_LEVEL", "TABLE_NAME", "struct_keys_refusal"]

# SeaweedFS 4.48's rules for a namespace level and a table name (its s3tables validation): lower-case
# letters, digits, `_` and `-`; a level starts and ends with a letter or digit, a table name starts
# with one. Anything else (capitals, `.`, `%`, Unicode...) it refuses anyway, so refusing it here
# costs nothing and leaves one spelling per name.
NAMESPACE_LEVEL = re.compile(r"[a-z0-9](?:[a-z0-9_-]{0,253}[a-z0-9])?")
TABLE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,254}")
_OWN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # the signer's scope ids and DeleteObjects tickets (token_urlsafe)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_PRINTABLE = re.compile(r"[\x21-\x7e]*")
_STRUCT_KEY = re.compile(r"[a-z][a-z0-9-]*")
# Segments of a target re-encoded as they are: RFC 3986 unreserved characters only.
_SAFE = "-._~"


@dataclass(frozen=True)
class Refusal:
    """Why a proxy refused a catalog call: HTTP status, Iceberg error type, one-line message."""

    status: int
    kind: str
    message: str

    def body(self) -> bytes:
        return json.dumps({"error": {"message": self.message, "type": self.kind, "code": self.status}}).encode()


def bad_request(message: str) -> Refusal:
    return Refusal(400, "BadRequestException", message)


@dataclass(frozen=True)
class RouteSpec:
    """One allowed route: its name, method, path template (literal segments and the placeholders
    `{prefix}`, `{namespace}`, `{table}`, `{id}`) and the query keys it takes."""

    name: str
    method: str
    path: tuple[str, ...]
    query: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Route:
    """A recognised request: the route's name and method, the warehouse prefix, namespace levels,
    table name or own id it names, and its query (decoded)."""

    name: str
    method: str
    path: tuple[str, ...]  # the spec's template
    prefix: str = ""
    namespace: tuple[str, ...] = ()
    table: str = ""
    id: str = ""
    query: tuple[tuple[str, str], ...] = field(default=())

    @property
    def ident(self) -> tuple[str, tuple[str, ...], str]:
        return self.prefix, self.namespace, self.table

    def target(self) -> str:
        """The request target re-encoded from this reading (what is forwarded upstream)."""
        values = {"{prefix}": self.prefix, "{namespace}": "\x1f".join(self.namespace), "{table}": self.table, "{id}": self.id}
        path = "/" + "/".join(quote(values.get(seg, seg), safe=_SAFE) for seg in self.path)
        if not self.query:
            return path
        return path + "?" + "&".join(f"{quote(k, safe=_SAFE)}={quote(v, safe=_SAFE)}" for k, v in self.query)

    def param(self, key: str) -> str | None:
        return next((v for k, v in self.query if k == key), None)


_PAGES = frozenset({"pageToken", "pageSize", "page-token", "page-size"})
_P, _NS, _T = "{prefix}", "{namespace}", "{table}"
CATALOG_ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("config", "GET", ("v1", "config"), frozenset({"warehouse"})),
    RouteSpec("token", "POST", ("v1", "oauth", "tokens")),
    RouteSpec("list-namespaces", "GET", ("v1", _P, "namespaces"), _PAGES | {"parent"}),
    RouteSpec("create-namespace", "POST", ("v1", _P, "namespaces")),
    RouteSpec("load-namespace", "GET", ("v1", _P, "namespaces", _NS)),
    RouteSpec("namespace-exists", "HEAD", ("v1", _P, "namespaces", _NS)),
    RouteSpec("drop-namespace", "DELETE", ("v1", _P, "namespaces", _NS)),
    RouteSpec("update-namespace-properties", "POST", ("v1", _P, "namespaces", _NS, "properties")),
    RouteSpec("list-tables", "GET", ("v1", _P, "namespaces", _NS, "tables"), _PAGES),
    RouteSpec("create-table", "POST", ("v1", _P, "namespaces", _NS, "tables")),
    RouteSpec("register-table", "POST", ("v1", _P, "namespaces", _NS, "register")),
    RouteSpec("load-table", "GET", ("v1", _P, "namespaces", _NS, "tables", _T), frozenset({"snapshots"})),
    RouteSpec("table-exists", "HEAD", ("v1", _P, "namespaces", _NS, "tables", _T)),
    RouteSpec("drop-table", "DELETE", ("v1", _P, "namespaces", _NS, "tables", _T), frozenset({"purgeRequested"})),
    RouteSpec("commit-table", "POST", ("v1", _P, "namespaces", _NS, "tables", _T)),
    RouteSpec("report-metrics", "POST", ("v1", _P, "namespaces", _NS, "tables", _T, "metrics")),
    RouteSpec("rename-table", "POST", ("v1", _P, "tables", "rename")),
    RouteSpec("commit-transaction", "POST", ("v1", _P, "transactions", "commit")),
    # Views: SeaweedFS's catalog has none, so these never reach it; views.py answers them as the
    # spec says for a catalog without views (clients such as Trino ask for a view before a table).
    RouteSpec("list-views", "GET", ("v1", _P, "namespaces", _NS, "views"), _PAGES),
    RouteSpec("create-view", "POST", ("v1", _P, "namespaces", _NS, "views")),
    RouteSpec("load-view", "GET", ("v1", _P, "namespaces", _NS, "views", _T)),
    RouteSpec("view-exists", "HEAD", ("v1", _P, "namespaces", _NS, "views", _T)),
    RouteSpec("replace-view", "POST", ("v1", _P, "namespaces", _NS, "views", _T)),
    RouteSpec("drop-view", "DELETE", ("v1", _P, "namespaces", _NS, "views", _T)),
    RouteSpec("rename-view", "POST", ("v1", _P, "views", "rename")),
)
# The remote signer's own routes (signer.py, served by signer_handler.py): the sign endpoint (bare:
# signs nothing; with a scope id: one table) and the DeleteObjects relay.
SIGNER_ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("sign", "POST", ("v1", "aws", "s3", "sign")),
    RouteSpec("sign", "POST", ("v1", "aws", "s3", "sign", "{id}")),
    RouteSpec("delete-relay", "POST", ("v1", "aws", "s3", "delete", "{id}"), frozenset({"delete", "x-id"})),
)


def _decode(raw: str, plus_is_space: bool = False) -> str | None:
    """`raw` percent-decoded once (UTF-8), or None for a bad escape or bytes that are no UTF-8."""
    if plus_is_space:
        raw = raw.replace("+", " ")  # Go's url.ParseQuery reads + in a query as a space
    if "%" in raw and len(_ESCAPE.findall(raw)) != raw.count("%"):
        return None
    try:
        return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), raw).encode("latin-1").decode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return None


def _control(text: str) -> bool:
    """A control character other than 0x1F, which joins the levels of a namespace (Iceberg's REST spec)."""
    return any((ord(c) < 32 and c != "\x1f") or ord(c) == 127 for c in text)


def _segments(raw_path: str) -> list[str] | Refusal:
    out = []
    for raw in raw_path.split("/")[1:]:
        if raw == "":
            return bad_request("the request path has an empty segment (// or a trailing /)")
        seg = _decode(raw)
        if seg is None:
            return bad_request("the request path has a bad percent-escape or bytes that are not UTF-8")
        if seg in (".", "..") or raw in (".", ".."):
            return bad_request("the request path has a . or .. segment")
        if "/" in seg or "\\" in seg or _control(seg):
            return bad_request("the request path encodes a /, \\ or control character inside a segment")
        out.append(seg)
    return out


def _query(raw_query: str, allowed: frozenset[str]) -> tuple[tuple[str, str], ...] | Refusal:
    if not raw_query:
        return ()
    pairs: list[tuple[str, str]] = []
    for piece in raw_query.split("&"):
        raw_key, _, raw_value = piece.partition("=")
        key, value = _decode(raw_key, True), _decode(raw_value, True)
        if not key or value is None or _control(key) or _control(value):
            return bad_request("the query has an empty key, a bad percent-escape or a control character")
        if key not in allowed:
            names = ", ".join(sorted(allowed)) or "none"
            return bad_request(f"query parameter {key[:40]!r} is not taken by this route (it takes: {names})")
        if any(k == key for k, _ in pairs):
            return bad_request(f"query parameter {key[:40]!r} is given twice")
        pairs.append((key, value))
    return tuple(pairs)


def _bind(spec: RouteSpec, segments: list[str], warehouse: str) -> dict[str, Any] | Refusal | None:
    """The placeholders of `spec` bound from `segments`; None if the literal segments differ."""
    if len(spec.path) != len(segments):
        return None
    if any(t != s for t, s in zip(spec.path, segments, strict=True) if not t.startswith("{")):
        return None
    bound: dict[str, Any] = {}
    for template, seg in zip(spec.path, segments, strict=True):
        if template == _P:
            if seg != warehouse:
                return Refusal(404, "NoSuchWarehouseException", f"this catalog serves only the warehouse {warehouse!r}")
            bound["prefix"] = seg
        elif template == _NS:
            levels = tuple(seg.split("\x1f"))
            if not all(NAMESPACE_LEVEL.fullmatch(level) for level in levels):
                return bad_request("a namespace level must be 1-255 of a-z, 0-9, _ and -, starting and ending with a letter or digit")
            bound["namespace"] = levels
        elif template == _T:
            if not TABLE_NAME.fullmatch(seg):
                return bad_request("a table name must be 1-255 of a-z, 0-9, _ and -, starting with a letter or digit")
            bound["table"] = seg
        elif template == "{id}":
            if not _OWN_ID.fullmatch(seg):
                return Refusal(404, "NotFoundException", "no such signer endpoint")
            bound["id"] = seg
    return bound


def parse_target(method: str, target: str, warehouse: str, routes: Iterable[RouteSpec] = CATALOG_ROUTES) -> Route | Refusal:
    """The route a request (`method`, raw `target` as sent) is, or why it is refused."""
    if not target.startswith("/") or target.startswith("//"):
        return bad_request("the request target must be a path (/...); absolute-form and @host targets are refused")
    if not _PRINTABLE.fullmatch(target):
        return bad_request("the request target must be printable ASCII; percent-encode anything else")
    if "#" in target:
        return bad_request("the request target has a fragment (#)")
    raw_path, _, raw_query = target.partition("?")
    segments = _segments(raw_path)
    if isinstance(segments, Refusal):
        return segments
    specs = list(routes)
    matched: list[tuple[RouteSpec, dict[str, Any]]] = []
    for spec in specs:
        bound = _bind(spec, segments, warehouse)
        if isinstance(bound, Refusal):
            return bound
        if bound is not None:
            matched.append((spec, bound))
    if not matched:  # SeaweedFS's own words for it, which clients already read as "no such endpoint"
        return Refusal(404, "NotFound", "Path not found: no route of this catalog matches this path")
    for spec, bound in matched:
        if spec.method == method:
            query = _query(raw_query, spec.query)
            if isinstance(query, Refusal):
                return query
            return Route(spec.name, method, spec.path, query=query, **bound)
    allowed = ", ".join(sorted({spec.method for spec, _ in matched}))
    return Refusal(405, "BadRequestException", f"this route takes {allowed}, not {method[:10]}")


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # SeaweedFS decodes with Go's encoding/json, which matches struct fields case-insensitively and
    # lets the last of two spellings win: two keys equal but for case are refused here.
    seen: set[str] = set()
    for key, _ in pairs:
        folded = key.casefold()
        if folded in seen:
            raise _Duplicate(key)
        seen.add(folded)
    return dict(pairs)


def _no_constants(name: str) -> Any:
    raise ValueError(name)  # NaN/Infinity: not JSON, and Go would refuse them


def parse_json(raw: bytes) -> Any | Refusal:
    """The JSON body, parsed strictly: UTF-8, no NaN/Infinity, no key given twice in any spelling."""
    try:
        return json.loads(raw.decode("utf-8") if raw else "{}", object_pairs_hook=_pairs, parse_constant=_no_constants)
    except _Duplicate as dup:
        return bad_request(f"the body gives the key {str(dup)[:60]!r} twice (in some spelling)")
    except (ValueError, UnicodeDecodeError):
        return bad_request("the request body must be JSON (UTF-8)")
    except RecursionError:  # nested past the parser's depth: no Iceberg body is
        return bad_request("the request body is nested too deeply")


def struct_keys_refusal(obj: Any, what: str, allowed: Iterable[str] | None = None) -> Refusal | None:
    """Why an object the proxy reads (a request body, an update, a requirement, an identifier) is
    refused: not an object, a key not in the Iceberg spelling (lower-case, `-`), which Go would
    still match to a field case-insensitively (`Location`, `ſtage-create`), or, given `allowed`,
    a key outside it."""
    if not isinstance(obj, dict):
        return bad_request(f"{what} must be a JSON object")
    for key in obj:
        if not _STRUCT_KEY.fullmatch(key):
            return bad_request(f"{what} has the key {key[:60]!r}: keys are spelled in lower case (Iceberg's REST spec)")
        if allowed is not None and key not in allowed:
            return bad_request(f"{what} has the key {key[:60]!r}, which this lakehouse does not take here")
    return None


def canonical_body(body: Any) -> bytes:
    """The body as forwarded: re-serialised from what was parsed and checked."""
    return json.dumps(body, separators=(",", ":")).encode()


def describe(route: Route) -> str:
    """`ns.table` (or `ns`) of a route, for messages."""
    return ".".join([*route.namespace, route.table] if route.table else list(route.namespace))


def namespace_of(value: Any) -> tuple[str, ...] | Refusal:
    """A namespace from a body (`["a", "b"]`), checked against SeaweedFS's level rule."""
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and NAMESPACE_LEVEL.fullmatch(v) for v in value):
        return bad_request("a namespace must be a list of levels of a-z, 0-9, _ and -, starting and ending with a letter or digit")
    return tuple(value)


def identifier_of(value: Any, what: str) -> tuple[tuple[str, ...], str] | Refusal:
    """(namespace, name) of a TableIdentifier object in a body."""
    refusal = struct_keys_refusal(value, what, ("namespace", "name"))
    if refusal is not None:
        return refusal
    assert isinstance(value, Mapping)
    ns = namespace_of(value.get("namespace"))
    if isinstance(ns, Refusal):
        return ns
    name = value.get("name")
    if not isinstance(name, str) or not TABLE_NAME.fullmatch(name):
        return bad_request(f"{what}: a table name must be 1-255 of a-z, 0-9, _ and -, starting with a letter or digit")
    return ns, name
