"""The lakehouse proxies under connection floods: idle connections never lock another client out,
a request's headers must arrive within the header deadline, and a body nested past the JSON
parser's depth is a 400, not a dropped connection."""

from __future__ import annotations

import http.client
import json
import resource
import socket
import time

import pytest

from pyspark_catalog_ext.lakehouse import proxy
from pyspark_catalog_ext.lakehouse.proxy import ProxyHandler, ProxyServer


class _Echo(ProxyHandler):
    def do_GET(self) -> None:
        self._json(200, {"ok": True})


class EchoProxy(ProxyServer):
    handler = _Echo


def _get(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/v1/config")
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_thousand_idle_connections_do_not_lock_out_another_client():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    with EchoProxy() as server:
        idle = []
        try:
            for _ in range(1000):
                idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
            time.sleep(0.5)  # let the server accept them all
            started = time.monotonic()
            assert _get(server.port) == 200
            assert time.monotonic() - started < 5
        finally:
            for sock in idle:
                sock.close()


def test_headers_must_arrive_within_the_deadline(monkeypatch):
    monkeypatch.setattr(proxy, "HEADER_DEADLINE", 1.5)
    with EchoProxy() as server:
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        slow.sendall(b"GET /v1/config HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        started = time.monotonic()
        slow.settimeout(8)
        assert slow.recv(100) == b""  # closed by the server
        assert time.monotonic() - started < 6
        slow.close()
        assert _get(server.port) == 200


def _post(url: str, path: str, body: bytes, token: str) -> tuple[int, str]:
    parts = url.split("//", 1)[1].split("/", 1)[0]
    host, port = parts.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def _token(uri: str, client_id: str, secret: str) -> str:
    import requests

    r = requests.post(f"{uri}/v1/oauth/tokens", timeout=10, data={"grant_type": "client_credentials", "client_id": client_id,
                                                                  "client_secret": secret, "scope": "catalog"})
    r.raise_for_status()
    return r.json()["access_token"]


@pytest.mark.parametrize("depth", [5000, 100_000])
def test_nested_json_is_a_bad_request_on_the_guard_and_the_signer(lakehouse, depth):
    """An authenticated request whose body nests past the JSON parser's depth, to the lakehouse's
    catalog front and to its signer's sign route: a 400 with one line, not a dropped connection."""
    from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID, SigningCatalogProxy

    body = ("[" * depth + "]" * depth).encode()
    info = lakehouse.info
    client_id, secret = info.credential.split(":", 1)
    status, text = _post(info.iceberg_uri, f"/v1/{info.warehouse}/namespaces", body, _token(info.iceberg_uri, client_id, secret))
    assert status == 400 and "\n" not in json.loads(text)["error"]["message"], (status, text[:200])
    with SigningCatalogProxy(info.iceberg_uri, info.s3_endpoint, info.access_key, info.secret_key) as signer:
        token = _token(signer.url, CLIENT_ID, signer.clients[CLIENT_ID])
        for path in ("/v1/aws/s3/sign", f"/v1/{info.warehouse}/namespaces"):
            status, text = _post(signer.url, path, body, token)
            assert status == 400 and "\n" not in json.loads(text)["error"]["message"], (path, status, text[:200])
