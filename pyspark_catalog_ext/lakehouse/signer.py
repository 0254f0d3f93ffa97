"""Remote signing for the embedded lakehouse (SeaweedFS has no signer): one loopback HTTP server in
front of SeaweedFS's Iceberg catalog that
1. forwards every catalog call, turning each table answer into a remote-signing one with a signer
   endpoint per table (`v1/aws/s3/sign/<scope id>`), so a FileIO gets signatures for its own table;
2. signs there only an allow-list (`check_request`, s3_allow_list.py) inside the table's location;
   a DeleteObjects gets this server's relay instead, which sends S3 only the body it checked;
3. is its clients' OAuth2 token endpoint, so SeaweedFS's keys never leave this process.
A table's scope is the location in the catalog's *stored* metadata, never one a request carries;
caches are bounded per OAuth2 client. The HTTP handler is signer_handler.py.

Why: docs/signing.md, section 'Remote signing' ("The embedded lakehouse's signer").
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from pyspark_catalog_ext.catalog.storage_keys import (
    S3_ACCESS_KEY_ID,
    S3_EXPIRY,
    S3_REMOTE_SIGNING_ENABLED,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    S3_SIGNER_ENDPOINT,
    S3_SIGNER_URI,
)
from pyspark_catalog_ext.lakehouse.canonical import Route, parse_json
from pyspark_catalog_ext.lakehouse.filer import FilerAccess
from pyspark_catalog_ext.lakehouse.guard import LocationGuard, StoredTable
from pyspark_catalog_ext.lakehouse.proxy import UPSTREAM_TIMEOUT, ProxyServer
from pyspark_catalog_ext.lakehouse.s3_allow_list import BUCKET_OPS, OBJECT_OPS, REFUSED_HEADERS, bad_key, delete_keys, operation
from pyspark_catalog_ext.lakehouse.signer_handler import DELETE_PATH, SignerHandler
from pyspark_catalog_ext.lakehouse.tokens import CLIENT_ID, TOKEN_SECONDS, ClientTokens

__all__ = ["SigningCatalogProxy", "SIGN_ENDPOINT", "REMOTE_SIGNING", "CLIENT_ID", "remote_signing_config", "sign_request"]

REMOTE_SIGNING = "remote-signing"
SIGN_ENDPOINT = "v1/aws/s3/sign"  # Iceberg 1.10's default `s3.signer.endpoint`; ours add /<scope id>
# Keys a table answer must never carry in remote-signing mode.
_STORAGE_SECRETS = (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN, S3_EXPIRY)
MAX_LOCATIONS = 10_000  # table locations remembered per client (oldest forgotten first)
DELETE_TICKET_SECONDS = 300  # long enough for the SDK's retries of one DeleteObjects
MAX_DELETE_TICKETS = 1024  # per client
# A table endpoint re-checks that the catalog still holds its table (uuid and location) when its last
# check is this old; a drop, rename or move through this proxy ends its endpoints at once.
SCOPE_RECHECK_SECONDS = 5.0


def remote_signing_config(signer_uri: str, endpoint: str = SIGN_ENDPOINT) -> dict[str, str]:
    """The table `config` entries that make Iceberg's S3FileIO sign through `signer_uri`/`endpoint`."""
    return {S3_REMOTE_SIGNING_ENABLED: "true", S3_SIGNER_URI: signer_uri.rstrip("/"), S3_SIGNER_ENDPOINT: endpoint}


def sign_request(signer_uri: str, token: str, method: str, url: str, region: str, *,
                 headers: Mapping[str, str] | None = None, endpoint: str = SIGN_ENDPOINT, timeout: float = 10.0) -> Any:
    """Ask a signer (Iceberg's REST signer API) to sign one S3 request; returns the `requests`
    response (200 with `{uri, headers}` when signed), e.g. to check a signer by hand."""
    import requests

    body: dict[str, Any] = {"region": region, "method": method, "uri": url, "headers": {k: [v] for k, v in (headers or {}).items()}}
    return requests.post(f"{signer_uri.rstrip('/')}/{endpoint.lstrip('/')}", json=body, timeout=timeout,
                         headers={"Authorization": f"Bearer {token}"}, allow_redirects=False)


def _sigv4_headers(access_key: str, secret_key: str, region: str, method: str, url: str, headers: Mapping[str, str],
                   payload: bytes | None = None) -> dict[str, str]:
    """`headers` plus botocore's S3 SigV4 signature: with `UNSIGNED-PAYLOAD` when `payload` is None
    (the signer never sees object data, and Iceberg's client refuses payload signing anyway), else
    covering `payload` (x-amz-content-sha256 and Content-MD5 computed here, not taken from a client)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    class PayloadAuth(S3SigV4Auth):
        def _should_sha256_sign_payload(self, request: Any) -> bool:
            return payload is not None

    headers = {k: v for k, v in headers.items() if k.lower() not in ("content-md5", "x-amz-content-sha256")}
    if payload is not None:
        headers["Content-MD5"] = base64.b64encode(hashlib.md5(payload).digest()).decode()  # noqa: S324 - S3's integrity header
    request = AWSRequest(method=method, url=url, headers=headers, data=payload)
    PayloadAuth(Credentials(access_key, secret_key), "s3", region).add_auth(request)
    return dict(request.headers.items())


class _Scope:
    """One signer endpoint: the table prefix it signs for and what binds it. `ident`/`uuid`: the
    table it was issued for (None: bound to nothing but its prefix, for in-process callers that
    checked the location themselves); `expires` (monotonic): when the last token that loaded the
    table or signed through this endpoint expires."""

    __slots__ = ("prefix", "ident", "uuid", "expires", "verified", "ended")

    def __init__(self, prefix: str, ident: Any, uuid: str, expires: float) -> None:
        self.prefix, self.ident, self.uuid, self.expires = prefix, ident, uuid, expires
        self.verified = time.monotonic()
        self.ended = False  # its table was dropped, renamed or moved (kept, bounded, to say so)


class SigningCatalogProxy(ProxyServer):
    """The catalog proxy + S3 signer described in the module docstring.

    `catalog_uri`: SeaweedFS's Iceberg REST endpoint; `s3_endpoint`: its S3 endpoint (only requests
    to it are signed); `access_key`/`secret_key`: the keys the signer signs with (never sent out);
    `clients`: OAuth2 client id -> secret of the clients it serves (default: `CLIENT_ID` with a
    random secret, see `.clients`); `filer`: the lakehouse's filer access (the guard's rollbacks);
    `token_seconds`: how long its tokens (and so its table endpoints) live; `index_at_start`: its
    location guard indexes the catalog's namespaces as it starts (guard.py).
    """

    thread_name = "remote-signer"

    def __init__(self, catalog_uri: str, s3_endpoint: str, access_key: str, secret_key: str,
                 port: int = 0, host: str = "127.0.0.1", clients: Mapping[str, str] | None = None, *,
                 filer: FilerAccess | None = None, token_seconds: int = TOKEN_SECONDS, index_at_start: bool = False) -> None:
        self.catalog_uri = catalog_uri.rstrip("/")
        self.s3_endpoint = s3_endpoint.rstrip("/")
        super().__init__(port, host)
        self._access_key = access_key
        self._secret_key = secret_key
        self.token_seconds = int(token_seconds)
        self.tokens = ClientTokens(dict(clients) if clients else {CLIENT_ID: secrets.token_urlsafe(32)}, self.token_seconds)
        self.clients: dict[str, str] = self.tokens.clients
        # Per client, each bounded: client id -> its entries (a flood evicts only the flooder's own).
        self._scopes: dict[str, OrderedDict[str, _Scope]] = {}  # scope id -> its scope
        self._scope_ids: dict[str, dict[tuple, str]] = {}  # (prefix, ident, uuid) -> its scope id
        # DeleteObjects relay tickets: ticket -> (S3 URL, region, sha256 of the body that was checked)
        self._tickets: dict[str, Any] = {}
        self.guard = LocationGuard(self.catalog_uri, self.s3_endpoint, access_key, secret_key, filer=filer, index_at_start=index_at_start)
        self.guard.on_table_change(self.forget_table)
        self._lock = threading.Lock()
        self.signed = 0
        self.refused = 0

    def __repr__(self) -> str:
        return f"<SigningCatalogProxy {self.url if self._httpd else 'stopped'} -> {self.catalog_uri}>"

    # -- per-client state ------------------------------------------------------------------------
    def _client_caches(self, client: str) -> tuple[OrderedDict[str, _Scope], dict[tuple, str], Any]:
        """(scopes, scope ids, tickets) of `client`, created on first use (under self._lock).
        Only configured clients get any: their number is bounded by the configuration."""
        from cachetools import TTLCache

        if client not in self._scopes:
            self._scopes[client], self._scope_ids[client] = OrderedDict(), {}
            self._tickets[client] = TTLCache(maxsize=MAX_DELETE_TICKETS, ttl=DELETE_TICKET_SECONDS)
        return self._scopes[client], self._scope_ids[client], self._tickets[client]

    # -- table locations ------------------------------------------------------------------------
    def scope_for(self, location: str, client: str = CLIENT_ID, *, expires: float | None = None,
                  table: StoredTable | None = None) -> str | None:
        """The scope id (signer endpoint suffix) of `client` allowing `location` (`s3://bucket/prefix`,
        taken from the catalog's stored metadata), or None for something that is no table location.
        The endpoint lives until `expires` (monotonic; the expiry of the token that loaded the
        table; default `token_seconds` from now), moved on by each live token signing through it,
        and with `table` only while the catalog still holds that table (same uuid and location).
        Bound to the token's expiry, not to the token: Iceberg's signer client logs in on its own
        (on each executor), so the tokens that sign are not the one that loaded the table."""
        parts = urlsplit(location)
        if parts.scheme not in ("s3", "s3a", "s3n") or not parts.netloc:
            return None
        prefix = f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")
        if "/" not in prefix:
            return None  # a whole bucket is never a table location
        ident, uuid = (table.ident, table.uuid) if table is not None else (None, "")
        key = (prefix, ident, uuid)
        until = expires if expires is not None else time.monotonic() + self.token_seconds
        with self._lock:
            scopes, scope_ids, _ = self._client_caches(client)
            scope = scope_ids.get(key)
            entry = scopes.get(scope) if scope is not None else None
            if entry is not None and not entry.ended and time.monotonic() < entry.expires:
                entry.expires = max(entry.expires, until)
                return scope
            scope = secrets.token_urlsafe(12)
            scopes[scope] = _Scope(prefix, ident, uuid, until)
            scope_ids[key] = scope
            while len(scopes) > MAX_LOCATIONS:
                _, old = scopes.popitem(last=False)
                scope_ids.pop((old.prefix, old.ident, old.uuid), None)
            return scope

    def forget_table(self, ident: Any) -> None:
        """End every endpoint issued for table `ident` (it was dropped, renamed, moved, rolled back)."""
        with self._lock:
            for client, scopes in self._scopes.items():
                for entry in scopes.values():
                    if entry.ident == ident and not entry.ended:
                        entry.ended = True
                        self._scope_ids[client].pop((entry.prefix, entry.ident, entry.uuid), None)

    def _still_the_table(self, entry: _Scope) -> bool | None:
        """The catalog still holds the table the scope was issued for (same uuid and location):
        checked again when the last check is SCOPE_RECHECK_SECONDS old; None when it cannot be
        told now (the catalog did not answer)."""
        if entry.ident is None or time.monotonic() - entry.verified < SCOPE_RECHECK_SECONDS:
            return True
        checked_before, entry.verified = entry.verified, time.monotonic()  # one recheck at a time
        try:
            current = self.guard.load_stored(entry.ident) or self.guard.staged(entry.ident)
        except Exception:  # noqa: BLE001 - cannot tell: sign nothing now, ask again next time
            entry.verified = checked_before
            return None
        return not (current is None or current.uuid != entry.uuid or current.location != entry.prefix
                    or self.guard.quarantined(entry.ident))

    def _live_scope(self, scope: str, client: str, token_expires: float | None) -> _Scope | str | None:
        """The scope `scope` of `client` (used with a token expiring at `token_expires`), or why it
        cannot sign now, or None if there is no such scope (then every key is outside it)."""
        with self._lock:
            scopes = self._scopes.get(client)
            entry = scopes.get(scope) if scopes is not None else None
            now = time.monotonic()
            if entry is not None and now >= entry.expires:
                # Its last token has expired. A client that renews its token only after the signer's
                # 401 (PyIceberg's) comes back just after that: within one token lifetime, a live
                # token of the same client revives the endpoint once the catalog confirms the table
                # is still the one it was issued for. Later, or unbound (no table to ask about): dead.
                if token_expires is None or entry.ident is None or now >= entry.expires + self.token_seconds:
                    return "this table endpoint outlived the tokens that loaded and used it: load the table again"
                entry.verified = 0.0  # ask the catalog below, before signing anything
            if entry is not None and token_expires is not None:
                entry.expires = max(entry.expires, token_expires)
        if entry is None:
            return None
        if entry.ended:
            return "the table this endpoint was issued for was dropped, renamed or moved: load it again"
        still = self._still_the_table(entry)
        if still is None:
            return "the catalog could not confirm the table this endpoint was issued for; retry"
        if not still:
            self.forget_table(entry.ident)
            return "the table this endpoint was issued for was dropped, renamed or moved: load it again"
        return entry

    def _inside(self, scope: str, bucket: str, key: str, client: str = CLIENT_ID) -> bool:
        entry = self._live_scope(scope, client, None)
        return isinstance(entry, _Scope) and f"{bucket}/{key}".startswith(entry.prefix + "/")

    # -- catalog side ---------------------------------------------------------------------------
    def table_for_answer(self, route: Route, raw: bytes) -> StoredTable | None:
        """The table a table answer's signer endpoint may sign for: the catalog's stored metadata of
        the table the request named, loaded by its identifier (never a location the request or the
        answer carries), or for a staged table what the guard accepted; None when there is none
        (the endpoint then signs nothing)."""
        if route.name in ("load-table", "commit-table"):
            ident = route.ident
        elif route.name == "create-table":
            body = parse_json(raw)
            name = body.get("name") if isinstance(body, dict) else None
            if not isinstance(name, str):
                return None
            ident = (route.prefix, route.namespace, name)
        else:
            return None
        stored = self.guard.load_stored(ident)
        if stored is not None and stored.location:
            return stored
        staged = self.guard.staged(ident)
        return staged if staged is not None and staged.location else None

    def rewrite_table_answer(self, body: dict[str, Any], location: str | None = None, client: str = CLIENT_ID, *,
                             expires: float | None = None, table: StoredTable | None = None) -> dict[str, Any]:
        """A LoadTableResult with keys removed and this signer advertised for `table` (see
        `table_for_answer`), or for `location` (None: the answer's own, for callers that checked
        it themselves)."""
        body.pop("storage-credentials", None)
        config = {k: v for k, v in (body.get("config") or {}).items() if k not in _STORAGE_SECRETS}
        if table is not None:
            location = f"s3://{table.location}"
        elif location is None:
            location = str((body.get("metadata") or {}).get("location") or "")
        scope = self.scope_for(location, client, expires=expires, table=table) if location else None
        # no location: an endpoint that refuses everything (the bare one) rather than none at all
        config.update(remote_signing_config(self.url, f"{SIGN_ENDPOINT}/{scope}" if scope else SIGN_ENDPOINT))
        body["config"] = config
        return body

    def issue_token(self, form: Mapping[str, list[str]], authorization: str | None = None) -> dict[str, Any] | None:
        """An OAuth2 token answer for our clients (tokens.py), else None."""
        return self.tokens.issue(form, authorization)

    def token_grant(self, authorization: str | None) -> tuple[str, float] | None:
        """(client, expiry) of the live token `authorization` (`Bearer <token>`) carries, or None."""
        return self.tokens.grant(authorization)

    def token_client(self, authorization: str | None) -> str | None:
        """The client whose live token `authorization` (`Bearer <token>`) carries, or None."""
        return self.tokens.client_of(authorization)

    def upstream_authorization(self) -> str:
        """`Bearer <token>` for SeaweedFS, fetched with the admin keys and renewed after 30 min."""
        return self.guard.authorization()

    # -- signer side ----------------------------------------------------------------------------
    def check_request(self, scope: str, method: str, url: str, headers: Mapping[str, Any] | None = None,
                      body: str | None = None, client: str = CLIENT_ID, token_expires: float | None = None) -> str | None:
        """None if the S3 request is on the allow-list (module docstring) and stays inside the table
        location of `client`'s `scope` (used with a token expiring at `token_expires`), else a
        one-line reason."""
        if method not in {op[1] for op in OBJECT_OPS + BUCKET_OPS}:
            return f"the method {method[:20]!r} is not an S3 data operation"
        for name in headers or {}:
            if str(name).lower().startswith(REFUSED_HEADERS):
                return f"the header {name} (a copy source, ACL, tags or object lock) is never signed"
        if any(ord(c) <= 32 or ord(c) == 127 for c in url):
            return "a URI with spaces or control characters"
        try:
            parts, s3 = urlsplit(url), urlsplit(self.s3_endpoint)
            parts.port  # noqa: B018 - raises ValueError on a bad port
            query = parse_qsl(parts.query, keep_blank_values=True)  # "?delete" is a key with no "="
        except ValueError:
            return "an unparsable URI"
        if "@" in parts.netloc:
            return "a URI with user info (@host) is not this lakehouse's S3 endpoint"
        if (parts.scheme, parts.netloc) != (s3.scheme, s3.netloc) or parts.fragment:
            return f"not this lakehouse's S3 endpoint ({parts.scheme}://{parts.netloc})"
        params = dict(query)
        if len(params) != len(query):
            return "a query parameter given twice"
        bucket, _, key = unquote(parts.path).lstrip("/").partition("/")  # path-style: /bucket/key
        if not bucket:
            return "no bucket in the request"
        op = operation(OBJECT_OPS if key else BUCKET_OPS, method, params)
        if op is None:
            names = ",".join(sorted(params)) or "no query"
            return f"{method} {'object' if key else 'bucket'} request with {names[:80]} is not on the signer's allow-list"
        if op == "ListObjects" and params.get("list-type", "2") != "2":
            return "list-type must be 2"
        entry = self._live_scope(scope, client, token_expires)
        if isinstance(entry, str):
            return entry
        prefix = entry.prefix if entry is not None else None

        def inside(k: str) -> bool:
            return prefix is not None and f"{bucket}/{k}".startswith(prefix + "/")

        if key:
            return bad_key(key) or (None if inside(key) else f"s3://{bucket}/{key} is outside the table's location")
        if op == "ListObjects":  # the prefix itself must be inside, at a / boundary ("t" would list "t2/" too)
            listed = params["prefix"]
            why = bad_key(listed)
            if why or not inside(listed):
                return f"listing s3://{bucket}/{listed} is outside the table's location ({why or 'the prefix must start with the table location and /'})"
            return None
        keys = delete_keys(body)  # DeleteObjects: the body is checked here and bound by the relay
        if isinstance(keys, str):
            return keys
        for k in keys:
            why = bad_key(k) or (None if inside(k) else "outside the table's location")
            if why:
                return f"deleting s3://{bucket}/{k[:200]}: {why}"
        return None

    def sign(self, request: Mapping[str, Any], client: str = CLIENT_ID) -> dict[str, Any]:
        """Sign one S3SignRequest (already checked); the S3SignResponse."""
        method, url, region = str(request["method"]).upper(), str(request["uri"]), str(request.get("region") or "us-east-1")
        if method == "POST" and "delete" in dict(parse_qsl(urlsplit(url).query, keep_blank_values=True)):
            # DeleteObjects: no signature leaves this process; the client sends the body to the relay,
            # which forwards it only if it is the body checked here.
            digest = hashlib.sha256(str(request["body"]).encode("utf-8")).hexdigest()
            ticket = secrets.token_urlsafe(24)
            with self._lock:
                self._client_caches(client)[2][ticket] = (url, region, digest)
            return {"uri": f"{self.url}/{DELETE_PATH}/{ticket}?delete", "headers": {}}
        # Only headers the SDK cannot change after signing are signed (host is added from the URL).
        headers = {k: ",".join(v) if isinstance(v, list) else str(v) for k, v in (request.get("headers") or {}).items()
                   if k.lower().startswith("x-amz-") or k.lower() in ("content-md5", "content-type", "range")}
        signed = _sigv4_headers(self._access_key, self._secret_key, region, method, url, headers)
        return {"uri": url, "headers": {k: [v] for k, v in signed.items()}}

    def relay_delete(self, ticket: str, body: bytes) -> tuple[int, bytes, str] | str:
        """Send a DeleteObjects body to S3 if `ticket` is live and `body` is the one checked when it
        was issued: (status, answer, content type), else why not."""
        import requests

        with self._lock:
            entry = next((e for t in self._tickets.values() if (e := t.get(ticket)) is not None), None)
        if entry is None:
            return "unknown or expired DeleteObjects ticket: ask the signer again"
        url, region, digest = entry
        if not secrets.compare_digest(hashlib.sha256(body).hexdigest(), digest):
            return "this body is not the DeleteObjects body the signer checked"
        headers = _sigv4_headers(self._access_key, self._secret_key, region, "POST", url, {"Content-Type": "application/xml"}, payload=body)
        resp = requests.post(url, data=body, headers=headers, timeout=UPSTREAM_TIMEOUT, allow_redirects=False)
        return resp.status_code, resp.content, resp.headers.get("Content-Type", "application/xml")


SigningCatalogProxy.handler = SignerHandler
