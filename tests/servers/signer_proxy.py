"""Loopback servers for the remote-signing tests.

- ``SignerProxy``: in front of a catalog whose table answers name a signer (the embedded lakehouse in
  signing mode), it records every sign request (scope, method, S3 URI, headers, body, status) and
  every token request, names itself as the signer in table answers (so sign requests pass through
  it), and can change what a table answer says: ``table_config`` entries added to each answer's
  config, ``signing_config`` as Iceberg 1.12's ``remote-signing-config`` field, or ``signer_uri``
  (another signer, e.g. an attacker's). ``as_signing_config`` answers the Iceberg 1.12 way instead
  of with ``s3.signer.*``: "endpoint" (a ``remote-signing-config`` with ``endpoint-path``) or "route"
  (the field alone: sign at the table's ``.../tables/{t}/sign``, which this proxy serves by the
  table's own signer endpoint), with ``signing_properties``/``signing_headers`` in it.
  ``config_overrides`` are added to ``/v1/config``'s overrides, ``drop_table_keys`` removed from
  each table answer's config. ``sign_delay_s`` slows each sign request (a long scan).
  ``sign_cache_control`` replaces the ``Cache-Control`` of signed answers ("": none, as a signer that
  says nothing about caching); ``sign_date_age_s`` moves a signed answer's ``X-Amz-Date`` that many
  seconds back (as a signer whose clock is behind: S3 would refuse that signature).
  Faults as for every ``BufferedProxy`` (``proxy.faults.add("redirect", "POST", "/sign/", status=307, ...)``).
- ``RefusingS3Proxy``: in front of S3, forwards every request untouched (``Host`` included, so SigV4
  verifies upstream) except the next ``refuse(path_regex, times)`` matching ones, answered 403
  AccessDenied as SeaweedFS words it (a signature S3 stopped accepting).
- ``Recorder``: an attacker's server; it records every request it gets (method, path, headers,
  body) and answers 200 with an empty JSON object.
"""
from __future__ import annotations

import json
import re
import threading
import time
from urllib.parse import unquote, urlsplit

from .base import BufferedProxy, Request, Response, ThreadedServer, read_request_body, send_response_head
from .s3_expiry_proxy import S3ExpiryProxy

SIGN_ROUTE = "/v1/aws/s3/sign"
_TABLE = re.compile(r"^(?P<base>/v1/[^/]+/namespaces/[^/]+/tables)(?:/(?P<t>[^/]+))?$")


class SignerProxy(BufferedProxy):
    def __init__(self, upstream: str, port: int = 0):
        super().__init__(upstream, port)
        self.signs: list[dict] = []
        self.token_requests = 0
        self.table_config: dict[str, str] = {}
        self.signing_config: dict | None = None
        self.signer_uri: str | None = None  # None: this proxy
        self.sign_delay_s = 0.0
        self.sign_cache_control: str | None = None  # None: the signer's own
        self.sign_date_age_s = 0.0
        self.config_overrides: dict[str, str] = {}
        self.drop_table_keys: set[str] = set()
        self.as_signing_config: str | None = None
        self.signing_properties: dict[str, str] = {}
        self.signing_headers: dict[str, list[str]] = {}
        self._routes: dict[str, str] = {}  # a table's .../sign route -> its signer endpoint
        self._lock = threading.Lock()

    def classify(self, req: Request) -> tuple[str, str | None]:
        route = req.route
        if route.startswith(SIGN_ROUTE) or route.endswith("/sign"):
            return "sign", None
        if route.endswith("/oauth/tokens"):
            return "oauth", None
        return "catalog", None

    def process(self, req: Request) -> Response:
        kind, _ = self.classify(req)
        if kind == "sign":
            if self.sign_delay_s:
                time.sleep(self.sign_delay_s)
            asked = req
            if not req.route.startswith(SIGN_ROUTE):  # a table's own route: its signer endpoint
                with self._lock:
                    endpoint = self._routes.get(req.route)
                if endpoint is None:
                    return Response.iceberg_error(404, "NoSuchTableException", "no table signs at this route")
                req = Request(req.method, "/" + endpoint.lstrip("/"), req.headers, req.body)
            resp = self.forward(req)
            body = req.json() or {}
            with self._lock:
                self.signs.append({"scope": req.route.rsplit("/", 1)[-1], "route": asked.route, "method": body.get("method"),
                                   "uri": body.get("uri"), "headers": body.get("headers") or {}, "body": body.get("body"),
                                   "properties": body.get("properties"), "status": resp.status,
                                   "authorization": req.header("Authorization"), "http_headers": dict(req.headers),
                                   "time": time.time(), "cache_control": resp.header("Cache-Control")})
            return self._rewrite_signed(resp)
        if kind == "oauth":
            with self._lock:
                self.token_requests += 1
            return self.forward(req)
        resp = self.forward(req)
        data = _json(resp.body)
        if resp.status == 200 and req.route.endswith("/v1/config") and isinstance(data, dict) and self.config_overrides:
            data["overrides"] = {**(data.get("overrides") or {}), **self.config_overrides}
            return resp.with_json(data)
        if resp.status == 200 and isinstance(data, dict) and isinstance(data.get("metadata"), dict):
            config = dict(data.get("config") or {})
            if "s3.signer.uri" in config:
                config["s3.signer.uri"] = self.signer_uri or self.url
            config.update(self.table_config)
            for key in self.drop_table_keys:
                config.pop(key, None)
            if self.as_signing_config and "s3.signer.endpoint" in config:
                endpoint = config.pop("s3.signer.endpoint")
                config.pop("s3.signer.uri", None)
                signing = {"properties": self.signing_properties, "headers": self.signing_headers}
                if self.as_signing_config == "endpoint":
                    signing.update({"base-uri": self.url, "endpoint-path": endpoint})
                else:
                    route = self._table_route(req)
                    with self._lock:
                        self._routes[route] = endpoint
                data["remote-signing-config"] = signing
            data["config"] = config
            if self.signing_config is not None:
                data["remote-signing-config"] = self.signing_config
            return resp.with_json(data)
        return resp

    def _rewrite_signed(self, resp: Response) -> Response:
        if resp.status != 200:
            return resp
        if self.sign_date_age_s:
            data = _json(resp.body) or {}
            aged = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() - self.sign_date_age_s))
            data["headers"] = {k: ([aged] if k.lower() == "x-amz-date" else v) for k, v in (data.get("headers") or {}).items()}
            resp = resp.with_json(data)
        if self.sign_cache_control is not None:
            headers = [(k, v) for k, v in resp.headers if k.lower() != "cache-control"]
            if self.sign_cache_control:
                headers.append(("Cache-Control", self.sign_cache_control))
            resp = Response(resp.status, headers, resp.body, resp.reason)
        return resp

    @staticmethod
    def _table_route(req: Request) -> str:
        m = _TABLE.match(req.route)
        assert m, req.route
        name = m.group("t") or (req.json() or {}).get("name")
        return f"{m.group('base')}/{unquote(str(name))}/sign"

    def signs_of(self, method: str | None = None, status: int | None = None) -> list[dict]:
        with self._lock:
            return [s for s in self.signs if (method is None or s["method"] == method)
                    and (status is None or s["status"] == status)]


def _json(body: bytes):
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


class RefusingS3Proxy(S3ExpiryProxy):
    """S3 as it is, but for the next ``times`` requests whose path matches ``refuse(...)``'s regex."""

    def __init__(self, upstream: str, port: int = 0):
        super().__init__(upstream, port=port)
        self._refusals: list[list] = []  # [regex, times left]

    def refuse(self, path: str, times: int = 1) -> None:
        with self._lock:
            self._refusals.append([path, times])

    def handle(self, h):
        with self._lock:
            hit = next((r for r in self._refusals if r[1] > 0 and re.search(r[0], urlsplit(h.path).path)), None)
            if hit is not None:
                hit[1] -= 1
                self.denied += 1
        if hit is None:
            return super().handle(h)
        self.log.append({"at": self.clock(), "method": h.command, "path": h.path, "akid": None, "status": 403})
        self._reject(h, "AccessDenied")


class Recorder(ThreadedServer):
    """Every request it gets, recorded; each answered 200 ``{}``."""

    def __init__(self, port: int = 0):
        super().__init__(port)
        self.requests: list[dict] = []
        self._lock = threading.Lock()

    def handle(self, h) -> None:
        body = read_request_body(h)
        with self._lock:
            self.requests.append({"method": h.command, "path": h.path, "headers": dict(h.headers.items()), "body": body})
        send_response_head(h, 200, "OK", [("Content-Type", "application/json"), ("Content-Length", "2")])
        if h.command != "HEAD":
            h.wfile.write(b"{}")
        h.wfile.flush()

    @property
    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"
