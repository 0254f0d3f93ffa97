"""Raw Iceberg REST calls to an embedded lakehouse, as any HTTP client would send them (the
lakehouse tests' attacker and user): targets are sent as written, percent-escapes included."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import boto3
import requests
from botocore.config import Config

from tests.helpers import REST_ID_SCHEMA


def token(info: Any, uri: str | None = None) -> str:
    """A bearer token of the lakehouse's client at `uri` (default its catalog front); at SeaweedFS's
    own catalog port, of the admin keys (only the lakehouse's process and its tests hold them)."""
    raw = f"http://127.0.0.1:{info.ports.get('iceberg')}"
    cid, secret = (info.access_key, info.secret_key) if uri and uri.rstrip("/") == raw else info.credential.split(":", 1)
    r = requests.post(f"{uri or info.iceberg_uri}/v1/oauth/tokens", timeout=10,
                      data={"grant_type": "client_credentials", "client_id": cid, "client_secret": secret, "scope": "catalog"})
    r.raise_for_status()
    return r.json()["access_token"]


def admin_s3(info: Any) -> Any:
    return boto3.client("s3", endpoint_url=info.s3_endpoint, region_name="us-east-1", aws_access_key_id=info.access_key,
                        aws_secret_access_key=info.secret_key, config=Config(s3={"addressing_style": "path"}))


@dataclass
class RawAnswer:
    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


class Rest:
    """`/v1/warehouse` calls with a bearer token of the lakehouse's client (or of `uri`'s)."""

    def __init__(self, info: Any, uri: str | None = None, delegation: str = "vended-credentials") -> None:
        self.uri = (uri or info.iceberg_uri).rstrip("/")
        self.base = f"{self.uri}/v1/{info.warehouse}"
        self.headers = {"Authorization": f"Bearer {token(info, uri)}", "X-Iceberg-Access-Delegation": delegation}

    def request(self, method: str, path: str, body: Any = None) -> requests.Response:
        return requests.request(method, self.base + path, json=body, headers=self.headers, timeout=30, allow_redirects=False)

    def post(self, path: str, body: Any) -> requests.Response:
        return self.request("POST", path, body)

    def raw(self, method: str, path: str | bytes, body: Any = None) -> RawAnswer:
        """`path` (under /v1/warehouse, or a whole target given as bytes) sent exactly as written."""
        payload = json.dumps(body).encode() if body is not None else None
        target = path if isinstance(path, bytes) else urlsplit(self.base).path + path
        status, content = raw_request(self.uri, method, target, payload,
                                      {**self.headers, "Content-Type": "application/json"})
        return RawAnswer(status, content)

    def namespace(self, prefix: str = "ns") -> str:
        name = prefix + uuid.uuid4().hex[:8]
        resp = self.post("/namespaces", {"namespace": [name]})
        assert resp.status_code == 200, resp.text
        return name

    def create(self, ns: str, name: str, location: str | None = None, stage: bool = False, **extra: Any) -> requests.Response:
        body: dict = {"name": name, "schema": REST_ID_SCHEMA, **extra}
        if location is not None:
            body["location"] = location
        if stage:
            body["stage-create"] = True
        return self.post(f"/namespaces/{ns}/tables", body)

    def load(self, ns: str, name: str) -> dict:
        resp = self.request("GET", f"/namespaces/{ns}/tables/{name}")
        assert resp.status_code == 200, resp.text
        return resp.json()

    def location(self, ns: str, name: str) -> str:
        return self.load(ns, name)["metadata"]["location"]

    def set_location(self, ns: str, name: str, location: str, path: str | None = None) -> requests.Response:
        return self.post(path or f"/namespaces/{ns}/tables/{name}",
                         {"requirements": [], "updates": [{"action": "set-location", "location": location}]})

    def tables(self, ns: str) -> list[str]:
        resp = self.request("GET", f"/namespaces/{ns}/tables")
        assert resp.status_code == 200, resp.text
        return sorted(t["name"] for t in resp.json()["identifiers"])


def refused(resp: Any, *needles: str, status: tuple[int, ...] = (400, 403)) -> str:
    """The one-line refusal message of `resp` (asserting its status and that it names `needles`)."""
    assert resp.status_code in status, (resp.status_code, resp.text[:300])
    message = resp.json()["error"]["message"]
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


def objects(s3: Any, prefix: str) -> dict[str, str]:
    """key -> ETag of every object under `prefix` (what a test compares before and after)."""
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="warehouse", Prefix=prefix):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = obj["ETag"]
    return out


def raw_request(base_url: str, method: str, target: str | bytes, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """Send `target` exactly as written, bytes and all (requests would re-quote it: `%65` would become
    `e`; http.client refuses anything not ASCII); (status, body)."""
    import socket
    from http.client import HTTPResponse

    parts = urlsplit(base_url)
    raw_target = target if isinstance(target, bytes) else target.encode("latin-1")
    head = [method.encode() + b" " + raw_target + b" HTTP/1.1", f"Host: {parts.netloc}".encode(), b"Connection: close",
            f"Content-Length: {len(body or b'')}".encode()]
    head += [f"{k}: {v}".encode() for k, v in (headers or {}).items()]
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + (body or b""))
        resp = HTTPResponse(sock, method=method)
        resp.begin()
        return resp.status, resp.read()


def fill_namespace(rest: Rest, ns: str, count: int, threads: int = 8) -> None:
    """Create namespace `ns` with `count` one-column tables through `rest` (the quickest honest way
    to a large namespace: real creates, `threads` at a time; at SeaweedFS's own port with the admin
    keys, no guard is in the way)."""
    from concurrent.futures import ThreadPoolExecutor

    assert rest.post("/namespaces", {"namespace": [ns]}).status_code == 200

    def create(i: int) -> None:
        resp = rest.create(ns, f"t{i:06d}")
        assert resp.status_code == 200, resp.text[:300]

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, range(count)))


def timed_create(rest: Rest, ns: str, name: str | None = None) -> float:
    """Seconds one create of table `name` (default a new one) in `ns` takes through `rest`."""
    import time

    started = time.perf_counter()  # a long timeout: what is measured may be slow
    resp = requests.post(f"{rest.base}/namespaces/{ns}/tables", json={"name": name or "c" + uuid.uuid4().hex[:10], "schema": REST_ID_SCHEMA},
                         headers=rest.headers, timeout=600)
    elapsed = time.perf_counter() - started
    assert resp.status_code == 200, resp.text[:300]
    return elapsed
