"""A scripted Iceberg REST catalog on 127.0.0.1 for tests of the catalog client and what uses it.

`Scripted` (http.server in a daemon thread) answers each route with the responses a test lays out
(`on`; the last one repeats) and records every request it receives (`requests`); `R` is one scripted
response, which may also drop the connection or hang. `make` opens the package's `CatalogClient`
on it with a bearer token.
"""

from __future__ import annotations

import json
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pyspark_catalog_ext.catalog.rest import CatalogClient, open_catalog

TOKEN_1 = "tok1-AAAAsecretBBBB-0001"
T_PATH = "/v1/wh/namespaces/db/tables/t"


@dataclass
class R:
    """A scripted response. body: dict/list → JSON, str/bytes → raw."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    action: str | None = None  # "drop": close without answering; "hang": never answer in time


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers.items():
            if k.lower() == name.lower():
                return v
        return None

    def json(self) -> Any:
        return json.loads(self.body)


NOT_FOUND = R(404, {"error": {"message": "Path not found", "type": "NotFound", "code": 404}})


class Scripted:
    def __init__(self, tls: ssl.SSLContext | None = None, port: int = 0) -> None:
        self.routes: dict[tuple[str, str], list[R]] = {}
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else ~40 ms delayed-ACK stalls per keep-alive request

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path, _, query = self.path.partition("?")
                with scripted.lock:
                    scripted.seen.append(Seen(self.command, path, query, dict(self.headers.items()), body))
                    queue = scripted.routes.get((self.command, path))
                    r = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else NOT_FOUND
                if r.action == "drop":
                    self.close_connection = True
                    return
                if r.action == "hang":
                    scripted.release.wait(10)
                    self.close_connection = True
                    return
                if isinstance(r.body, (dict, list)):
                    payload, ctype = json.dumps(r.body).encode(), "application/json"
                elif isinstance(r.body, str):
                    payload, ctype = r.body.encode(), "text/plain"
                else:
                    payload, ctype = (r.body or b""), "application/octet-stream"
                self.send_response(r.status)
                if payload:
                    self.send_header("Content-Type", r.headers.get("Content-Type", ctype))
                for k, v in r.headers.items():
                    if k != "Content-Type":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_HEAD = do_PUT = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.uri = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()

    def on(self, method: str, path: str, *responses: R) -> None:
        """Responses are served in order; the last one repeats."""
        with self.lock:
            self.routes[(method, path)] = list(responses)

    def config(self, prefix: str | None = "wh", lifetime: str | None = None,
               endpoints: list[str] | None = None, **overrides: str) -> None:
        body: dict[str, Any] = {"defaults": {"warehouse": "s3://wh"}, "overrides": dict(overrides)}
        if prefix:
            body["overrides"]["prefix"] = prefix
        if lifetime:
            body["idempotency-key-lifetime"] = lifetime
        if endpoints is not None:
            body["endpoints"] = endpoints
        self.on("GET", "/v1/config", R(200, body))

    def requests(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen
                    if (method is None or s.method == method) and (path is None or s.path == path)]

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def make(srv: Scripted, **props: Any) -> CatalogClient:
    props.setdefault("token", TOKEN_1)
    kwargs = {k: props.pop(k) for k in ("on_exchange", "timeout", "retries", "delegation") if k in props}
    return open_catalog({"uri": srv.uri, "warehouse": "wh", **props}, **kwargs)
