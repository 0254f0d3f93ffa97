"""What one embedded lakehouse keeps from other clients and other local users, on the real
SeaweedFS: random keys per instance, no unsigned reads on the filer's HTTP port, the signer's scope
from the catalog's stored metadata, and the signer's caches bounded per client."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid

import boto3
import pyarrow as pa
import pytest
import requests
from botocore.config import Config

from pyspark_catalog_ext.lakehouse.server import Lakehouse
from pyspark_catalog_ext.lakehouse.signer import MAX_DELETE_TICKETS, MAX_LOCATIONS, SigningCatalogProxy
from pyspark_catalog_ext.lakehouse.signer_handler import DELETE_PATH
from pyspark_catalog_ext.lakehouse.tokens import MAX_TOKENS
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from tests.helpers import REST_ID_SCHEMA
from tests.servers.base import BufferedProxy, Request, Response


def _admin_s3(info):
    return boto3.client("s3", endpoint_url=info.s3_endpoint, region_name="us-east-1", aws_access_key_id=info.access_key,
                        aws_secret_access_key=info.secret_key, config=Config(s3={"addressing_style": "path"}))


def test_two_instances_have_different_admin_keys_and_signer_secrets():
    first, second = Lakehouse(delegation="remote-signing").start(), Lakehouse(delegation="remote-signing").start()
    try:
        a, b = first.info, second.info
        assert a.access_key != b.access_key and a.secret_key != b.secret_key and a.client_secret != b.client_secret
        assert len(a.secret_key) >= 32 and len(a.client_secret) >= 32
        assert a.secret_key not in repr(a) and a.client_secret not in repr(a) and "secret" not in str(a.public_dict())
        # one instance's keys open nothing on the other
        token = requests.post(b.oauth2_server_uri, data={"grant_type": "client_credentials", "client_id": "lakeclient",
                                                         "client_secret": a.client_secret}, timeout=10)
        assert token.status_code == 401
        with pytest.raises(Exception, match="InvalidAccessKeyId|AccessDenied|Forbidden|403"):
            _admin_s3(dataclasses.replace(a, s3_endpoint=b.s3_endpoint)).list_objects_v2(Bucket="warehouse")
    finally:
        first.stop()
        second.stop()


def test_filer_answers_no_unauthenticated_read_while_s3_and_catalog_work(lakehouse):
    info = lakehouse.info
    cat = pyiceberg_catalog(lakehouse)
    ns = "fil" + uuid.uuid4().hex[:8]
    cat.create_namespace(ns)
    table = cat.create_table(f"{ns}.t", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1, 2, 3]}))
    assert table.scan().to_arrow().num_rows == 3  # the catalog and S3 work
    keys = [o["Key"] for o in _admin_s3(info).list_objects_v2(Bucket="warehouse", Prefix=f"{ns}/t/")["Contents"]]
    data = next(k for k in keys if k.endswith(".parquet"))
    filer = f"http://127.0.0.1:{info.ports['filer']}"
    for path in (f"/buckets/warehouse/{data}", f"/buckets/warehouse/{ns}/t/", "/buckets/warehouse/"):
        resp = requests.get(filer + path, timeout=10)
        assert resp.status_code in (401, 403), (path, resp.status_code)
        assert b"PAR1" not in resp.content
    put = requests.put(f"{filer}/buckets/warehouse/{ns}/t/data/planted.parquet", data=b"x", timeout=10)
    assert put.status_code in (401, 403)


# -- the signer ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_client_signer(lakehouse):
    info = lakehouse.info
    proxy = SigningCatalogProxy(info.iceberg_uri, info.s3_endpoint, info.access_key, info.secret_key,
                                clients={"x": "x-secret-" + uuid.uuid4().hex, "y": "y-secret-" + uuid.uuid4().hex}).start()
    yield proxy
    proxy.stop()


def _token(proxy: SigningCatalogProxy, client: str) -> str:
    resp = requests.post(proxy.url + "/v1/oauth/tokens", timeout=10, data={
        "grant_type": "client_credentials", "client_id": client, "client_secret": proxy.clients[client]})
    assert resp.status_code == 200, resp.text
    return resp.json()["access_token"]


def _sign(proxy, token, endpoint, method, url, body=None):
    request = {"region": "us-east-1", "method": method, "uri": url, "headers": {}}
    if body is not None:
        request["body"] = body
    return requests.post(f"{proxy.url}/{endpoint}", json=request, headers={"Authorization": f"Bearer {token}"}, timeout=10)


class LocationSwappingGateway(BufferedProxy):
    """A gateway between the signer and the catalog that answers creates (POSTs) with another
    location than the one the catalog stored (a client-chosen or tampered one); loads stay true."""

    swap_to = ""

    def process(self, req: Request) -> Response:
        resp = self.forward(req)
        body = json.loads(resp.body) if resp.body.startswith(b"{") else None
        if self.swap_to and req.method == "POST" and isinstance(body, dict) and isinstance(body.get("metadata"), dict) and "/tables" in req.route:
            body["metadata"]["location"] = self.swap_to
            return resp.with_json(body)
        return resp


def test_signer_scope_is_the_stored_location_not_one_the_answer_carries(lakehouse):
    """The signer's endpoint for a table signs for the location in the catalog's stored metadata
    (loaded by identifier), whatever location the create/load answer it forwarded carried."""
    info = lakehouse.info
    with LocationSwappingGateway(f"http://127.0.0.1:{info.ports['iceberg']}") as gateway:
        proxy = SigningCatalogProxy(gateway.url, info.s3_endpoint, info.access_key, info.secret_key,
                                    clients={"x": "x-secret-" + uuid.uuid4().hex}).start()
        try:
            token = _token(proxy, "x")
            headers = {"Authorization": f"Bearer {token}"}
            ns = "scp" + uuid.uuid4().hex[:8]
            base = f"{proxy.url}/v1/warehouse/namespaces"
            assert requests.post(base, json={"namespace": [ns]}, headers=headers, timeout=10).status_code == 200
            assert requests.post(f"{base}/{ns}/tables", json={"name": "victim", "schema": REST_ID_SCHEMA}, headers=headers, timeout=10).status_code == 200
            gateway.swap_to = f"s3://warehouse/{ns}/victim"  # every answer now names the victim's location
            for name, stage in (("mine", False), ("staged", True)):
                made = requests.post(f"{base}/{ns}/tables", json={"name": name, "schema": REST_ID_SCHEMA, "stage-create": stage},
                                     headers=headers, timeout=10)
                assert made.status_code == 200, made.text
                assert made.json()["metadata"]["location"] == gateway.swap_to
                endpoint = made.json()["config"]["s3.signer.endpoint"]
                victim = _sign(proxy, token, endpoint, "GET", f"{info.s3_endpoint}/warehouse/{ns}/victim/data/f.parquet")
                assert victim.status_code == 403 and "outside the table's location" in victim.json()["error"]["message"], victim.text
                own = _sign(proxy, token, endpoint, "GET", f"{info.s3_endpoint}/warehouse/{ns}/{name}/data/f.parquet")
                assert own.status_code == 200, own.text
        finally:
            proxy.stop()


def test_one_client_flooding_the_signer_evicts_nothing_of_another(lakehouse, two_client_signer):
    proxy, info = two_client_signer, lakehouse.info
    y_token = _token(proxy, "y")
    y_scope = proxy.scope_for("s3://warehouse/flood/y-table", "y")
    delete_body = '<Delete><Object><Key>flood/y-table/data/gone.parquet</Key></Object></Delete>'
    signed = proxy.sign({"method": "POST", "uri": f"{info.s3_endpoint}/warehouse?delete", "region": "us-east-1", "body": delete_body}, "y")
    y_ticket = signed["uri"].split(f"/{DELETE_PATH}/", 1)[1].split("?", 1)[0]
    # client x fills every cache past its bound
    form = {"grant_type": ["client_credentials"], "client_id": ["x"], "client_secret": [proxy.clients["x"]]}
    for _ in range(MAX_TOKENS + 10):
        assert proxy.issue_token(form) is not None
    for i in range(MAX_DELETE_TICKETS + 10):
        proxy.sign({"method": "POST", "uri": f"{info.s3_endpoint}/warehouse?delete", "region": "us-east-1", "body": f"<x{i}/>"}, "x")
    for i in range(MAX_LOCATIONS + 10):
        proxy.scope_for(f"s3://warehouse/flood/x-{i}", "x")
    # y's token, ticket and table endpoint are all still there
    assert proxy.token_client(f"Bearer {y_token}") == "y"
    assert proxy.scope_for("s3://warehouse/flood/y-table", "y") == y_scope
    assert proxy._inside(y_scope, "warehouse", "flood/y-table/data/f.parquet", "y")
    relayed = proxy.relay_delete(y_ticket, delete_body.encode())
    assert not isinstance(relayed, str), relayed
    # and x's own tables cannot be signed through y's endpoint
    assert not proxy._inside(y_scope, "warehouse", "flood/y-table/data/f.parquet", "x")


def test_the_catalog_proxy_holds_a_bounded_number_of_connections(lakehouse):
    """Each open connection holds a thread: never more than MAX_CONNECTIONS of them. Past the bound
    a new connection takes the longest-idle one's place (so idle connections never lock a client
    out): it is answered, and one held connection is closed."""
    import socket
    import threading

    from pyspark_catalog_ext.lakehouse.catalog_proxy import CatalogGuardProxy
    from pyspark_catalog_ext.lakehouse.guard import LocationGuard
    from pyspark_catalog_ext.lakehouse.proxy import MAX_CONNECTIONS

    info = lakehouse.info
    raw = f"http://127.0.0.1:{info.ports['iceberg']}"
    before = threading.active_count()
    with CatalogGuardProxy(LocationGuard(raw, info.s3_endpoint, info.access_key, info.secret_key),
                           clients=dict([info.credential.split(":", 1)])) as proxy:
        held = [socket.create_connection(("127.0.0.1", proxy.port), timeout=10) for _ in range(MAX_CONNECTIONS + 20)]
        try:
            # The 20 connections past the bound evicted 20 idle ones; their threads end once their reads
            # return, which a loaded machine can delay: wait for that, bounded. Unbounded, the count
            # would stay at MAX_CONNECTIONS + 20.
            deadline = time.monotonic() + 15
            while threading.active_count() - before > MAX_CONNECTIONS + 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert threading.active_count() - before <= MAX_CONNECTIONS + 2  # + the server's and its reaper's
            extra = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            extra.sendall(b"GET /v1/config?warehouse=warehouse HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert extra.recv(100).startswith(b"HTTP/1.1 200"), "a new client is served"
            extra.close()
            closed = 0
            for sock in held[:40]:  # the oldest idle ones made room
                sock.settimeout(0.2)
                try:
                    closed += sock.recv(1) == b""
                except TimeoutError:
                    pass
                except ConnectionResetError:
                    closed += 1
            assert closed >= 1
        finally:
            for sock in held:
                sock.close()
