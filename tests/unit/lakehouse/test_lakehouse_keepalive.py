"""The embedded lakehouse's catalog fronts (the location guard; the remote signer) serve any HTTP
client that keeps its connection alive: every answer, errors included, either leaves the connection
usable or says `Connection: close`; and the views routes answer as Iceberg's REST spec says.

Each test replays a real client's requests on ONE `http.client` connection, which (like Trino's
HTTP client) sends its next request on the same socket unless the answer said `Connection: close`.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from pyspark_catalog_ext.lakehouse.server import Lakehouse
from tests.lakehouse_rest import Rest


@pytest.fixture(scope="module")
def signing_lake() -> Iterator[Lakehouse]:
    lake = Lakehouse(delegation="remote-signing").start()
    try:
        yield lake
    finally:
        lake.stop()


@pytest.fixture(params=["guard", "signer"])
def front(request: Any, lakehouse: Lakehouse) -> Iterator[tuple[Rest, http.client.HTTPConnection]]:
    """A REST helper (to set up tables) and one kept-alive connection to the catalog front."""
    lake = lakehouse if request.param == "guard" else request.getfixturevalue("signing_lake")
    delegation = "vended-credentials" if request.param == "guard" else "remote-signing"
    rest = Rest(lake.info, delegation=delegation)
    url = urlsplit(rest.uri)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    yield rest, conn
    conn.close()


def _call(rest: Rest, conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None,
          **headers: str) -> tuple[http.client.HTTPResponse, bytes]:
    conn.request(method, urlsplit(rest.base).path + path, body=body, headers={**rest.headers, **headers})
    resp = conn.getresponse()
    return resp, resp.read()


def _kind(content: bytes) -> str:
    return json.loads(content)["error"]["type"]


def test_trino_asks_for_a_view_then_loads_the_table_on_one_connection(front) -> None:
    """Trino's Iceberg connector: GET views/{t} (404 NoSuchViewException means "not a view"), then
    GET tables/{t}, on the same kept-alive connection; both answered, on one socket."""
    rest, conn = front
    ns = rest.namespace("keep")
    assert rest.create(ns, "t2").status_code == 200
    resp, content = _call(rest, conn, "GET", f"/namespaces/{ns}/views/t2")
    assert (resp.status, _kind(content)) == (404, "NoSuchViewException"), content
    assert not resp.will_close
    sock = conn.sock
    resp, content = _call(rest, conn, "GET", f"/namespaces/{ns}/tables/t2")
    assert resp.status == 200, content
    assert json.loads(content)["metadata"]["schemas"], content
    assert conn.sock is sock and sock is not None  # the same connection carried both


def test_views_routes_answer_as_the_spec_says(front) -> None:
    rest, conn = front
    ns = rest.namespace("views")
    resp, content = _call(rest, conn, "GET", f"/namespaces/{ns}/views")
    assert (resp.status, json.loads(content)) == (200, {"identifiers": []})
    resp, content = _call(rest, conn, "HEAD", f"/namespaces/{ns}/views/v")
    assert (resp.status, content) == (404, b"")
    resp, content = _call(rest, conn, "GET", "/namespaces/nosuchns/views/v")
    assert (resp.status, _kind(content)) == (404, "NoSuchNamespaceException"), content
    resp, content = _call(rest, conn, "GET", "/namespaces/nosuchns/views")
    assert (resp.status, _kind(content)) == (404, "NoSuchNamespaceException"), content
    body = json.dumps({"name": "v", "schema": {"type": "struct", "fields": []}}).encode()
    resp, content = _call(rest, conn, "POST", f"/namespaces/{ns}/views", body, **{"Content-Type": "application/json"})
    assert (resp.status, _kind(content)) == (406, "UnsupportedOperationException"), content
    resp, content = _call(rest, conn, "DELETE", f"/namespaces/{ns}/views/v")
    assert (resp.status, _kind(content)) == (404, "NoSuchViewException"), content
    assert not resp.will_close


def test_views_need_a_valid_token(front) -> None:
    rest, conn = front
    ns = rest.namespace("viewsauth")
    resp, _ = _call(rest, conn, "GET", f"/namespaces/{ns}/views/v", Authorization="Bearer not-a-token")
    assert resp.status == 401


def _honest(resp: http.client.HTTPResponse) -> None:
    """An answer that closes its connection says so (http.client then opens a new one)."""
    if resp.will_close:
        assert (resp.getheader("Connection") or "").lower() == "close", resp.getheaders()


def test_a_refused_request_keeps_the_connection_or_says_it_closes(front, request: Any) -> None:
    rest, conn = front
    # no route, no body: the guard keeps the connection; the signer closes it and says so
    resp, content = _call(rest, conn, "GET", "/nosuch")
    assert resp.status == 404, content
    _honest(resp)
    if "guard" in request.node.callspec.id:
        assert not resp.will_close
    # no route, a small framed body: the guard reads and drops it and keeps the connection
    resp, content = _call(rest, conn, "POST", "/nosuch", b'{"a": 1}', **{"Content-Type": "application/json"})
    assert resp.status == 404, content
    _honest(resp)
    if "guard" in request.node.callspec.id:
        assert not resp.will_close
    resp, content = _call(rest, conn, "GET", "/namespaces")
    assert resp.status == 200, content
    sock = conn.sock
    # a body that cannot be framed here (chunked): the answer says the connection closes
    conn.putrequest("POST", urlsplit(rest.base).path + "/namespaces")
    for k, v in {**rest.headers, "Transfer-Encoding": "chunked", "Content-Type": "application/json"}.items():
        conn.putheader(k, v)
    conn.endheaders(b"2\r\n{}\r\n0\r\n\r\n")
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 411 and resp.will_close
    _honest(resp)
    # http.client opens a new connection after `Connection: close`; without it, this would be RemoteDisconnected
    resp, content = _call(rest, conn, "GET", "/namespaces")
    assert resp.status == 200, content
    assert conn.sock is not sock
