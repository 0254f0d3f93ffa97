"""Remote signing for the embedded lakehouse: one loopback HTTP server in front of SeaweedFS's
Iceberg catalog that

1. forwards every catalog call, and turns each table answer (load, create, stage-create) into a
   remote-signing one: no `storage-credentials`, no S3 keys in `config`, but
   `s3.remote-signing-enabled=true` and `s3.signer.uri`/`s3.signer.endpoint` pointing at itself.
   The endpoint is per table (`v1/aws/s3/sign/<scope id>`): the id stands for that table's
   location, so each table's FileIO can only get signatures for its own table;
2. serves Iceberg's S3 signer API at those endpoints (what Iceberg 1.10's S3V4RestSignerClient
   POSTs to `s3.signer.uri` + `s3.signer.endpoint`): the body is `{region, method, uri,
   headers: {name: [values]}, properties?, body?}`, the answer `{uri, headers: {name: [values]}}`.
   A request is signed with the lakehouse's keys only when every object it touches lies inside
   the endpoint's table location; anything else gets 403.

3. is the OAuth2 token endpoint for its clients (`POST /v1/oauth/tokens`, client credentials
   `CLIENT_ID:CLIENT_SECRET`): SeaweedFS's own OAuth2 client id/secret *are* its S3 keys, so
   clients that got those could skip the signer. The proxy hands out opaque tokens of its own and
   talks to SeaweedFS with the admin keys, which never leave this process.

SeaweedFS has no signer of its own, hence this server (stdlib http.server: the lakehouse must not
need a web framework).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import secrets
import time
import logging
import signal
import sys
import threading
import xml.etree.ElementTree as ET
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping
from urllib.parse import parse_qs, unquote, urlsplit

from .local import _alive

__all__ = ["SigningCatalogProxy", "SIGN_ENDPOINT", "REMOTE_SIGNING", "CLIENT_ID", "CLIENT_SECRET", "remote_signing_config", "sign_request"]

log = logging.getLogger("pyspark_catalog_ext.signer")

REMOTE_SIGNING = "remote-signing"
SIGN_ENDPOINT = "v1/aws/s3/sign"  # Iceberg 1.10's default `s3.signer.endpoint`; ours add /<scope id>
DELEGATION_HEADER = "X-Iceberg-Access-Delegation"
# Keys a table answer must never carry in remote-signing mode.
_STORAGE_SECRETS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.session-token-expires-at-ms")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding", "content-encoding", "te", "trailer", "upgrade"}
MAX_LOCATIONS = 10_000  # table locations remembered (oldest forgotten first)
MAX_SIGN_BODY = 1 << 20  # a sign request is small JSON; DeleteObjects bodies list at most 1000 keys
UPSTREAM_TIMEOUT = 30.0
# The OAuth2 client of the embedded lakehouse in remote-signing mode (loopback only, like the
# admin keys in local.py): it can reach the catalog and the signer, but it is no S3 key.
CLIENT_ID = "lakeclient"
CLIENT_SECRET = "lakeclientsecret"
TOKEN_SECONDS = 3600
TOKEN_PATH = "/v1/oauth/tokens"
_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def remote_signing_config(signer_uri: str, endpoint: str = SIGN_ENDPOINT) -> dict[str, str]:
    """The table `config` entries that make Iceberg's S3FileIO sign through `signer_uri`/`endpoint`."""
    return {"s3.remote-signing-enabled": "true", "s3.signer.uri": signer_uri.rstrip("/"), "s3.signer.endpoint": endpoint}


def sign_request(signer_uri: str, token: str, method: str, url: str, region: str, *,
                 headers: Mapping[str, str] | None = None, endpoint: str = SIGN_ENDPOINT, timeout: float = 10.0) -> "Any":
    """Ask a signer (Iceberg's REST signer API) to sign one S3 request; returns the `requests`
    response (200 with `{uri, headers}` when signed), e.g. to check a signer by hand."""
    import requests

    body: dict[str, Any] = {"region": region, "method": method, "uri": url, "headers": {k: [v] for k, v in (headers or {}).items()}}
    return requests.post(f"{signer_uri.rstrip('/')}/{endpoint.lstrip('/')}", json=body, timeout=timeout,
                         headers={"Authorization": f"Bearer {token}"})


def _sigv4_headers(access_key: str, secret_key: str, region: str, method: str, url: str, headers: Mapping[str, str]) -> dict[str, str]:
    """`headers` plus botocore's S3 SigV4 signature with `UNSIGNED-PAYLOAD` (the signer never sees
    the body, and Iceberg's client refuses payload signing anyway)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    class UnsignedPayloadAuth(S3SigV4Auth):
        def _should_sha256_sign_payload(self, request: Any) -> bool:
            return False

    request = AWSRequest(method=method, url=url, headers=dict(headers))
    UnsignedPayloadAuth(Credentials(access_key, secret_key), "s3", region).add_auth(request)
    return dict(request.headers.items())


class SigningCatalogProxy:
    """The catalog proxy + S3 signer described in the module docstring.

    `catalog_uri`: SeaweedFS's Iceberg REST endpoint; `s3_endpoint`: its S3 endpoint (only requests
    to it are signed); `access_key`/`secret_key`: the keys the signer signs with (never sent out).
    """

    def __init__(self, catalog_uri: str, s3_endpoint: str, access_key: str, secret_key: str,
                 port: int = 0, host: str = "127.0.0.1") -> None:
        from cachetools import TTLCache

        self.catalog_uri = catalog_uri.rstrip("/")
        self.s3_endpoint = s3_endpoint.rstrip("/")
        self._access_key = access_key
        self._secret_key = secret_key
        self._host, self._port = host, port
        self._scopes: OrderedDict[str, str] = OrderedDict()  # scope id -> "bucket/key-prefix" of a table
        self._scope_ids: dict[str, str] = {}  # "bucket/key-prefix" -> its scope id
        self._tokens: TTLCache = TTLCache(maxsize=4096, ttl=TOKEN_SECONDS)  # sha256(our token) -> True
        self._upstream_token: tuple[str, float] | None = None  # SeaweedFS bearer token, renewal time
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.signed = 0
        self.refused = 0

    def __repr__(self) -> str:
        return f"<SigningCatalogProxy {self.url if self._httpd else 'stopped'} -> {self.catalog_uri}>"

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    def start(self) -> "SigningCatalogProxy":
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"proxy": self})
        self._httpd = ThreadingHTTPServer((self._host, self._port), handler)
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name=f"remote-signer:{self._port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "SigningCatalogProxy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- table locations ------------------------------------------------------------------------
    def scope_for(self, location: str) -> str | None:
        """The scope id (signer endpoint suffix) allowing `location` (`s3://bucket/prefix`), or None
        for something that is no table location."""
        parts = urlsplit(location)
        if parts.scheme not in ("s3", "s3a", "s3n") or not parts.netloc:
            return None
        prefix = f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")
        if "/" not in prefix:
            return None  # a whole bucket is never a table location
        with self._lock:
            scope = self._scope_ids.get(prefix)
            if scope is None:
                scope = secrets.token_urlsafe(12)
                self._scopes[scope], self._scope_ids[prefix] = prefix, scope
                while len(self._scopes) > MAX_LOCATIONS:
                    _, old = self._scopes.popitem(last=False)
                    self._scope_ids.pop(old, None)
            return scope

    def _inside(self, scope: str, bucket: str, key: str) -> bool:
        with self._lock:
            prefix = self._scopes.get(scope)
        return prefix is not None and f"{bucket}/{key}".startswith(prefix + "/")

    # -- catalog side ---------------------------------------------------------------------------
    def rewrite_table_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """A LoadTableResult with keys removed and this signer advertised."""
        body.pop("storage-credentials", None)
        config = {k: v for k, v in (body.get("config") or {}).items() if k not in _STORAGE_SECRETS}
        scope = self.scope_for(str((body.get("metadata") or {}).get("location") or ""))
        # no location: an endpoint that refuses everything (the bare one) rather than none at all
        config.update(remote_signing_config(self.url, f"{SIGN_ENDPOINT}/{scope}" if scope else SIGN_ENDPOINT))
        body["config"] = config
        return body

    def issue_token(self, form: Mapping[str, list[str]]) -> dict[str, Any] | None:
        """An OAuth2 token answer for valid client credentials (or a token exchange of one of our
        tokens, which is how Iceberg refreshes), else None."""
        first = {k: v[0] for k, v in form.items() if v}
        grant = first.get("grant_type")
        if grant == "client_credentials":
            ok = secrets.compare_digest(first.get("client_id", ""), CLIENT_ID) and secrets.compare_digest(first.get("client_secret", ""), CLIENT_SECRET)
        elif grant == _TOKEN_EXCHANGE:
            ok = self.token_valid("Bearer " + first.get("subject_token", ""))
        else:
            ok = False
        if not ok:
            return None
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[hashlib.sha256(token.encode()).hexdigest()] = True
        return {"access_token": token, "token_type": "bearer", "expires_in": TOKEN_SECONDS,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}

    def token_valid(self, authorization: str | None) -> bool:
        """True if `authorization` is `Bearer <a token this proxy issued and not yet expired>`."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return False
        tag = hashlib.sha256(authorization[7:].strip().encode()).hexdigest()
        with self._lock:
            return bool(self._tokens.get(tag))

    def upstream_authorization(self) -> str:
        """`Bearer <token>` for SeaweedFS, fetched with the admin keys and renewed after 30 min."""
        import requests

        with self._lock:
            cached = self._upstream_token
        if cached is not None and time.monotonic() < cached[1]:
            return cached[0]
        resp = requests.post(self.catalog_uri + TOKEN_PATH, timeout=UPSTREAM_TIMEOUT, data={
            "grant_type": "client_credentials", "client_id": self._access_key, "client_secret": self._secret_key, "scope": "catalog"})
        resp.raise_for_status()
        value = "Bearer " + resp.json()["access_token"]
        with self._lock:
            self._upstream_token = (value, time.monotonic() + 1800)  # SeaweedFS tokens last 1 h
        return value

    # -- signer side ----------------------------------------------------------------------------
    def check_scope(self, scope: str, method: str, url: str, body: str | None) -> str | None:
        """None if the request stays inside the table location of `scope`, else why not."""
        parts, s3 = urlsplit(url), urlsplit(self.s3_endpoint)
        if (parts.scheme, parts.netloc) != (s3.scheme, s3.netloc):
            return f"not this lakehouse's S3 endpoint ({parts.scheme}://{parts.netloc})"
        path = unquote(parts.path).lstrip("/")  # path-style: /bucket/key
        bucket, _, key = path.partition("/")
        if not bucket:
            return "no bucket in the request"
        query = parse_qs(parts.query, keep_blank_values=True)
        if any(seg in (".", "..") for seg in key.split("/")):
            return "a key with . or .. segments (a server that normalizes paths would leave the table)"
        if key:
            return None if self._inside(scope, bucket, key) else f"s3://{bucket}/{key} is outside the table's location"
        if method == "GET" and "prefix" in query:  # ListObjects(V2) inside a table
            prefix = query["prefix"][0]
            return None if prefix and self._inside(scope, bucket, prefix.rstrip("/") + "/x") else f"listing s3://{bucket}/{prefix} is outside the table's location"
        if method == "POST" and "delete" in query:  # DeleteObjects: every key must be inside
            keys = _delete_keys(body or "")
            if not keys:
                return "a DeleteObjects request without keys"
            outside = [k for k in keys if not self._inside(scope, bucket, k) or any(seg in (".", "..") for seg in k.split("/"))]
            return None if not outside else f"deleting s3://{bucket}/{outside[0]} is outside the table's location"
        return f"a bucket-level {method} on s3://{bucket} is not table data"

    def sign(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Sign one S3SignRequest (already checked); the S3SignResponse."""
        method, url, region = str(request["method"]), str(request["uri"]), str(request.get("region") or "us-east-1")
        # Only headers the SDK cannot change after signing are signed (host is added from the URL).
        headers = {k: ",".join(v) if isinstance(v, list) else str(v) for k, v in (request.get("headers") or {}).items()
                   if k.lower().startswith("x-amz-") or k.lower() in ("content-md5", "content-type", "range")}
        headers.pop("x-amz-content-sha256", None)
        signed = _sigv4_headers(self._access_key, self._secret_key, region, method, url, headers)
        return {"uri": url, "headers": {k: [v] for k, v in signed.items()}}


def _delete_keys(body: str) -> list[str]:
    """Object keys of a DeleteObjects XML body (S3's own format; stdlib XML is enough)."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return []
    return [el.text or "" for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "Key"]


def _is_table_answer(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("metadata"), dict) and "metadata-location" in body


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # Iceberg's HTTP client keeps connections alive
    timeout = 60
    proxy: SigningCatalogProxy

    def log_message(self, fmt: str, *args: Any) -> None:  # no access log: URLs are fine, but keep stderr quiet
        pass

    def _reply(self, status: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _json(self, status: int, body: Any, extra: Mapping[str, str] | None = None) -> None:
        self._reply(status, json.dumps(body).encode(), {"Content-Type": "application/json", **(extra or {})})

    def _error(self, status: int, kind: str, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": kind, "code": status}})

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_SIGN_BODY * 8:
            raise ValueError("request body too large")
        return self.rfile.read(length) if length else b""

    def _dispatch(self) -> None:
        try:
            body = self._body()
        except ValueError as exc:
            self.close_connection = True
            return self._error(413, "BadRequestException", str(exc))
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/" + SIGN_ENDPOINT or path.startswith(f"/{SIGN_ENDPOINT}/"):
            return self._sign(path[len(SIGN_ENDPOINT) + 2:], body)
        if path == TOKEN_PATH:
            return self._token(body)
        if not self.proxy.token_valid(self.headers.get("Authorization")) and path != "/v1/config":
            return self._error(401, "NotAuthorizedException", "a bearer token from this catalog's /v1/oauth/tokens is required")
        return self._forward(body)

    def _token(self, raw: bytes) -> None:
        if self.command != "POST":
            return self._error(405, "BadRequestException", "the token endpoint takes POST")
        answer = self.proxy.issue_token(parse_qs(raw.decode("utf-8", "replace")))
        if answer is None:
            return self._json(401, {"error": "invalid_client", "error_description": "unknown client id/secret or token"})
        self._json(200, answer, {"Cache-Control": "no-store"})

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _dispatch

    def _sign(self, scope: str, raw: bytes) -> None:
        proxy = self.proxy
        if self.command != "POST":
            return self._error(405, "BadRequestException", "the signer takes POST")
        if not proxy.token_valid(self.headers.get("Authorization")):
            return self._error(401, "NotAuthorizedException", "a catalog bearer token is required to sign")
        try:
            request = json.loads(raw)
            method, url = request["method"].upper(), request["uri"]
        except (ValueError, KeyError, TypeError, AttributeError):
            return self._error(400, "BadRequestException", "the body must be an S3SignRequest: {region, method, uri, headers}")
        why = proxy.check_scope(scope, method, url, request.get("body"))
        if why is not None:
            with proxy._lock:
                proxy.refused += 1
            log.info("refused to sign %s %s: %s", method, url, why)
            return self._error(403, "ForbiddenException", f"not signing {method}: {why}")
        answer = proxy.sign(request)
        with proxy._lock:
            proxy.signed += 1
        # no-cache: Iceberg caches `private` answers for 30 s by method+URI; fresh ones are cheap here
        self._json(200, answer, {"Cache-Control": "no-cache"})

    def _forward(self, raw: bytes) -> None:
        import requests

        proxy = self.proxy
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP and k.lower() != DELEGATION_HEADER.lower()}
        headers["Accept-Encoding"] = "identity"
        headers.pop("Authorization", None)
        headers.pop("authorization", None)
        try:
            headers["Authorization"] = proxy.upstream_authorization()
        except Exception as exc:  # noqa: BLE001 - any failure to log in upstream is a 502 here
            return self._error(502, "ServiceUnavailableException", f"the signer could not log in to the catalog: {type(exc).__name__}")
        try:
            resp = requests.request(self.command, proxy.catalog_uri + self.path, headers=headers, data=raw or None,
                                    timeout=UPSTREAM_TIMEOUT, allow_redirects=False)
        except requests.RequestException as exc:
            return self._error(502, "ServiceUnavailableException", f"catalog unreachable: {type(exc).__name__}")
        content = resp.content
        if resp.ok and "json" in resp.headers.get("Content-Type", "") and content:
            try:
                body = json.loads(content)
            except ValueError:
                body = None
            if _is_table_answer(body):
                content = json.dumps(proxy.rewrite_table_answer(body)).encode()
        out = {k: v for k, v in resp.headers.items() if k.lower() not in _HOP_BY_HOP}
        self._reply(resp.status_code, content, out)


# -- detached mode: `local up --delegation remote-signing` runs the signer in its own process ------
def main(argv: list[str] | None = None) -> int:
    """Run the signer in the foreground for the embedded lakehouse (its admin keys sign)."""
    from .local import ADMIN_ACCESS_KEY, ADMIN_SECRET_KEY

    p = argparse.ArgumentParser(prog="python -m pyspark_catalog_ext.signer")
    p.add_argument("--catalog-uri", required=True)
    p.add_argument("--s3-endpoint", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--watch-pid", type=int, help="exit when this process (the lakehouse's weed) is gone")
    args = p.parse_args(argv)
    proxy = SigningCatalogProxy(args.catalog_uri, args.s3_endpoint, ADMIN_ACCESS_KEY, ADMIN_SECRET_KEY, port=args.port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    proxy.start()
    try:
        while not stop.wait(1.0):
            if args.watch_pid and not _alive(args.watch_pid):
                break
    except KeyboardInterrupt:
        pass
    proxy.stop()
    return 0



if __name__ == "__main__":
    sys.exit(main())
