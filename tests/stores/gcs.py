"""Google Cloud Storage on loopback: fake-gcs-server behind a front that checks bearer tokens.

fake-gcs-server checks no token at all. ``GcsFront`` stands before it and passes on only requests
that carry a bearer token it minted (``mint``), unexpired, for the bucket and object prefix the token
was minted for. It answers as GCS does: 401 ``authError`` for a missing, unknown or expired token
(with ``WWW-Authenticate: Bearer ... error="invalid_token"``), 403 ``forbidden`` for a request
outside the token's bucket or prefix. fake-gcs-server runs with ``-external-url`` set to the front,
so the session URI of a resumable upload points at the front too. A request to a session URI that
carries no token passes (GCS takes the session URI itself as the credential); one that carries a
token is checked like any other.

Allow-list: the JSON API's object and bucket paths, media download and upload, resumable sessions
and batch requests. Any other path is refused (404) before fake-gcs-server sees it.
"""
from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.client import HTTPResponse
from http.server import BaseHTTPRequestHandler
from multiprocessing.managers import BaseManager
from typing import Any
from urllib.parse import parse_qs, unquote

import requests

from pyspark_catalog_ext.ports import free_port
from tests.servers.base import (
    SOCKET_TIMEOUT,
    ThreadedServer,
    drain_body,
    forward_streaming,
    read_request_body,
    send_response_head,
    split_hostport,
)
from tests.servers.child import ChildServer, die_with_parent
from tests.stores import install

PROJECT = "pce-test"

# /storage/v1/b[/<bucket>[/o[/<object>[/...]]]], also under /download and /upload.
_JSON_API = re.compile(r"^/(?:download/|upload/)?storage/v1/b(?:/(?P<bucket>[^/]+)(?:/o(?:/(?P<object>[^/]+)(?P<rest>/.*)?)?)?)?/?$")
_SESSION = re.compile(r"^/upload/resumable/[A-Za-z0-9_.=-]+$")  # fake-gcs-server's session URIs
_BATCH = "/batch/storage/v1"
_MULTIPART_NAME = re.compile(rb'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')  # in a multipart upload's JSON metadata part
_BATCH_PART = re.compile(rb"^(?:GET|POST|PUT|PATCH|DELETE) (?:https?://[^/\s]+)?(/storage/v1/\S+) HTTP", re.M)


@dataclass
class Grant:
    """One minted token: what it opens and until when (epoch seconds; None: no expiry)."""

    token: str
    label: str
    expires_at: float | None
    bucket: str | None  # None: every bucket
    prefix: str  # object-name prefix ("" : the whole bucket)

    @property
    def expires_at_ms(self) -> int | None:
        return None if self.expires_at is None else int(self.expires_at * 1000)

    def covers(self, bucket: str | None, name: str | None) -> bool:
        if self.bucket is None:
            return True
        if bucket != self.bucket:
            return False
        return name is None or name.startswith(self.prefix)


def _gcs_error(status: int, reason: str, message: str, extra: dict | None = None) -> bytes:
    error = {"message": message, "domain": "global", "reason": reason, **(extra or {})}
    return json.dumps({"error": {"code": status, "message": message, "errors": [error]}}).encode()


class GcsFront(ThreadedServer):
    """The token-checking front. `upstream` (fake-gcs-server) is set once it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.upstream = ""
        self.clock = time.time
        self._grants: dict[str, Grant] = {}
        self._lock = threading.Lock()
        self._labels = itertools.count(1)
        self.log: list[dict] = []

    # ---- tokens
    def mint(self, lifetime_s: float | None, bucket: str | None = None, prefix: str = "") -> Grant:
        """A new token for `bucket` (None: all) and object names under `prefix`, living `lifetime_s`
        seconds (None: for good: the catalog server's own)."""
        with self._lock:
            grant = Grant("pce-gcs-" + secrets.token_urlsafe(24), f"t{next(self._labels)}",
                          None if lifetime_s is None else self.clock() + lifetime_s, bucket, prefix)
            self._grants[grant.token] = grant
        return grant

    def expire(self, token: str) -> None:
        """End a token now (a store that stops taking a token early)."""
        with self._lock:
            grant = self._grants[token]
            grant.expires_at = min(grant.expires_at or self.clock(), self.clock())

    def grants(self) -> list[Grant]:
        with self._lock:
            return list(self._grants.values())

    def requests_by_label(self) -> dict[str, int]:
        with self._lock:
            out: dict[str, int] = {}
            for entry in self.log:
                out[entry["token"]] = out.get(entry["token"], 0) + 1
            return out

    def entries(self) -> list[dict]:
        with self._lock:
            return [dict(e) for e in self.log]

    def serve(self) -> str:
        """Start; the address (for a caller in another process: `start` returns the front itself)."""
        self.start()
        return self.url

    def set_upstream(self, url: str) -> None:
        self.upstream = url

    # ---- serving
    def handle(self, h: BaseHTTPRequestHandler) -> None:
        route, _, query = h.path.partition("?")
        entry = {"time": time.time(), "method": h.command, "route": route, "query": query, "token": None, "status": None}
        with self._lock:
            self.log.append(entry)
        params = parse_qs(query)
        # A batch, and a multipart upload (the object's name is in its body, as GCS reads it), are read
        # whole to be checked, then sent on as read.
        multipart = route.startswith("/upload/") and params.get("uploadType") == ["multipart"] and "name" not in params
        batch = read_request_body(h) if route == _BATCH or multipart else None
        refusal = self._refusal(h, route, params, entry, batch)
        if refusal is not None:
            status, reason, body, headers = refusal
            entry["status"] = status
            self._refuse(h, status, reason, body, headers, drained=batch is not None)
            return

        def record(status: int) -> None:  # noted before the client hears the answer
            entry["status"] = status

        if batch is None:
            forward_streaming(h, self.upstream, on_status=record)
        else:
            self._forward_batch(h, batch, on_status=record)

    def _refusal(self, h: BaseHTTPRequestHandler, route: str, query: dict, entry: dict, batch: bytes | None):
        """None to pass the request on, else (status, reason, body, headers)."""
        if _SESSION.match(route) or ("upload_id" in query and not h.headers.get("Authorization")):
            entry["token"] = "session"  # a resumable upload's session URI, sent without a token
            return None
        match = _JSON_API.match(route)
        if match is None and route != _BATCH:
            return 404, "Not Found", _gcs_error(404, "notFound", f"{route} is not served by the test front"), []
        token = _bearer(h.headers.get("Authorization"))
        with self._lock:
            grant = self._grants.get(token) if token else None
        if grant is None or (grant.expires_at is not None and self.clock() >= grant.expires_at):
            if grant is not None:
                entry["token"] = grant.label + ":expired"
            headers = [("WWW-Authenticate", 'Bearer realm="https://accounts.google.com/", error="invalid_token"')]
            return 401, "Unauthorized", _gcs_error(401, "authError", "Invalid Credentials",
                                                   {"locationType": "header", "location": "Authorization"}), headers
        entry["token"] = grant.label
        if batch is not None and route == _BATCH:
            targets = _batch_targets(batch)
        elif batch is not None:  # a multipart upload: the name its metadata part gives
            named = _MULTIPART_NAME.search(batch)
            targets = [(unquote(match["bucket"]), json.loads(b'"' + named[1] + b'"'))] if named and match else None
        else:
            targets = self._targets(h, route, match, query)
        if targets is None or not all(grant.covers(b, n) for b, n in targets):
            return 403, "Forbidden", _gcs_error(403, "forbidden", "the token does not have access to this "
                                                "bucket or object (outside the prefix it was minted for)"), []
        return None

    @staticmethod
    def _targets(h: BaseHTTPRequestHandler, route: str, match, query: dict) -> list[tuple[str | None, str | None]] | None:
        """The (bucket, object name) pairs a request touches; None if they cannot be told."""
        bucket = unquote(match["bucket"]) if match["bucket"] else None
        name = unquote(match["object"]) if match["object"] else None
        if match["rest"]:  # rewriteTo/b/<bucket>/o/<object>, compose: the destination too
            dest = re.match(r"^/(?:rewriteTo|copyTo)/b/([^/]+)/o/([^/]+)$", match["rest"])
            if dest is None:
                return None
            return [(bucket, name), (unquote(dest[1]), unquote(dest[2]))]
        if name is None and "name" in query:  # an upload names its object in the query
            name = query["name"][0]
        if name is None and "prefix" in query and h.command == "GET":  # a listing under a prefix
            name = query["prefix"][0]
        if name is None and bucket is not None and h.command == "GET" and route.endswith("/o"):
            name = ""  # listing the whole bucket: only a whole-bucket token covers it
        return [(bucket, name)]

    def _forward_batch(self, h: BaseHTTPRequestHandler, body: bytes, on_status: Callable[[int], None]) -> None:
        """A batch's body was read to check its parts: send it on as read."""
        host, port = split_hostport(self.upstream)
        headers = [(k, v) for k, v in h.headers.items()
                   if k.lower() not in ("content-length", "transfer-encoding", "expect")]
        head = "".join(f"{k}: {v}\r\n" for k, v in [*headers, ("Content-Length", str(len(body)))])
        with socket.create_connection((host, port), timeout=SOCKET_TIMEOUT) as up:
            up.sendall(f"{h.command} {h.path} HTTP/1.1\r\n{head}\r\n".encode("latin-1") + body)
            resp = HTTPResponse(up, method=h.command)
            resp.begin()
            answer = resp.read()
            keep = [(k, v) for k, v in resp.getheaders() if k.lower() not in ("content-length", "transfer-encoding", "connection")]
        on_status(resp.status)
        send_response_head(h, resp.status, resp.reason, [*keep, ("Content-Length", str(len(answer)))])
        h.wfile.write(answer)
        h.wfile.flush()

    def _refuse(self, h: BaseHTTPRequestHandler, status: int, reason: str, body: bytes,
                headers: list[tuple[str, str]], drained: bool = False) -> None:
        if drained:
            pass
        elif (h.headers.get("Expect") or "").lower() == "100-continue":
            h.close_connection = True  # the body was never asked for: do not read it
        else:
            drain_body(h)
        send_response_head(h, status, reason, [("Content-Type", "application/json; charset=UTF-8"),
                                               ("Content-Length", str(len(body))), *headers])
        h.wfile.write(body)
        h.wfile.flush()


def _batch_targets(body: bytes) -> list[tuple[str | None, str | None]] | None:
    """The (bucket, object) of every request inside a batch; None if one is not an object request."""
    out: list[tuple[str | None, str | None]] = []
    for line in _BATCH_PART.findall(body):
        match = _JSON_API.match(line.decode("latin-1").partition("?")[0])
        if match is None or match["bucket"] is None or match["rest"]:
            return None
        out.append((unquote(match["bucket"]), unquote(match["object"]) if match["object"] else None))
    return out or None


def _bearer(header: str | None) -> str | None:
    if not header or not header.lower().startswith("bearer "):
        return None
    return header[7:].strip() or None


class _FrontProcess(BaseManager):
    """Serves one `GcsFront` from a child process (multiprocessing's own proxying of method calls)."""


_FrontProcess.register("GcsFront", GcsFront, exposed=("serve", "stop", "mint", "expire", "grants", "entries",
                                                       "requests_by_label", "set_upstream"))


class ChildGcsFront:
    """A `GcsFront` run in a child process, with the same methods, `url` and `upstream`.

    Arrow's GCS filesystem sends some requests while it holds the GIL (`NativeFile.closed` calls
    Arrow's `GcsRandomAccessFile::closed()`, which opens the object's download): a front in the same
    Python process then cannot answer, and both wait for good. In its own process it answers."""

    def __init__(self) -> None:
        self._process = _FrontProcess(ctx=multiprocessing.get_context("spawn"))
        self._front: Any = None
        self._upstream = ""
        self.url = ""

    def start(self) -> ChildGcsFront:
        self._process.start(initializer=die_with_parent)  # dies with this process
        self._front = self._process.GcsFront()  # type: ignore[attr-defined]
        self.url = self._front.serve()
        return self

    def stop(self) -> None:
        if self._front is not None:
            self._front.stop()
            self._front = None
            self._process.shutdown()

    @property
    def upstream(self) -> str:
        return self._upstream

    @upstream.setter
    def upstream(self, url: str) -> None:
        self._upstream = url
        self._front.set_upstream(url)

    def mint(self, lifetime_s: float | None, bucket: str | None = None, prefix: str = "") -> Grant:
        return self._front.mint(lifetime_s, bucket, prefix)

    def expire(self, token: str) -> None:
        self._front.expire(token)

    def grants(self) -> list[Grant]:
        return self._front.grants()

    def entries(self) -> list[dict]:
        return self._front.entries()

    def requests_by_label(self) -> dict[str, int]:
        return self._front.requests_by_label()


class FakeGcs(ChildServer):
    """fake-gcs-server (in memory) behind a `GcsFront`; clients talk to `url` (the front).
    `front_process`: the front runs in a child process (`ChildGcsFront`: needed by Arrow's client)."""

    def __init__(self, front_process: bool = False) -> None:
        super().__init__("fake-gcs-server")
        self.front: Any = ChildGcsFront() if front_process else GcsFront()
        self.port = 0

    @property
    def url(self) -> str:
        return self.front.url

    @property
    def upstream(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeGcs:
        binary = install.fake_gcs_server()
        self.front.start()  # first: fake-gcs-server is told its address
        self.port = free_port()
        cmd = [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
               "-external-url", self.front.url, "-backend", "memory", "-log-level", "warn"]
        env = dict(os.environ)
        try:
            self.spawn(cmd, env, lambda: requests.get(self.upstream + "/storage/v1/b", timeout=2).status_code == 200)
        except BaseException:
            self.front.stop()
            raise
        self.front.upstream = self.upstream
        return self

    def stop(self, keep_logs: bool = False) -> None:
        self.front.stop()
        super().stop(keep_logs)

    def __enter__(self) -> FakeGcs:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def create_bucket(self, bucket: str) -> None:
        """Straight to fake-gcs-server (set-up, not a client request)."""
        resp = requests.post(f"{self.upstream}/storage/v1/b", params={"project": PROJECT}, json={"name": bucket}, timeout=10)
        if resp.status_code not in (200, 409):
            raise RuntimeError(f"fake-gcs-server refused bucket {bucket}: {resp.status_code} {resp.text[:200]}")

    @staticmethod
    def location(bucket: str, path: str = "") -> str:
        return f"gs://{bucket}/{path}".rstrip("/")
