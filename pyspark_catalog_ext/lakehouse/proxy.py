"""The HTTP machinery the lakehouse's two proxies share (the location guard and the remote signer):
a bounded threading server, bounded request bodies, Iceberg-shaped JSON errors."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

__all__ = ["BoundedHTTPServer", "HEADER_DEADLINE", "IDLE_TIMEOUT", "MAX_CONNECTIONS", "ProxyHandler", "ProxyServer", "error_body", "HOP_BY_HOP", "MAX_CATALOG_BODY", "MAX_TOKEN_BODY",
           "TOKEN_PATH", "UPSTREAM_TIMEOUT"]

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding", "content-encoding", "te", "trailer", "upgrade"}
MAX_CATALOG_BODY = 8 << 20  # catalog calls forwarded upstream (commits carry metadata updates)
MAX_TOKEN_BODY = 64 << 10  # an OAuth2 form
_CONTENT_LENGTH = re.compile(r"[0-9]{1,12}")  # int() would also take "-1", "+1", "1_0" and non-ASCII digits
TOKEN_PATH = "/v1/oauth/tokens"
UPSTREAM_TIMEOUT = 30.0
MAX_CONNECTIONS = 256  # open client connections (one thread each)
IDLE_TIMEOUT = 30.0  # a kept-alive connection waiting for its next request is closed after this
HEADER_DEADLINE = 10.0  # from a request's first byte to its last header line, however slowly they come


class BoundedHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with daemon threads and at most MAX_CONNECTIONS of them. A connection is
    either idle (kept alive, waiting for a request) or busy. At the bound, a new connection takes
    the place of the longest-idle one, so idle connections, from whomever (every local process is
    127.0.0.1 here), never lock another client out; a request's headers must arrive within
    HEADER_DEADLINE, so slow senders cannot hold the busy places either. A daemon reaper closes
    connections idle past IDLE_TIMEOUT or past the header deadline; it ends with the server."""

    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 drops SYNs of a burst (a 1 s client retry each, measured)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        # socket -> (state, since): "idle" waits for a request line, "headers" reads one, "busy" serves it
        self._connections: dict[Any, tuple[str, float]] = {}
        self._stopped = threading.Event()
        threading.Thread(target=self._reap, name="lakehouse-proxy-reaper", daemon=True).start()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            if len(self._connections) >= MAX_CONNECTIONS and not self._evict_idle():
                evicted = False
            else:
                self._connections[request] = ("idle", time.monotonic())
                evicted = True
        if not evicted:
            self.shutdown_request(request)  # every place is serving a request: refuse, do not queue
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._forget(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[misc]
        finally:
            self._forget(request)

    def mark(self, request: Any, state: str) -> None:
        with self._lock:
            if request in self._connections:
                self._connections[request] = (state, time.monotonic())

    def _forget(self, request: Any) -> None:
        with self._lock:
            self._connections.pop(request, None)

    def _evict_idle(self) -> bool:
        """Close the longest-idle connection (under the lock); False if none is idle."""
        idle = [(since, sock) for sock, (state, since) in self._connections.items() if state == "idle"]
        if not idle:
            return False
        _, sock = min(idle, key=lambda item: item[0])
        self._connections.pop(sock, None)
        _close_socket(sock)
        return True

    def _reap(self) -> None:
        while not self._stopped.wait(1.0):
            now = time.monotonic()
            with self._lock:
                late = [sock for sock, (state, since) in self._connections.items()
                        if (state == "idle" and now - since > IDLE_TIMEOUT) or (state == "headers" and now - since > HEADER_DEADLINE)]
                for sock in late:
                    self._connections.pop(sock, None)
            for sock in late:
                _close_socket(sock)

    def server_close(self) -> None:
        self._stopped.set()
        super().server_close()


def _close_socket(sock: Any) -> None:
    """Ends a connection under its handler thread: its blocked read returns, and the thread ends."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class ProxyHandler(BaseHTTPRequestHandler):
    """What every proxy of the lakehouse answers with: bounded bodies, JSON errors, no access log."""

    protocol_version = "HTTP/1.1"  # Iceberg's HTTP client keeps connections alive
    timeout = 60
    # headers and body go out in two writes: with Nagle on, the second waits for the client's
    # delayed ACK (40 ms per answer, measured on loopback)
    disable_nagle_algorithm = True

    def log_message(self, fmt: str, *args: Any) -> None:  # no access log: URLs are fine, but keep stderr quiet
        pass

    def handle_one_request(self) -> None:
        # The server's bookkeeping: idle until a request's first byte, then its headers are on the clock.
        server = self.server
        if isinstance(server, BoundedHTTPServer):
            server.mark(self.connection, "idle")
            try:
                first = self.rfile.peek(1)  # type: ignore[attr-defined]  # a BufferedReader: waits for the next request, or EOF
            except (OSError, ValueError):
                first = b""
            if not first:
                self.close_connection = True
                return
            server.mark(self.connection, "headers")
        super().handle_one_request()

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if isinstance(self.server, BoundedHTTPServer):
            self.server.mark(self.connection, "busy")
        return ok

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
