"""Shared plumbing for the loopback test servers.

* ``ThreadedServer``: lifecycle (``start``/``stop``/``url``/context manager) around a
  ``ThreadingHTTPServer`` bound to 127.0.0.1, serving in a daemon thread.
* ``forward_streaming``: relays one request to an upstream byte-for-byte in the parts
  that matter for SigV4 (method, raw request target, every header in order *including
  ``Host``*, body bytes), streaming the body both ways. Handles ``Content-Length`` and
  ``Transfer-Encoding: chunked`` bodies (chunk framing relayed as is, so ``aws-chunked``
  payloads and trailers survive) and ``Expect: 100-continue``.
* ``BufferedProxy``: a JSON-API proxy (the Iceberg REST side) that reads whole
  requests/responses, lets subclasses rewrite them, logs them, and injects faults.

Stdlib only. Everything is bounded: sockets have timeouts, waits are on events that
``stop()`` sets.
"""
from __future__ import annotations

import json
import re
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.client import HTTPResponse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SOCKET_TIMEOUT = 60.0  # per recv/send; also bounds idle keep-alive connections
EXPECT_WAIT = 1.0  # how long to wait for an upstream "100 Continue" (botocore waits 1 s too)
IO_CHUNK = 64 * 1024


def split_hostport(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


# --------------------------------------------------------------------------- lifecycle


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, chunked, 100-continue
    timeout = SOCKET_TIMEOUT

    def setup(self):
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    def handle_expect_100(self):
        # Defer: the owner decides whether to answer 100 (and forward) or reject.
        return True

    def log_message(self, fmt, *args):  # quiet
        pass

    def _dispatch(self):
        try:
            self.server.owner.handle(self)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _dispatch


class _QuietHTTPServer(ThreadingHTTPServer):
    """Clients (the AWS SDK, Spark executors) drop idle keep-alive connections: not worth a traceback."""

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class ThreadedServer:
    """Base class: a threaded HTTP server on 127.0.0.1 with a clean lifecycle.

    Subclasses implement ``handle(handler)``. ``port=0`` picks a free port; pass a port to
    pre-choose one (e.g. one SeaweedFS was told about via ``-s3.externalUrl``).
    """

    def __init__(self, port: int = 0):
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._conns: set = set()
        self._conns_lock = threading.Lock()

    # lifecycle
    def start(self):
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _QuietHTTPServer(("127.0.0.1", self._port), _Handler)
        httpd.daemon_threads = True
        httpd.owner = self
        self._httpd = httpd
        self._port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
            name=f"{type(self).__name__}:{self._port}", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stopping.set()  # releases hangs/delays
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._conns_lock:
            conns = list(self._conns)
        for c in conns:  # unblock handler threads parked on idle keep-alive reads
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def _track(self, conn, add: bool):
        with self._conns_lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def handle(self, h: BaseHTTPRequestHandler):  # pragma: no cover - abstract
        raise NotImplementedError


# --------------------------------------------------------------------------- request body helpers


def drain_body(h: BaseHTTPRequestHandler) -> None:
    """Read and discard the request body so the connection can be reused."""
    relay_request_body(h, None)


def relay_request_body(h: BaseHTTPRequestHandler, sink: Callable[[bytes], None] | None) -> int:
    """Copy the request body from the client to ``sink`` (or discard it), keeping chunked
    framing byte-for-byte. Returns the number of raw bytes relayed."""
    rfile, n = h.rfile, 0
    write = sink or (lambda b: None)
    if "chunked" in (h.headers.get("Transfer-Encoding") or "").lower():
        while True:
            line = rfile.readline(65537)
            if not line:
                raise ConnectionResetError("client closed mid-chunk")
            write(line)
            n += len(line)
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:  # trailers, then the empty line
                while True:
                    t = rfile.readline(65537)
                    write(t)
                    n += len(t)
                    if t in (b"\r\n", b"\n", b""):
                        return n
            remaining = size + 2  # data + CRLF
            while remaining:
                b = rfile.read(min(IO_CHUNK, remaining))
                if not b:
                    raise ConnectionResetError("client closed mid-chunk")
                write(b)
                n += len(b)
                remaining -= len(b)
    remaining = int(h.headers.get("Content-Length") or 0)
    while remaining:
        b = rfile.read(min(IO_CHUNK, remaining))
        if not b:
            raise ConnectionResetError("client closed mid-body")
        write(b)
        n += len(b)
        remaining -= len(b)
    return n


def read_request_body(h: BaseHTTPRequestHandler) -> bytes:
    """Whole request body, de-chunked (for JSON APIs)."""
    if "chunked" in (h.headers.get("Transfer-Encoding") or "").lower():
        out = bytearray()
        while True:
            size = int(h.rfile.readline(65537).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while h.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += h.rfile.read(size)
            h.rfile.readline(65537)
    return h.rfile.read(int(h.headers.get("Content-Length") or 0))


def _head_bytes(method: str, target: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"{method} {target} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def send_response_head(h: BaseHTTPRequestHandler, status: int, reason: str,
                       headers: list[tuple[str, str]]) -> None:
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    h.wfile.write((head + "\r\n").encode("latin-1"))


# --------------------------------------------------------------------------- streaming forward


def forward_streaming(h: BaseHTTPRequestHandler, upstream: str,
                      on_status: Callable[[int], None] | None = None) -> int:
    """Relay the request in ``h`` to ``upstream`` and the response back, streaming.

    ``on_status`` hears the upstream's status before the client sees any of the answer, so a
    log read as soon as the client has its answer already holds the status.

    Headers go out exactly as received (order, case, duplicates, ``Host``). With
    ``Expect: 100-continue`` the upstream's answer decides: its ``100`` is relayed to the
    client before the body flows; a final answer instead is relayed and the client's
    unsent body is never read (the connection is then closed). Returns the status.
    """
    host, port = split_hostport(upstream)
    up = socket.create_connection((host, port), timeout=SOCKET_TIMEOUT)
    try:
        up.sendall(_head_bytes(h.command, h.path, list(h.headers.items())))
        has_body = (int(h.headers.get("Content-Length") or 0) > 0
                    or "chunked" in (h.headers.get("Transfer-Encoding") or "").lower())
        expects = (h.headers.get("Expect") or "").lower() == "100-continue"
        early_final = False
        if has_body and expects:
            ready, _, _ = select.select([up], [], [], EXPECT_WAIT)
            if ready:
                peek = up.recv(12, socket.MSG_PEEK | socket.MSG_WAITALL)  # "HTTP/1.1 100"
                if peek.startswith(b"HTTP/1.1 100") or peek.startswith(b"HTTP/1.0 100"):
                    _consume_interim(up)
                else:
                    early_final = True  # upstream refused before the body; don't read it
            if not early_final:
                h.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                h.wfile.flush()
        if has_body and not early_final:
            try:
                relay_request_body(h, up.sendall)
            except (BrokenPipeError, ConnectionResetError):
                # Upstream answered and closed early; its response may still be readable.
                h.close_connection = True
        resp = HTTPResponse(up, method=h.command)
        resp.begin()  # skips any further 1xx
        if early_final:
            h.close_connection = True
        if on_status is not None:
            on_status(resp.status)
        return _relay_response(h, resp)
    finally:
        up.close()


def _consume_interim(sock: socket.socket) -> None:
    buf = b""
    while not buf.endswith(b"\r\n\r\n"):
        b = sock.recv(1)
        if not b:
            raise ConnectionResetError("upstream closed during 100-continue")
        buf += b


def _relay_response(h: BaseHTTPRequestHandler, resp: HTTPResponse) -> int:
    headers = resp.getheaders()
    chunked = any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers)
    delimited = chunked or resp.getheader("Content-Length") is not None
    if (resp.getheader("Connection", "").lower() == "close"
            or (not delimited and h.command != "HEAD" and resp.status not in (204, 304))):
        h.close_connection = True  # body ends at close: so must ours
    send_response_head(h, resp.status, resp.reason, headers)
    if h.command != "HEAD":
        while True:
            b = resp.read1(IO_CHUNK) if chunked else resp.read(IO_CHUNK)
            if not b:
                break
            h.wfile.write(b"%x\r\n%s\r\n" % (len(b), b) if chunked else b)
        if chunked:
            h.wfile.write(b"0\r\n\r\n")
    h.wfile.flush()
    return resp.status


# --------------------------------------------------------------------------- buffered JSON proxy


class _Message:
    """What requests and responses share: case-insensitive headers and a JSON body."""

    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str, default: str | None = None) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return default

    def json(self):
        return json.loads(self.body) if self.body else None


@dataclass
class Request(_Message):
    method: str
    path: str  # raw request target, query included
    headers: list[tuple[str, str]]
    body: bytes = b""


    @property
    def route(self) -> str:
        return self.path.split("?", 1)[0]


@dataclass
class Response(_Message):
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    reason: str = ""


    def with_body(self, body: bytes) -> Response:
        headers = [(k, v) for k, v in self.headers
                   if k.lower() not in ("content-length", "transfer-encoding")]
        return Response(self.status, headers, body, self.reason)

    def with_json(self, obj) -> Response:
        return self.with_body(json.dumps(obj).encode())

    @staticmethod
    def iceberg_error(status: int, type_: str, message: str) -> Response:
        body = json.dumps({"error": {"message": message, "type": type_, "code": status}})
        return Response(status, [("Content-Type", "application/json")], body.encode())


FAULT_KINDS = ("error", "drop", "delay", "duplicate", "hang", "late", "after", "before", "redirect")

# The Iceberg error type a catalog names for each status (the client maps the status, the type is
# for the message only).
_ERROR_TYPES = {400: "BadRequestException", 401: "NotAuthorizedException", 403: "ForbiddenException",
                404: "NoSuchTableException", 409: "CommitFailedException", 429: "TooManyRequestsException",
                503: "ServiceUnavailableException"}


@dataclass
class Fault:
    """One injected fault, armed for the next ``times`` requests matching method + path regex.

    kinds:
      error     answer ``status`` (default 503) without forwarding
      drop      forward (upstream applies it), then close the connection without answering
      delay     forward, then wait ``seconds`` before answering (past the client's timeout)
      duplicate forward twice, answer with the second response
      hang      never forward, never answer, until ``stop()`` or ``release_hangs()``
      late      hold the request ``seconds`` (the client times out and retries), then forward
                it (and answer, if anyone still listens): the first attempt arrives late
      after     forward (upstream applies it), then answer ``status`` instead (a gateway's 503
                after forwarding; Polaris <= 1.7.0's 400 for an unknown commit state)
      before    run ``action()`` (e.g. a second writer's commit), then forward
      redirect  never forward; answer ``status`` (e.g. 307, 303) with ``Location: location``

    ``headers`` are added to the fault's answer (``[("Retry-After", "1")]`` on a 503 or 429: the
    answer an HTTP client's own retry strategy may re-send a request for).
    """
    kind: str
    method: str | None = None
    path: str = ".*"
    times: int = 1
    status: int = 503
    seconds: float = 0.0
    action: Callable[[], None] | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    location: str = ""
    fired: int = 0

    def answer(self, message: str) -> Response:
        """The fault's own answer: an Iceberg error body for ``status``, plus ``headers``."""
        if self.kind == "redirect":
            return Response(self.status, [("Location", self.location), *self.headers], b"")
        resp = Response.iceberg_error(self.status, _ERROR_TYPES.get(self.status, "ServerError"), message)
        resp.headers.extend(self.headers)
        return resp

    def matches(self, method: str, path: str) -> bool:
        return ((self.method is None or self.method.upper() == method.upper())
                and re.search(self.path, path) is not None)


class FaultInjector:
    def __init__(self):
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, kind: str, method: str | None = None, path: str = ".*", times: int = 1,
            status: int = 503, seconds: float = 0.0,
            action: Callable[[], None] | None = None, headers: list[tuple[str, str]] | None = None,
            location: str = "") -> Fault:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; one of {FAULT_KINDS}")
        if kind == "redirect" and not location:
            raise ValueError("a redirect fault needs a location")
        f = Fault(kind, method, path, times, status, seconds, action, list(headers or []), location)
        with self._lock:
            self._faults.append(f)
        return f

    def take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for f in self._faults:
                if f.fired < f.times and f.matches(method, path):
                    f.fired += 1
                    return f
        return None

    def clear(self):
        with self._lock:
            self._faults.clear()

    @property
    def pending(self) -> int:
        with self._lock:
            return sum(f.times - f.fired for f in self._faults)


class BufferedProxy(ThreadedServer):
    """Proxy for small JSON APIs: whole request in, ``process()`` -> whole response out.

    Subclasses override ``process(req)`` (default: forward) and ``classify(req)``.
    Every client request is appended to ``log`` (dicts with method, path, kind, table,
    status, fault, replayed). Faults (``self.faults.add(...)``) wrap ``process`` at the
    outer edge, i.e. they happen between the client and everything this proxy does.
    """

    def __init__(self, upstream: str, port: int = 0):
        super().__init__(port)
        self.upstream = upstream.rstrip("/")
        self.faults = FaultInjector()
        self.log: list[dict] = []
        self.upstream_log: list[dict] = []  # every request this proxy sent upstream
        self._log_lock = threading.Lock()
        self._release = threading.Event()

    # ---- overridables
    def classify(self, req: Request) -> tuple[str, str | None]:
        return "other", None

    def process(self, req: Request) -> Response:
        return self.forward(req)

    # ---- upstream
    def forward(self, req: Request, timeout: float = SOCKET_TIMEOUT) -> Response:
        host, port = split_hostport(self.upstream)
        headers = [(k, v) for k, v in req.headers
                   if k.lower() not in ("content-length", "transfer-encoding", "expect")]
        if req.body or req.method in ("POST", "PUT", "PATCH"):
            headers.append(("Content-Length", str(len(req.body))))
        with socket.create_connection((host, port), timeout=timeout) as up:
            up.sendall(_head_bytes(req.method, req.path, headers) + req.body)
            resp = HTTPResponse(up, method=req.method)
            resp.begin()
            body = resp.read()
            out = Response(resp.status, resp.getheaders(), b"", resp.reason).with_body(body)
        with self._log_lock:
            self.upstream_log.append({"method": req.method, "path": req.path, "status": out.status,
                                      "time": time.time()})
        return out

    # ---- control
    def release_hangs(self):
        """Let hung requests go (they close their connection without an answer)."""
        self._release.set()

    def count(self, kind: str | None = None, table: str | None = None,
              method: str | None = None) -> int:
        with self._log_lock:
            return sum(1 for e in self.log
                       if (kind is None or e["kind"] == kind)
                       and (table is None or e["table"] == table)
                       and (method is None or e["method"] == method))

    def entries(self) -> list[dict]:
        """A copy of ``log`` (taken under its lock, so a benchmark can filter it by time)."""
        with self._log_lock:
            return [dict(e) for e in self.log]

    def counts(self) -> dict[str, int]:
        with self._log_lock:
            out: dict[str, int] = {}
            for e in self.log:
                out[e["kind"]] = out.get(e["kind"], 0) + 1
            return out

    def reset_counters(self):
        with self._log_lock:
            self.log.clear()
            self.upstream_log.clear()

    def stop(self):
        self._release.set()
        super().stop()

    # ---- serving
    def handle(self, h: BaseHTTPRequestHandler):
        if (h.headers.get("Expect") or "").lower() == "100-continue":
            h.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        req = Request(h.command, h.path, list(h.headers.items()), read_request_body(h))
        kind, table = self.classify(req)
        entry = {"method": req.method, "path": req.path, "kind": kind, "table": table,
                 "status": None, "fault": None, "time": time.time(),
                 "idempotency_key": next((v for k, v in req.headers if k.lower() == "idempotency-key"), None)}
        with self._log_lock:
            self.log.append(entry)
        fault = self.faults.take(req.method, req.path)
        if fault:
            entry["fault"] = fault.kind
        if fault and fault.kind in ("error", "redirect"):
            resp = fault.answer(f"injected fault: {fault.status}")
        elif fault and fault.kind == "hang":
            while not (self._stopping.is_set() or self._release.is_set()):
                self._release.wait(0.1)
            h.close_connection = True
            return
        else:
            try:
                if fault and fault.kind == "late":
                    self._stopping.wait(fault.seconds)
                if fault and fault.kind == "before":
                    fault.action()
                resp = self.process(req)
                if fault and fault.kind == "after":
                    resp = fault.answer(f"injected fault after apply: {fault.status}")
                if fault and fault.kind == "duplicate":
                    resp = self.process(req)
            except OSError as e:
                resp = Response.iceberg_error(502, "BadGateway", f"upstream error: {type(e).__name__}")
        entry["status"] = resp.status
        entry["replayed"] = resp.header("Idempotent-Replayed") == "true"
        if fault and fault.kind == "drop":
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if fault and fault.kind == "delay":
            self._stopping.wait(fault.seconds)
        try:
            self.send(h, resp)
        except OSError:  # the client gave up (delay/late): nothing to answer
            h.close_connection = True

    @staticmethod
    def send(h: BaseHTTPRequestHandler, resp: Response):
        headers = [(k, v) for k, v in resp.headers
                   if k.lower() not in ("content-length", "transfer-encoding", "connection")]
        headers.append(("Content-Length", str(len(resp.body))))
        send_response_head(h, resp.status, resp.reason or _reason(resp.status), headers)
        if h.command != "HEAD":
            h.wfile.write(resp.body)
        h.wfile.flush()


def _reason(status: int) -> str:
    from http import HTTPStatus
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
