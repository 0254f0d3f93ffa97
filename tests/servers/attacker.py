"""A loopback server standing in for an attacker a server-given URL points at: it records every
request (method, target, headers, body) and answers each with 404, so a client learns nothing from
it. ``credentialed(secrets)`` lists the requests that carried a credential: an `Authorization`,
`Proxy-Authorization` or `Cookie` header, or any of ``secrets`` anywhere in the request (as sent,
URL-encoded, or inside a base64 `Basic` value).

Each request also records whether it came from this process or one of its descendants
(``Received.ours``): the suite runs four pytest processes side by side, and another one's client
may reach a port this attacker took over from a server that lane closed. A request whose sender
cannot be told is counted as ours."""
from __future__ import annotations

import base64
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus

from tests.procfs import parent_pid, socket_inodes, tcp_sockets

from .base import ThreadedServer, read_request_body, send_response_head

CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "cookie")


@dataclass(frozen=True)
class Received:
    method: str
    target: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    ours: bool = True  # sent by this process or a descendant (or the sender could not be told)

    def text(self) -> str:
        """The whole request as text, base64 `Basic` values decoded too."""
        lines = [f"{self.method} {self.target}"] + [f"{k}: {v}" for k, v in self.headers]
        for k, v in self.headers:
            scheme, _, value = v.partition(" ")
            if k.lower() in CREDENTIAL_HEADERS and scheme.lower() == "basic":
                try:
                    lines.append(base64.b64decode(value.strip()).decode("utf-8", "replace"))
                except ValueError:
                    pass
        return "\n".join(lines) + "\n" + self.body.decode("utf-8", "replace")

    def credentials(self, secrets: Iterable[str] = ()) -> list[str]:
        """What in this request is a credential: header names, and which secrets (by position)."""
        found = [k for k, _ in self.headers if k.lower() in CREDENTIAL_HEADERS]
        text = self.text()
        for i, secret in enumerate(s for s in secrets if s):
            if any(form in text for form in {secret, quote(secret, safe=""), quote_plus(secret)}):
                found.append(f"secret #{i}")
        return found

    def shown(self) -> str:
        """One line for a failure message: method, target and header names (values may be secrets)."""
        return f"{self.method} {self.target.split('?')[0]} [{', '.join(k for k, _ in self.headers)}]"


class Attacker(ThreadedServer):
    def __init__(self, port: int = 0):
        super().__init__(port)
        self._lock = threading.Lock()
        self._received: list[Received] = []

    def handle(self, h) -> None:
        body = read_request_body(h)
        sender = sender_pid(h.client_address[1], self.port)
        ours = sender is None or descends_from(sender, os.getpid())
        with self._lock:
            self._received.append(Received(h.command, h.path, list(h.headers.items()), body, ours))
        # An Iceberg error to a catalog call; plain text to anything else (a store's request): Arrow's
        # Azure client parses a JSON-typed error as Azure's (a string code, a body), and aborts the
        # process on anything else (an uncaught C++ exception).
        if "/v1/" in h.path and h.command != "HEAD":
            payload, kind = b'{"error": {"message": "not here", "type": "NotFoundException", "code": 404}}', "application/json"
        else:
            payload, kind = b"not here", "text/plain"
        send_response_head(h, 404, "Not Found", [("Content-Type", kind), ("Content-Length", str(len(payload)))])
        if h.command != "HEAD":
            h.wfile.write(payload)
        h.wfile.flush()

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def credentialed(self, secrets: Iterable[str] = ()) -> list[Received]:
        """The requests that carried a credential."""
        wanted = list(secrets)
        return [r for r in self.received if r.credentials(wanted)]

    def clear(self) -> None:
        with self._lock:
            self._received.clear()


def sender_pid(client_port: int, server_port: int) -> int | None:
    """The process holding the client end of a loopback connection to `server_port`, or None."""
    inode = next((sock.inode for sock in tcp_sockets()
                  if sock.local_port == client_port and sock.remote_port == server_port and sock.inode != "0"), None)
    if inode is None:
        return None
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if inode in socket_inodes(pid):
                return int(pid)
        except OSError:  # gone, or not ours to read
            continue
    return None


def descends_from(pid: int, ancestor: int) -> bool:
    current: int | None = pid
    while current is not None and current > 1:
        if current == ancestor:
            return True
        current = parent_pid(current)
    return False
