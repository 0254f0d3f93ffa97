"""The HTTP machinery the lakehouse's two proxies share (the location guard and the remote signer):
a bounded threading server, bounded request bodies, Iceberg-shaped JSON errors."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

__all__ = ["BoundedHTTPServer", "ProxyHandler", "ProxyServer", "error_body", "HOP_BY_HOP", "MAX_CATALOG_BODY", "MAX_TOKEN_BODY",
           "TOKEN_PATH", "UPSTREAM_TIMEOUT"]

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding", "content-encoding", "te", "trailer", "upgrade"}
MAX_CATALOG_BODY = 8 << 20  # catalog calls forwarded upstream (commits carry metadata updates)
MAX_TOKEN_BODY = 64 << 10  # an OAuth2 form
_CONTENT_LENGTH = re.compile(r"[0-9]{1,12}")  # int() would also take "-1", "+1", "1_0" and non-ASCII digits
TOKEN_PATH = "/v1/oauth/tokens"
UPSTREAM_TIMEOUT = 30.0
MAX_CONNECTIONS = 256  # open client connections (one thread each); more are closed at once


class BoundedHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with daemon threads and at most MAX_CONNECTIONS of them: an idle
    keep-alive connection holds its thread until the handler's timeout, so without a bound a
    client opening connections could make threads without end."""

    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 drops SYNs of a burst (a 1 s client retry each, measured)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[misc]
        finally:
            self._slots.release()


class ProxyHandler(BaseHTTPRequestHandler):
    """What every proxy of the lakehouse answers with: bounded bodies, JSON errors, no access log."""

    protocol_version = "HTTP/1.1"  # Iceberg's HTTP client keeps connections alive
    timeout = 60
    # headers and body go out in two writes: with Nagle on, the second waits for the client's
    # delayed ACK (40 ms per answer, measured on loopback)
    disable_nagle_algorithm = True

    def log_message(self, fmt: str, *args: Any) -> None:  # no access log: URLs are fine, but keep stderr quiet
        pass

    def _reply(self, status: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection:  # said, so that a keep-alive client does not send its next request into a closed socket
            self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _json(self, status: int, body: Any, extra: Mapping[str, str] | None = None) -> None:
        self._reply(status, json.dumps(body).encode(), {"Content-Type": "application/json", **(extra or {})})

    def _error(self, status: int, kind: str, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": kind, "code": status}})

    def raw_target(self) -> str:
        """The request target as the client sent it. `self.path` is not: http.server reduces a
        leading `//` to `/` there, which SeaweedFS would not (another route)."""
        words = self.requestline.split()
        return words[1] if len(words) == 3 else self.path

    def _drained(self, limit: int = MAX_TOKEN_BODY) -> bool:
        """Read and drop the body of a request refused before its body was read, so that the
        connection can carry the next request; False where the stream cannot be framed (or the
        body is over `limit`): the answer must then close the connection."""
        try:
            self._body(limit)
        except ValueError:
            return False
        return True

    def _body(self, limit: int) -> bytes:
        """The request body, at most `limit` bytes; ValueError (status, reason) for anything else.
        The length must be plain digits: `int("-1")` would make read() wait for the stream's end."""
        if self.headers.get("Transfer-Encoding"):
            raise ValueError(411, "Transfer-Encoding is not accepted here: send the body with a Content-Length")
        values = {v.strip() for v in self.headers.get_all("Content-Length") or []}
        if not values:
            return b""
        if len(values) != 1 or not _CONTENT_LENGTH.fullmatch(next(iter(values))):
            raise ValueError(400, "Content-Length must be one non-negative decimal number")
        length = int(next(iter(values)))
        if length > limit:
            raise ValueError(413, f"request body of {length} bytes is over this endpoint's {limit}-byte limit")
        return self.rfile.read(length) if length else b""


def error_body(status: int, kind: str, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()


_Server = TypeVar("_Server", bound="ProxyServer")


class ProxyServer:
    """A proxy's life on loopback: bound on `start()` (port 0: a free one), served by one daemon
    thread, stopped at once. Subclasses name their `handler` class, which sees the proxy as `proxy`."""

    handler: type[ProxyHandler]
    thread_name = "lakehouse-proxy"

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        self._host, self._port = host, port
        self._httpd: BoundedHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    def start(self: _Server) -> _Server:
        if self._httpd is None:
            bound = type(f"_Bound{self.handler.__name__}", (self.handler,), {"proxy": self})
            self._httpd = BoundedHTTPServer((self._host, self._port), bound)
            self._port = self._httpd.server_address[1]
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                            name=f"{self.thread_name}:{self._port}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self: _Server) -> _Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
