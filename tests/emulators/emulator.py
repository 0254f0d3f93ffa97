"""A catalog family on loopback: ``CatalogProxy`` in front of the real SeaweedFS Iceberg REST port,
answering the way ``Behaviour`` says that family answers.

What the emulator owns (SeaweedFS does the rest, for real: tables, metadata, commits, STS keys):
  * /v1/config: the family's prefix (in ``overrides`` or ``defaults``), ``endpoints`` and where it
    advertises ``idempotency-key-lifetime``; paths under the family prefix are mapped to SeaweedFS's.
  * auth: its own OAuth2 token endpoint (scope checked, tokens of ``token_ttl_seconds``, an expired
    token answered with the family's status), a static bearer token, or SigV4. Upstream it uses its
    own SeaweedFS token. SigV4 is checked for shape only (algorithm, service and region in the
    credential scope), not for the signature: SeaweedFS can't verify it behind a proxy and there is
    no Glue here to do it.
  * what it vends: expiring keys (the ``short_lifetime_seconds`` the S3 expiry proxy enforces),
    keys with the expiry removed (they still die at that lifetime: the client is just not told),
    or none (keys stripped; the job uses its own).
  * refresh endpoint advertised or not; GET .../credentials served for all tables, only committed
    ones (staged: 404) or not at all; stage-create refused (400); read-only (405 on mutations).
  * Idempotency-Key: advertised where the family does (top level or inside ``overrides``), with the
    reference ``IdempotencyProxy`` in between for replay; keys of operations the family does not cover
    (Polaris: all but createTable/updateTable) are dropped before it.

  * Lakekeeper's quirks: a conditional load (If-None-Match) answered 304 (#1862; loads carry an
    ETag so a client could ask), and a stage-create repeating a seen Idempotency-Key answered 500
    (#1959).
  * Polaris's policy and notification APIs: the reference ``PolicyServer`` (checked against the
    ``apache-polaris`` SDK models) answers them behind the emulator's auth; families without them
    answer a framework 404 (no route), as their servers do.
  * remote signing, when a request asks for it (X-Iceberg-Access-Delegation: remote-signing): table
    answers lose every key and name a signer, either as Iceberg 1.10's ``s3.signer.uri`` +
    ``s3.signer.endpoint`` (``v1/aws/s3/sign/<scope>``) or as Iceberg 1.12's
    ``remote-signing-config`` field (sign at the table's ``.../sign`` route). The signing itself
    (allow-list per table location, SigV4 with the lakehouse's keys, the DeleteObjects relay) is the
    embedded lakehouse's ``SigningCatalogProxy``, behind this emulator's auth. Families that reject
    remote signing answer table requests asking for it with 400.
  * S3 Tables' drop: a DELETE of a table without ``purgeRequested=true`` is answered 400 (and, like
    Glue, a stage-create is answered 400).
  * Polaris's answers as a real 1.4.1 gave them (observed/polaris-1.4.1.json;
    tests/unit/harness/test_emulated_polaris.py compares each): /v1/config's defaults (default-base-location), a
    stage-create without metadata-location, s3.endpoint/path-style/client.region only in the table
    config, ``expiration-time``, its credential cache (the same keys for a table location while the
    entry lives: the shorter of its setting and half their remaining lifetime), 409 on creating an
    existing table, its error words (qualified names, an empty 401, a 403 for the principal
    ``nogrant``, a 404 for an unknown prefix, the remote-signing 400), a staged table's metrics
    report answered 404, no Date header, and an internal catalog refusing notifications (400).

Not emulated (yet): a failed create's location removed by the server (Lakekeeper #1418: nothing a
user of this package sees changes, docs/emulated-catalogs.md says why), the real SigV4
signature check (shape only) and OAuth token exchange/refresh grants.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import threading
import time
from urllib.parse import parse_qs, quote, unquote, unquote_plus, urlencode, urlsplit

from pyspark_catalog_ext.lakehouse.signer import SigningCatalogProxy
from tests.servers.base import Request, Response
from tests.servers.catalog_proxy import _CREDS, _TABLE, _TABLES, NS_SEP, CatalogProxy, _ns, _safe_json
from tests.servers.idempotency_proxy import IdempotencyProxy
from tests.servers.policy_server import PolicyServer
from tests.servers.s3_expiry_proxy import S3ExpiryProxy

from .behaviour import (
    ALL,
    CATALOG_PROPERTIES,
    COMMITTED,
    EXPIRING,
    INTERNAL,
    NO_EXPIRY,
    NONE,
    OVERRIDES,
    POLARIS,
    REJECTED,
    S3_SIGNER,
    SIGNING_CONFIG,
    TABLE_CONFIG,
    TOP,
    Behaviour,
)

MUTATIONS = ("POST", "PUT", "DELETE", "PATCH")
KEY_FIELDS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.session-token-expires-at-ms")
R2_TOKEN = "r2-api-token-for-tests"  # the static bearer a "token" family accepts
# A principal with no grants (error_words=POLARIS): its tokens are refused 403 on every catalog route.
NO_GRANT_CLIENT = ("nogrant", "nogrant-secret-for-tests")
# Where a storage credential's config holds only its keys and their expiry (storage_settings=TABLE_CONFIG).
STORAGE_SETTINGS = ("s3.endpoint", "s3.path-style-access", "s3.region", "client.region")
# Polaris's operation names (PolarisAuthorizableOperation) in its 403, by (method, route kind).
_POLARIS_OPS = {("GET", "namespaces"): "LIST_NAMESPACES", ("POST", "namespaces"): "CREATE_NAMESPACE",
                ("GET", "namespace"): "LOAD_NAMESPACE_METADATA", ("HEAD", "namespace"): "NAMESPACE_EXISTS",
                ("DELETE", "namespace"): "DROP_NAMESPACE", ("GET", "tables"): "LIST_TABLES",
                ("POST", "tables"): "CREATE_TABLE_DIRECT", ("GET", "table"): "LOAD_TABLE",
                ("HEAD", "table"): "TABLE_EXISTS", ("POST", "table"): "UPDATE_TABLE",
                ("DELETE", "table"): "DROP_TABLE_WITHOUT_PURGE"}
# What a server framework answers for a path it has no route for (not an Iceberg error model).
NO_ROUTE = Response(404, [("Content-Type", "text/plain")], b"Not Found")


class Emulator(CatalogProxy):
    """One catalog family in front of ``lakehouse``; ``s3_proxy`` makes its keys die at ``lifetime``."""

    def __init__(self, behaviour: Behaviour, lakehouse, s3_proxy: S3ExpiryProxy, lifetime: float,
                 token_ttl_seconds: float = 3600):
        info = lakehouse.info
        # Idempotency-Key semantics come from the reference IdempotencyProxy between us and SeaweedFS
        # (it can't parse weeks: P1W is only what we advertise).
        self.idempotency = (IdempotencyProxy(info.iceberg_uri, lifetime=_parseable(behaviour.idempotency[1])).start()
                            if behaviour.idempotency else None)
        super().__init__(self.idempotency.url if self.idempotency else info.iceberg_uri, short_lifetime_seconds=lifetime, s3_endpoint=s3_proxy.url,
                         s3_proxy=s3_proxy, advertise_refresh_endpoint=behaviour.refresh_endpoint != NONE)
        self.b = behaviour
        self.info = info
        self.client_token_ttl = token_ttl_seconds
        self._tokens: dict[str, float] = {}  # access token -> expiry (bounded: pruned on issue)
        self._tok_lock = threading.Lock()
        self._upstream_token: tuple[str, float] = ("", 0.0)
        self.refused: list[str] = []  # one line per request refused by a behaviour switch
        self.conditional_loads = 0  # loads that carried If-None-Match (answered 304 where stale_load_304)
        self._stage_keys: dict[str, None] = {}  # Idempotency-Keys of stage-creates seen (bounded, oldest out)
        self.polaris: PolicyServer | None = None  # the policy/notification APIs, once started
        self.signer: SigningCatalogProxy | None = None  # signs for families with a signer, once started
        self._signing_scopes: dict[str, str] = {}  # "ns.table" -> signer scope (the per-table .../sign route)
        self.signed = 0
        self.sign_refused: list[str] = []
        self._no_grant_tokens: set[str] = set()  # tokens of NO_GRANT_CLIENT (bounded with _tokens)
        # credential_cache_s: table location -> (the keys' fields, until when they are handed out again)
        self._cached_keys: dict[str, tuple[dict[str, str], float]] = {}
        self.cache_hits = 0  # answers that carried cached keys
        self.keys_cached: dict[str, int] = {}  # table location -> key sets cached for it (each minted by SeaweedFS)

    def start(self):
        super().start()
        if self.b.polaris_apis:  # its upstream checks (namespace/table exists) come back through our auth
            self.polaris = PolicyServer(self.url)
        if self.b.signer in (S3_SIGNER, SIGNING_CONFIG):  # its own port serves only the DeleteObjects relay
            self.signer = SigningCatalogProxy(self.info.iceberg_uri, self.s3_endpoint, self.info.access_key,
                                              self.info.secret_key).start()
        return self

    # ------------------------------------------------------------------ entry point
    def process(self, req: Request) -> Response:
        resp = self._answer(req)
        if not self.b.date_header:
            resp = Response(resp.status, [(k, v) for k, v in resp.headers if k.lower() != "date"], resp.body, resp.reason)
        return resp

    def _answer(self, req: Request) -> Response:
        if req.route == "/v1/oauth/tokens":
            return self._oauth(req)
        denied = self._authenticate(req)
        if denied is not None:
            return denied
        if self.signer is not None and req.method == "POST" and (scope := self._sign_scope(req)) is not None:
            return self._sign(req, scope)
        signing = "remote-signing" in (req.header("X-Iceberg-Access-Delegation") or "")
        if (req.route.startswith(f"/v1/{self.b.prefix}/") and req.route.endswith("/notifications")
                and self.polaris is not None and self.b.notifications == INTERNAL):
            return Response.iceberg_error(400, "BadRequestException", "Cannot update internal catalog via notifications")
        if req.route.startswith("/polaris/v1/") or (req.route.startswith(f"/v1/{self.b.prefix}/")
                                                     and req.route.endswith("/notifications")):
            return self.polaris.process(req) if self.polaris is not None else NO_ROUTE
        if (self.b.stale_load_304 and req.method == "GET" and req.header("If-None-Match") is not None
                and (mapped := self._to_upstream(req)) is not None and _TABLE.match(mapped.route)):
            with self._tok_lock:
                self.conditional_loads += 1  # lakekeeper#1862: "not modified", whatever the keys cached with it
            return Response(304, [("ETag", req.header("If-None-Match") or "")], b"")
        req = self._upstream_auth(req)
        if req.route == "/v1/config":
            return self._config(req)
        mapped = self._to_upstream(req)
        if mapped is None:
            if self.b.error_words == POLARIS and req.route.startswith("/v1/"):  # its prefix is a catalog's name
                return Response.iceberg_error(404, "NoSuchNamespaceException", "Namespace does not exist: ''")
            return NO_ROUTE
        req = self._idempotency_scope(mapped)
        if signing and self.b.signer == REJECTED and (_TABLE.match(req.route) or _TABLES.match(req.route)):
            self.refused.append(f"{req.method} {req.route}: 400 (remote signing)")
            if self.b.error_words == POLARIS:
                return Response.iceberg_error(400, "IllegalArgumentException",
                                              "Unsupported access delegation mode: remote-signing")
            return Response.iceberg_error(400, "BadRequestException", f"{self.b.family} {self.b.release}: access "
                                          "delegation 'remote-signing' is not supported")
        refused = self._refuse(req)
        if refused is not None:
            self.refused.append(f"{req.method} {req.route}: {refused.status}")
            return refused
        if signing and self.signer is not None:
            req = Request(req.method, req.path, [(k, v) for k, v in req.headers
                                                 if k.lower() != "x-iceberg-access-delegation"], req.body)
            return self._signing_answer(req, self._rewrite(super().process(req)))
        resp = self._rewrite(super().process(req), req)
        return self._words(req, resp) if self.b.error_words == POLARIS else resp

    # ------------------------------------------------------------------ remote signing
    def _sign_scope(self, req: Request) -> str | None:
        """The signer scope a sign request is for, or None when it is no sign request."""
        if self.b.signer == S3_SIGNER and req.route.startswith("/v1/aws/s3/sign/"):
            return req.route[len("/v1/aws/s3/sign/"):]
        if self.b.signer == SIGNING_CONFIG and req.route.endswith("/sign"):
            mapped = self._to_upstream(Request(req.method, req.path[:-len("/sign")], req.headers, req.body))
            m = _TABLE.match(mapped.route) if mapped is not None else None
            if m:
                with self._tok_lock:
                    return self._signing_scopes.get(".".join(_ns(m) + [unquote(m["t"])]), "")
        return None

    def _sign(self, req: Request, scope: str) -> Response:
        """Iceberg's sign request -> the lakehouse signer's checks and signature (403 with a reason)."""
        assert self.signer is not None
        try:
            body = json.loads(req.body)
            method, url = str(body["method"]).upper(), str(body["uri"])
        except (ValueError, KeyError, TypeError):
            return Response.iceberg_error(400, "BadRequestException", "the body must be a sign request: {region, method, uri, headers}")
        why = self.signer.check_request(scope, method, url, body.get("headers") or {}, body.get("body"))
        if why is not None:
            with self._tok_lock:
                self.sign_refused.append(f"{method} {url}: {why}")
            return Response.iceberg_error(403, "ForbiddenException", f"not signing {method}: {why}")
        with self._tok_lock:
            self.signed += 1
        return Response(200, [("Content-Type", "application/json"), ("Cache-Control", "no-cache")]).with_json(
            self.signer.sign(body))

    def _signing_answer(self, req: Request, resp: Response) -> Response:
        """A table answer in remote-signing form: no key anywhere, the signer named the family's way."""
        assert self.signer is not None
        data = _safe_json(resp.body)
        if resp.status != 200 or not isinstance(data, dict) or "metadata" not in data:
            return resp
        data.pop("storage-credentials", None)
        config = {k: v for k, v in (data.get("config") or {}).items()
                  if k not in KEY_FIELDS and k != "client.refresh-credentials-endpoint"}
        scope = self.signer.scope_for(str((data.get("metadata") or {}).get("location") or "")) or ""
        config["s3.remote-signing-enabled"] = "true"
        config["s3.endpoint"] = self.s3_endpoint  # the S3 the signer signs for (as vended answers name it)
        if self.b.signer == S3_SIGNER:
            config.update({"s3.signer.uri": self.url, "s3.signer.endpoint": f"v1/aws/s3/sign/{scope}"})
        else:  # Iceberg 1.12: presence of the field says "sign at this table's .../sign route"
            data["remote-signing-config"] = {}
            _, table = self.classify(req)
            with self._tok_lock:
                self._signing_scopes[table or "?"] = scope
                while len(self._signing_scopes) > 10_000:
                    del self._signing_scopes[next(iter(self._signing_scopes))]
        data["config"] = config
        return resp.with_json(data)

    def _to_upstream(self, req: Request) -> Request | None:
        """The request with the family's prefix mapped to SeaweedFS's; None outside the prefix."""
        client_prefix = f"/v1/{self.b.prefix}/"
        if not req.path.startswith(client_prefix):
            return None
        return Request(req.method, f"/v1/{quote(self.info.warehouse)}/" + req.path[len(client_prefix):],
                       req.headers, req.body)

    def classify(self, req: Request):
        """The log names requests by their upstream route: a prefix with a slash in it (Unity's
        catalogs/unity) would otherwise count every table request as "other"."""
        return super().classify(self._to_upstream(req) or req)

    # ------------------------------------------------------------------ auth
    def _oauth(self, req: Request) -> Response:
        if self.b.auth != "oauth2":
            return Response.iceberg_error(404, "NotFoundException", "no OAuth2 endpoint here")
        form = {k: v[0] for k, v in parse_qs(req.body.decode()).items()}
        client = (form.get("client_id"), form.get("client_secret"))
        if client == (None, None):
            client = _basic_client(req.header("Authorization"))
        no_grant = self.b.error_words == POLARIS and client == NO_GRANT_CLIENT
        # Its clients: the lakehouse's own client (what connections are given) or the admin pair.
        ours = {(self.info.access_key, self.info.secret_key), tuple(self.info.credential.split(":", 1))}
        if client not in ours and not no_grant:
            return _oauth_error(401, "invalid_client", "bad client credentials")
        if self.b.scope and self.b.scope not in (form.get("scope") or "").split():
            return _oauth_error(400, "invalid_scope", f"scope must include {self.b.scope}")
        token, now = secrets.token_urlsafe(24), time.time()
        with self._tok_lock:
            self._tokens = {t: exp for t, exp in self._tokens.items() if exp > now - 3600}
            self._no_grant_tokens &= set(self._tokens)
            self._tokens[token] = now + self.client_token_ttl
            if no_grant:
                self._no_grant_tokens.add(token)
        return Response(200, [("Content-Type", "application/json")]).with_json(
            {"access_token": token, "token_type": "bearer", "expires_in": int(self.client_token_ttl),
             "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})

    def _authenticate(self, req: Request) -> Response | None:
        auth = req.header("Authorization") or ""
        if self.b.auth == "sigv4":
            m = re.match(r"AWS4-HMAC-SHA256 Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request", auth)
            if not m or m[2] != self.b.signing_name:
                return Response.iceberg_error(403, "ForbiddenException",
                                              f"expected a SigV4 signature for service {self.b.signing_name}")
            return None
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        polaris = self.b.error_words == POLARIS
        if self.b.auth == "token":
            ok = token == R2_TOKEN
        else:
            with self._tok_lock:
                exp = self._tokens.get(token or "")
                no_grant = token in self._no_grant_tokens
            if exp is not None and exp <= time.time():
                if polaris and self.b.expired_token_status == 401:
                    return Response(401, [("Content-Length", "0")], b"")
                return Response.iceberg_error(self.b.expired_token_status, "NotAuthorizedException", "token expired")
            ok = exp is not None
            if ok and no_grant and req.route != "/v1/config":
                return Response.iceberg_error(
                    403, "ForbiddenException", f"Principal '{NO_GRANT_CLIENT[0]}' with activated PrincipalRoles '[]' and "
                    f"activated grants via '[]' is not authorized for op {_polaris_op(req)}")
        if not ok and polaris:
            return Response(401, [("Content-Length", "0")], b"")  # Polaris answers 401 without a body
        return None if ok else Response.iceberg_error(401, "NotAuthorizedException", "not authorized")

    def _upstream_auth(self, req: Request) -> Request:
        token, exp = self._upstream_token
        if time.time() > exp - 60:
            body = urlencode({"grant_type": "client_credentials", "client_id": self.info.access_key,
                              "client_secret": self.info.secret_key}).encode()
            resp = self.forward(Request("POST", "/v1/oauth/tokens",
                                        [("Host", urlsplit(self.upstream).netloc),
                                         ("Content-Type", "application/x-www-form-urlencoded")], body))
            data = resp.json() or {}
            token, exp = data.get("access_token", ""), time.time() + float(data.get("expires_in", 600))
            self._upstream_token = (token, exp)
        headers = [(k, v) for k, v in req.headers
                   if k.lower() not in ("authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token")]
        return Request(req.method, req.path, headers + [("Authorization", f"Bearer {token}")], req.body)

    # ------------------------------------------------------------------ /v1/config
    def _config(self, req: Request) -> Response:
        query = parse_qs(urlsplit(req.path).query)
        if query.get("warehouse", [self.b.warehouse])[0] != self.b.warehouse:
            if self.b.error_words == POLARIS:  # polaris IcebergCatalogAdapter.getConfig
                return Response.iceberg_error(404, "NotFoundException", f"Unable to find warehouse {query['warehouse'][0]}")
            return Response.iceberg_error(404, "NoSuchWarehouseException", f"warehouse {query['warehouse'][0]} not found")
        up = self.forward(Request("GET", f"/v1/config?warehouse={quote(self.info.warehouse)}", req.headers))
        if up.status != 200:
            return up
        data = up.json() or {}
        overrides = {k: v for k, v in (data.get("overrides") or {}).items() if k != "prefix"}
        defaults = {k: v for k, v in (data.get("defaults") or {}).items() if k != "prefix"}
        if self.b.config_defaults == CATALOG_PROPERTIES:  # the catalog's properties; no warehouse
            defaults = {"default-base-location": str(defaults.get("warehouse") or f"s3://{self.info.warehouse}")}
        (overrides if self.b.prefix_in == OVERRIDES else defaults)["prefix"] = self.b.prefix
        overrides.update(self.b.config_overrides)
        answer: dict = {"defaults": defaults, "overrides": overrides}
        if self.b.endpoints is not None:
            answer["endpoints"] = list(self.b.endpoints)
        if self.b.idempotency:
            where, lifetime = self.b.idempotency
            (answer if where == TOP else overrides)["idempotency-key-lifetime"] = lifetime
        return up.with_json(answer)

    def stop(self):
        super().stop()
        if self.idempotency:
            self.idempotency.stop()
        if self.signer is not None:
            self.signer.stop()

    def _replays(self, req: Request) -> bool:
        """A covered request under a key the key store has answered: replayed, whatever exists now."""
        key = req.header("Idempotency-Key")
        return bool(self.idempotency and key and key in self.idempotency.entries()
                    and _covered(self.b, req))

    def _idempotency_scope(self, req: Request) -> Request:
        """Drop the Idempotency-Key of operations the family does not cover (it ignores the header there)."""
        if req.header("Idempotency-Key") is None or "all" in self.b.idempotent_operations:
            return req
        if _operation(req) in self.b.idempotent_operations:
            return req
        return Request(req.method, req.path, [(k, v) for k, v in req.headers if k.lower() != "idempotency-key"], req.body)

    # ------------------------------------------------------------------ refusals
    def _refuse(self, req: Request) -> Response | None:
        if self.b.read_only and req.method in MUTATIONS:
            return Response.iceberg_error(405, "MethodNotAllowedException",
                                          f"{self.b.family} {self.b.release}: the Iceberg REST endpoint is read-only")
        if req.method == "POST" and req.route.endswith("/tables") and not self.b.stage_create:
            if (_safe_json(req.body) or {}).get("stage-create"):
                return Response.iceberg_error(400, "BadRequestException",
                                              f"{self.b.family}: stage-create is not supported")
        if self.b.replayed_stage_create_500 and _operation(req) == "stageCreate" and req.header("Idempotency-Key"):
            key = req.header("Idempotency-Key") or ""
            with self._tok_lock:
                seen = key in self._stage_keys
                self._stage_keys[key] = None
                while len(self._stage_keys) > 10_000:
                    del self._stage_keys[next(iter(self._stage_keys))]
            if seen:  # lakekeeper#1959: the replay looks the staged table up among active ones, 404 -> 500
                return Response.iceberg_error(500, "InternalServerError", "replaying the request failed")
        if (self.b.purge_on_drop and req.method == "DELETE" and _TABLE.match(req.route)
                and [v.lower() for v in parse_qs(urlsplit(req.path).query).get("purgeRequested", [])] != ["true"]):
            return Response.iceberg_error(400, "BadRequestException",
                                          f"{self.b.family}: a table can only be dropped with purgeRequested=true")
        if (m := _CREDS.match(req.route)) and req.method == "GET":
            mode = self.b.credentials_endpoint
            if mode == NONE and self.b.refresh_endpoint == NONE:
                return NO_ROUTE
            if mode == COMMITTED or self.b.refresh_endpoint == COMMITTED:
                load = self.forward(Request("GET", req.route.rsplit("/", 1)[0], req.headers))
                if load.status == 404:  # staged tables are not stored: nothing to serve
                    return _no_table(m)
        if (self.b.create_existing_status == 409 and (m := _TABLES.match(req.route)) and req.method == "POST"
                and not (body := _safe_json(req.body) or {}).get("stage-create") and body.get("name")
                and not self._replays(req)):
            table = f"{req.route}/{quote(str(body['name']), safe='')}"
            if self.forward(Request("GET", table, req.headers)).status == 200:
                name = ".".join(_ns(m) + [str(body["name"])])
                return Response.iceberg_error(409, "AlreadyExistsException", f"Table already exists: {name}")
        if self.b.staged_metrics_404 and req.method == "POST" and req.route.endswith("/metrics"):
            m = _TABLE.match(req.route[:-len("/metrics")])
            if m and self.forward(Request("GET", m.group(0), req.headers)).status == 404:
                return _no_table(m)
        return None

    # ------------------------------------------------------------------ what it vends
    def _route(self, req: Request) -> Response:
        if (_CREDS.match(req.route)) and req.method == "GET" and self.b.credentials_endpoint != NONE:
            m = _CREDS.match(req.route)
            return self._serve_credentials(req, m, parse_qs(urlsplit(req.path).query))
        return super()._route(req)

    def _rewrite(self, resp: Response, req: Request | None = None) -> Response:
        data = _safe_json(resp.body)
        if resp.status != 200 or not isinstance(data, dict) or not ({"config", "storage-credentials"} & set(data)):
            return resp
        if not self.b.stage_create_metadata_location and req is not None and _operation(req) == "stageCreate":
            data.pop("metadata-location", None)
        if self.b.stale_load_304 and data.get("metadata-location"):  # what a conditional load would name
            resp = Response(resp.status, [*resp.headers, ("ETag", '"' + hashlib.sha256(data["metadata-location"].encode()).hexdigest()[:16] + '"')],
                            resp.body, resp.reason)
        if "metadata" in data or "config" in data:  # a table answer (a /credentials answer has no config)
            data.setdefault("config", {}).update(self.b.table_config)
        configs = [data.get("config") or {}] + [c.get("config") or {} for c in data.get("storage-credentials") or []]
        if self.b.vends == NONE:
            for config in configs:
                for key in KEY_FIELDS:
                    config.pop(key, None)
                # A SigV4 catalog on AWS names no private S3 endpoint (S3 is the public default); the
                # one SeaweedFS's answer carries would be a server-named endpoint for the user's own keys.
                config.pop("s3.endpoint", None)
            data.pop("storage-credentials", None)
        elif self.b.vends == NO_EXPIRY:
            for config in configs:
                config.pop("s3.session-token-expires-at-ms", None)
        if self.b.vends != NONE and self.b.credential_cache_s is not None:
            self._cache(data, configs)
        if self.b.storage_settings == TABLE_CONFIG:
            (data.get("config") or {}).pop("s3.region", None)  # the region is client.region, in the table config only
            for cred in data.get("storage-credentials") or []:
                for key in STORAGE_SETTINGS:
                    (cred.get("config") or {}).pop(key, None)
        if self.b.expiration_time:
            for config in configs:
                if config.get("s3.session-token-expires-at-ms"):
                    config["expiration-time"] = config["s3.session-token-expires-at-ms"]
        if self.b.vends != NONE and self.b.empty_storage_credential and "storage-credentials" in data:
            location = (data.get("metadata") or {}).get("location", "s3://")
            bucket_root = location.split("/", 3)[:3]
            data["storage-credentials"].append({"prefix": "/".join(bucket_root), "config": {}})
        return resp.with_json(data)

    def _cache(self, data: dict, configs: list[dict]) -> None:
        """Hand out the keys cached for this table location while the entry lives (see Behaviour)."""
        creds = data.get("storage-credentials") or []
        location = str((creds[0].get("prefix") if creds else None) or (data.get("metadata") or {}).get("location") or "")
        if not location:
            return
        now = time.time()
        with self._tok_lock:
            cached = self._cached_keys.get(location.rstrip("/"))
            if cached is not None and now < cached[1]:
                keys = cached[0]
                self.cache_hits += 1
            else:
                keys = {k: v for k, v in next((c for c in configs if c.get("s3.access-key-id")), {}).items() if k in KEY_FIELDS}
                if not keys:
                    return
                expires = int(keys.get("s3.session-token-expires-at-ms") or 0) / 1000 or now
                until = now + min(float(self.b.credential_cache_s or 0), max(0.0, expires - now) / 2)
                self._cached_keys = {k: v for k, v in self._cached_keys.items() if v[1] > now}  # bounded
                self._cached_keys[location.rstrip("/")] = (keys, until)
                self.keys_cached[location.rstrip("/")] = self.keys_cached.get(location.rstrip("/"), 0) + 1
        for config in configs:
            if config.get("s3.access-key-id"):
                config.update(keys)

    def _words(self, req: Request, resp: Response) -> Response:
        """SeaweedFS's error answers in Polaris's words (error_words=POLARIS): qualified names."""
        data = _safe_json(resp.body)
        error = (data or {}).get("error") if isinstance(data, dict) else None
        if resp.status not in (404, 409) or not isinstance(error, dict):
            return resp
        kind, message = str(error.get("type") or ""), str(error.get("message") or "")
        m = _TABLE.match(req.route) or _CREDS.match(req.route) or _TABLES.match(req.route)
        namespace = ".".join(_ns(m)) if m else (unquote(req.route.rsplit("/", 1)[-1]).replace(NS_SEP, ".")
                                                if "/namespaces/" in req.route else "")
        if kind == "NoSuchTableException" and m and "t" in m.groupdict():
            message = f"Table does not exist: {namespace}.{unquote(m['t'])}"
        elif kind == "NoSuchNamespaceException" and namespace:
            message = f"Namespace does not exist: {namespace}"
        elif kind == "AlreadyExistsException" and req.route.endswith("/namespaces"):
            created = ".".join((_safe_json(req.body) or {}).get("namespace") or [])
            message = f"Cannot create namespace {created}. Namespace already exists"
        elif kind == "CommitFailedException" and (uuids := re.search(r"UUID mismatch: (\S+) != (\S+)", message)):
            message = f"Requirement failed: UUID does not match: expected {uuids[1]} != {uuids[2]}"
        elif kind == "CommitFailedException":
            message = message.replace("Requirement failed: Requirement failed: ", "Requirement failed: ")
        return Response.iceberg_error(resp.status, kind, message)

    def refresh_endpoint(self, prefix: str, ns: list[str], name: str) -> str:
        path = (f"v1/{self.b.prefix}/namespaces/{quote(NS_SEP.join(ns), safe='')}"
                f"/tables/{quote(name, safe='')}/credentials")
        return path if self.refresh_endpoint_style == "relative" else f"{self.url}/{path}"


def _no_table(m: re.Match) -> Response:
    return Response.iceberg_error(404, "NoSuchTableException", f"Table does not exist: {'.'.join(_ns(m) + [unquote(m['t'])])}")


def _polaris_op(req: Request) -> str:
    """The operation name Polaris's 403 gives for a request (PolarisAuthorizableOperation)."""
    tail = req.route.split("/", 3)[-1] if req.route.count("/") >= 3 else ""
    kind = ("table" if "/tables/" in tail else "tables" if tail.endswith("/tables")
            else "namespace" if "namespaces/" in tail else "namespaces" if tail == "namespaces" else tail)
    return _POLARIS_OPS.get((req.method, kind), f"{req.method} {tail}")


def _operation(req: Request) -> str:
    """The Iceberg REST operation id of a mutation (the names Polaris' idempotency docs use)."""
    if req.route.endswith("/transactions/commit"):
        return "commitTransaction"
    if req.method == "POST" and req.route.endswith("/tables"):
        return "stageCreate" if (_safe_json(req.body) or {}).get("stage-create") else "createTable"
    if req.method == "POST" and "/tables/" in req.route:
        # A staged create's commit (assert-create) has no replay in Polaris: IcebergCatalogAdapter.updateTable
        # routes it apart (a real 1.7.0 answered its repeat 409 "table already exists").
        requirements = (_safe_json(req.body) or {}).get("requirements") or []
        staged = any(isinstance(r, dict) and r.get("type") == "assert-create" for r in requirements)
        return "updateTable(assert-create)" if staged else "updateTable"
    return f"{req.method} {req.route}"


def _covered(b, req: Request) -> bool:
    return "all" in b.idempotent_operations or _operation(req) in b.idempotent_operations


def _parseable(lifetime: str) -> str:
    """P1W -> P7D for the reference proxy's parser."""
    m = re.fullmatch(r"P(\d+)W", lifetime)
    return f"P{int(m[1]) * 7}D" if m else lifetime


def _oauth_error(status: int, error: str, description: str) -> Response:
    body = json.dumps({"error": error, "error_description": description}).encode()
    return Response(status, [("Content-Type", "application/json")], body)


__all__ = ["Emulator", "R2_TOKEN", "NO_GRANT_CLIENT", "ALL", "COMMITTED", "EXPIRING", "NO_EXPIRY", "NONE", "_ns"]


def _basic_client(authorization: str | None) -> tuple[str | None, str | None]:
    """A client's id and secret sent as HTTP Basic (RFC 6749 2.3.1: each form-encoded first), which
    a token endpoint must take beside the form's fields; DuckDB's iceberg extension sends them so."""
    if not authorization or not authorization.startswith("Basic "):
        return None, None
    try:
        decoded = base64.b64decode(authorization[len("Basic "):], validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return None, None
    client_id, sep, secret = decoded.partition(":")
    return (unquote_plus(client_id), unquote_plus(secret)) if sep else (None, None)


def connection(b: Behaviour, emu: Emulator) -> dict:
    """What a user of this family passes (`spark_conf(profile, ..., **connection)`): the profile's
    required inputs, nothing else."""
    from pyspark_catalog_ext.catalog.profiles import get_profile

    args: dict = {"uri": emu.url, "warehouse": b.warehouse}
    if b.auth == "oauth2":
        args["credential"] = emu.info.credential
        if get_profile(b.profile).oauth2_token_path is None:  # the family's IdP: here, the emulator
            args["oauth2_server_uri"] = emu.url + "/v1/oauth/tokens"
    elif b.auth == "token":
        args["token"] = R2_TOKEN
    else:
        args["region"] = "us-east-1"
        # SigV4 families vend no S3 keys: the user's own go to S3, and only to an endpoint the user
        # names (a server-named one is refused), as on AWS, where it is the public default.
        args["s3_endpoint"] = emu.s3_endpoint
    return args


def cli_args(b: Behaviour, emu: Emulator) -> list[str]:
    """`connection(b, emu)` as the CLI's options: `--profile` and one `--key value` per input."""
    out = ["--profile", b.profile]
    for key, value in connection(b, emu).items():
        out += [f"--{key.replace('_', '-')}", value]
    return out
