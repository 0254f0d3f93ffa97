"""Catalog proxy in front of SeaweedFS's Iceberg REST port, with switchable features.

Features (constructor arguments, also plain attributes you can flip at runtime):

  refresh_tokens=True        the proposed ``storage-refresh-token`` (closed spec PR 15280):
                             a stateless, signed token on every ``storage-credentials``
                             entry of stage-create/create/load responses, and
                             ``GET .../tables/{t}/credentials?storageRefreshToken=...``.
  token_ttl_seconds          lifetime of those tokens (default 3600).
  short_lifetime_seconds=N   rewrite ``s3.session-token-expires-at-ms`` of every vended
                             credential to now + N s, and ``s3_proxy.register_key()`` it, so
                             the client and the fast-expiry S3 proxy agree.
  s3_endpoint=URL            rewrite ``s3.endpoint`` in vended configs (point at the S3 proxy).
  advertise_refresh_endpoint add ``client.refresh-credentials-endpoint`` to table configs,
                             pointing to this proxy's ``/credentials``, which then serves
                             committed tables (reload) AND staged tables (re-stage), without
                             a token. ``refresh_endpoint_style`` = "relative" (a path under the
                             catalog URI, as Iceberg's VendedCredentialsProvider resolves it)
                             or "absolute".
  load_lag_seconds=N         loads that lag: for N s after a successful commit to a table, its
                             loads answer the metadata it had before that commit (404 if it
                             had none), like a catalog whose reads trail its writes.
  faults                     see ``base.FaultInjector`` (``proxy.faults.add("drop", "POST",
                             r"/tables/t1$")``). With no feature on, this is a plain fault proxy.

Counters: ``count(kind=..., table=...)`` / ``counts()`` over client requests, kinds:
config, oauth, stage-create, create, load, commit, credentials, drop, other.
Tables are named "ns.table" (namespace levels joined by ".").

How a refresh is served: the token is verified (signature, table, expiry); then fresh
credentials come from SeaweedFS by loading the table if it is committed, else by staging it
again with the create request body this proxy saw for it and an explicit ``location``
(SeaweedFS then vends new credentials for the same location). A table this proxy never saw created and that isn't committed is 404.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from typing import NamedTuple
from urllib.parse import parse_qs, quote, unquote, urlsplit

from .base import BufferedProxy, Request, Response

_TABLES = re.compile(r"^/v1/(?P<prefix>[^/]+)/namespaces/(?P<ns>[^/]+)/tables$")
_TABLE = re.compile(r"^/v1/(?P<prefix>[^/]+)/namespaces/(?P<ns>[^/]+)/tables/(?P<t>[^/]+)$")
_CREDS = re.compile(
    r"^/v1/(?P<prefix>[^/]+)/namespaces/(?P<ns>[^/]+)/tables/(?P<t>[^/]+)/credentials$")
NS_SEP = "\x1f"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def table_name(ns: list[str], name: str) -> str:
    return ".".join(ns + [name])


class RoutePatterns(NamedTuple):
    """A catalog's table routes: its tables, one table, one table's credentials."""

    tables: re.Pattern[str]
    table: re.Pattern[str]
    credentials: re.Pattern[str]


PREFIXED = RoutePatterns(_TABLES, _TABLE, _CREDS)


def classify_request(req: Request, routes: RoutePatterns = PREFIXED) -> tuple[str, str | None]:
    """A catalog request's kind (config, oauth, credentials, create, stage-create, load, commit, drop,
    other) and the table it is about (`ns.name`), or None."""
    route = req.route
    if route == "/v1/config":
        return "config", None
    if route == "/v1/oauth/tokens":
        return "oauth", None
    if (m := routes.credentials.match(route)) and req.method == "GET":
        return "credentials", table_name(_ns(m), unquote(m["t"]))
    if (m := routes.tables.match(route)) and req.method == "POST":
        body = _safe_json(req.body) or {}
        kind = "stage-create" if body.get("stage-create") else "create"
        return kind, table_name(_ns(m), body.get("name", "?"))
    if m := routes.table.match(route):
        kind = {"GET": "load", "HEAD": "load", "POST": "commit", "DELETE": "drop"}.get(req.method, "other")
        return kind, table_name(_ns(m), unquote(m["t"]))
    if route.endswith("/transactions/commit"):
        return "commit", None
    return "other", None


class TokenError(Exception):
    def __init__(self, status: int, type_: str, message: str):
        super().__init__(message)
        self.response = Response.iceberg_error(status, type_, message)


class RefreshTokenSigner:
    """Stateless tokens: base64url(JSON claims) + "." + base64url(HMAC-SHA256(claims))."""

    def __init__(self, key: bytes | None = None):
        self.key = key or secrets.token_bytes(32)

    def sign(self, prefix: str, ns: list[str], name: str, location: str, expires_at: float) -> str:
        claims = json.dumps({"prefix": prefix, "ns": ns, "t": name, "loc": location,
                             "exp": int(expires_at), "n": secrets.token_hex(6)},
                            separators=(",", ":")).encode()  # n: each token distinct
        mac = hmac.new(self.key, claims, hashlib.sha256).digest()
        return f"{_b64(claims)}.{_b64(mac)}"

    def verify(self, token: str, ns: list[str], name: str, now: float) -> dict:
        try:
            claims_b64, mac_b64 = token.split(".", 1)
            claims_raw, mac = _unb64(claims_b64), _unb64(mac_b64)
        except ValueError:
            raise TokenError(401, "NotAuthorizedException", "malformed storage refresh token")
        if not hmac.compare_digest(mac, hmac.new(self.key, claims_raw, hashlib.sha256).digest()):
            raise TokenError(401, "NotAuthorizedException", "invalid storage refresh token")
        claims = json.loads(claims_raw)
        if claims["ns"] != ns or claims["t"] != name:
            raise TokenError(401, "NotAuthorizedException",
                             "storage refresh token is not valid for this table")
        if now >= claims["exp"]:
            raise TokenError(401, "NotAuthorizedException", "storage refresh token expired")
        return claims


class CatalogProxy(BufferedProxy):
    def __init__(self, upstream: str, *, refresh_tokens: bool = False,
                 token_ttl_seconds: float = 3600, short_lifetime_seconds: float | None = None,
                 s3_endpoint: str | None = None, s3_proxy=None,
                 advertise_refresh_endpoint: bool = False, refresh_endpoint_style: str = "relative",
                 token_key: bytes | None = None, load_lag_seconds: float = 0.0, port: int = 0):
        super().__init__(upstream, port)
        self.load_lag_seconds = load_lag_seconds
        self._last_load: dict[str, Response] = {}  # table route -> its last 200 load
        self._stale: dict[str, tuple[Response | None, float]] = {}  # route -> (answer, until)
        self.refresh_tokens = refresh_tokens
        self.token_ttl_seconds = token_ttl_seconds
        self.short_lifetime_seconds = short_lifetime_seconds
        self.state_lifetime = True  # False: drop s3.session-token-expires-at-ms (Unity Catalog 0.6)
        self.s3_endpoint = s3_endpoint
        self.s3_proxy = s3_proxy
        self.advertise_refresh_endpoint = advertise_refresh_endpoint
        self.refresh_endpoint_style = refresh_endpoint_style
        self.signer = RefreshTokenSigner(token_key)
        self.clock = time.time
        self.secrets_handed_out: set[str] = set()
        self._create_bodies: dict[tuple, tuple] = {}  # (prefix, ns, name) -> (body, location)
        self._bodies_lock = threading.Lock()

    # ------------------------------------------------------------------ classification
    def classify(self, req: Request) -> tuple[str, str | None]:
        return classify_request(req)

    # ------------------------------------------------------------------ processing
    # Values a leak test searches for: every secret this proxy handed to a client.
    SECRET_FIELDS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token",
                     "storage-refresh-token", "access_token")

    def process(self, req: Request) -> Response:
        resp = self._route(req)
        self._collect_secrets(_safe_json(resp.body))
        return resp

    def _collect_secrets(self, data) -> None:
        if isinstance(data, dict):
            for key, value in data.items():
                if key in self.SECRET_FIELDS and isinstance(value, str) and len(value) >= 8:
                    self.secrets_handed_out.add(value)
                else:
                    self._collect_secrets(value)
        elif isinstance(data, list):
            for item in data:
                self._collect_secrets(item)

    def _route(self, req: Request) -> Response:
        route = req.route
        if (m := _CREDS.match(route)) and req.method == "GET":
            query = parse_qs(urlsplit(req.path).query)
            if "storageRefreshToken" in query or self.advertise_refresh_endpoint:
                return self._serve_credentials(req, m, query)
            return self.forward(req)  # SeaweedFS: 404
        if (m := _TABLES.match(route)) and req.method == "POST":
            body = _safe_json(req.body) or {}
            resp = self.forward(req)
            location = ((_safe_json(resp.body) or {}).get("metadata") or {}).get("location")
            if resp.status == 200 and body.get("name"):
                with self._bodies_lock:
                    self._create_bodies[(m["prefix"], tuple(_ns(m)), body["name"])] = (
                        req.body, location)
            return self._decorate(resp, m["prefix"], _ns(m), body.get("name"))
        if (m := _TABLE.match(route)) and req.method == "GET":
            if self.load_lag_seconds:
                with self._bodies_lock:
                    stale, until = self._stale.get(route, (None, 0.0))
                if time.monotonic() < until:
                    return stale or Response.iceberg_error(404, "NoSuchTableException", "lagging load")
            resp = self._decorate(self.forward(req), m["prefix"], _ns(m), unquote(m["t"]))
            if resp.status == 200:
                with self._bodies_lock:
                    self._last_load[route] = resp
            return resp
        resp = self.forward(req)
        if self.load_lag_seconds and _TABLE.match(route) and req.method == "POST" and resp.status == 200:
            with self._bodies_lock:
                self._stale[route] = (self._last_load.get(route), time.monotonic() + self.load_lag_seconds)
        return resp

    def _decorate(self, resp: Response, prefix: str, ns: list[str], name: str | None) -> Response:
        """Apply the enabled rewrites to a LoadTableResult-shaped 200 response."""
        if resp.status != 200 or name is None:
            return resp
        data = _safe_json(resp.body)
        if not isinstance(data, dict):
            return resp
        now = self.clock()
        config = data.get("config")
        if isinstance(config, dict):
            self._rewrite_credential(config, now)
            if self.advertise_refresh_endpoint:
                config["client.refresh-credentials-endpoint"] = self.refresh_endpoint(prefix, ns, name)
        location = (data.get("metadata") or {}).get("location")
        for cred in data.get("storage-credentials") or []:
            self._rewrite_credential(cred.get("config") or {}, now)
            if self.refresh_tokens:
                cred["storage-refresh-token"] = self.signer.sign(
                    prefix, ns, name, location or cred.get("prefix", ""),
                    now + self.token_ttl_seconds)
        return resp.with_json(data)

    def _rewrite_credential(self, config: dict, now: float) -> None:
        if "s3.access-key-id" not in config:
            return
        if self.s3_endpoint and "s3.endpoint" in config:
            config["s3.endpoint"] = self.s3_endpoint
        if self.short_lifetime_seconds is not None:
            config["s3.session-token-expires-at-ms"] = str(
                int((now + self.short_lifetime_seconds) * 1000))
            if self.s3_proxy is not None:
                self.s3_proxy.register_key(config["s3.access-key-id"], issued_at=now)
        if not self.state_lifetime:  # a catalog that states no lifetime for keys that do expire
            config.pop("s3.session-token-expires-at-ms", None)

    def refresh_endpoint(self, prefix: str, ns: list[str], name: str) -> str:
        path = (f"v1/{quote(prefix, safe='')}/namespaces/{quote(NS_SEP.join(ns), safe='')}"
                f"/tables/{quote(name, safe='')}/credentials")
        return path if self.refresh_endpoint_style == "relative" else f"{self.url}/{path}"

    # ------------------------------------------------------------------ /credentials
    def _serve_credentials(self, req: Request, m: re.Match, query: dict) -> Response:
        prefix, ns, name = m["prefix"], _ns(m), unquote(m["t"])
        if "planId" in query and "storageRefreshToken" in query:
            return Response.iceberg_error(400, "BadRequestException",
                                          "storageRefreshToken and planId are mutually exclusive")
        location = None
        if "storageRefreshToken" in query:
            try:
                claims = self.signer.verify(query["storageRefreshToken"][0], ns, name, self.clock())
            except TokenError as e:
                return e.response
            location = claims["loc"]
        fresh = self._fresh_table_response(req, prefix, ns, name, location)
        if fresh.status != 200:
            return fresh
        data = fresh.json()
        if location is not None and (data.get("metadata") or {}).get("location") != location:
            return Response.iceberg_error(404, "NoSuchTableException",
                                          f"table {table_name(ns, name)} is no longer at {location}")
        creds = data.get("storage-credentials") or []
        return Response(200, [("Content-Type", "application/json")]).with_json(
            {"storage-credentials": creds})

    def _fresh_table_response(self, req: Request, prefix: str, ns: list[str], name: str,
                              location: str | None = None) -> Response:
        """Fresh vended credentials: load if committed, else re-stage with the original body
        and an explicit ``location``. (Without it, SeaweedFS 4.48 re-stages a name whose
        default location already holds objects at a NEW location ``{name}-{uuid}``.)"""
        headers = [(k, v) for k, v in req.headers if k.lower() not in ("content-type",)]
        if not any(k.lower() == "x-iceberg-access-delegation" for k, _ in headers):
            headers.append(("X-Iceberg-Access-Delegation", "vended-credentials"))
        ns_path = f"/v1/{quote(prefix, safe='')}/namespaces/{quote(NS_SEP.join(ns), safe='')}"
        load = self.forward(Request("GET", f"{ns_path}/tables/{quote(name, safe='')}", headers))
        if load.status == 200:
            return self._decorate(load, prefix, ns, name)
        with self._bodies_lock:
            body, first_location = self._create_bodies.get((prefix, tuple(ns), name), (None, None))
        if load.status != 404 or body is None:
            return load if load.status != 404 else Response.iceberg_error(
                404, "NoSuchTableException", f"unknown table {table_name(ns, name)}")
        staged = json.loads(body)
        staged["stage-create"] = True
        staged["location"] = location or staged.get("location") or first_location
        restage = Request("POST", f"{ns_path}/tables",
                          headers + [("Content-Type", "application/json")],
                          json.dumps(staged).encode())
        return self._decorate(self.forward(restage), prefix, ns, name)


def _ns(m: re.Match) -> list[str]:
    return unquote(m["ns"]).split(NS_SEP)


def _safe_json(body: bytes):
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None
