"""No port of the embedded lakehouse answers an unauthenticated read or write.

The ports are not taken from our own configuration: the test reads, from /proc, every TCP socket
the lakehouse's processes (SeaweedFS's `weed` and the detached catalog proxy) listen on, and
probes each one as a local user without keys would, in both protocols SeaweedFS speaks:

* HTTP/1.1: reads (an object through S3's, the filer's and the catalog's APIs, a volume lookup and
  a write token from the master) and writes (an object, a filer entry, a namespace, a volume
  needle); no answer may be a 2xx, none may carry the canary's bytes, and nothing may be planted;
* gRPC (grpcio, with hand-encoded protobuf messages: no SeaweedFS protos needed): a filer entry
  lookup and delete of the canary file, a master volume lookup and assignment, a volume server
  status and collection delete; no call may reach a handler (only a failed connection or TLS
  handshake, or an auth refusal, counts as refused).

Then the canary file is still there and unchanged. As a control that the probes can succeed, the
same gRPC lookup with the lakehouse's own node certificate returns the canary's entry.
"""

from __future__ import annotations

import socket
import ssl
import uuid
from pathlib import Path

import boto3
import grpc
import pytest
import requests
from botocore.config import Config

from pyspark_catalog_ext.lakehouse.server import Lakehouse
from tests.helpers import REST_ID_SCHEMA
from tests.procfs import LISTEN, socket_inodes, tcp_sockets

CANARY = b"canary bytes no unauthenticated client may read " + uuid.uuid4().hex.encode()
REFUSED_GRPC = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED}


def _field(number: int, value: str | int | bool) -> bytes:
    """One protobuf field: a string (length-delimited) or a varint (ints, bools). The probe needs
    three tiny messages, so it encodes them by hand instead of compiling SeaweedFS's protos."""
    if isinstance(value, str):
        data = value.encode()
        return bytes([number << 3 | 2]) + _varint(len(data)) + data
    return bytes([number << 3]) + _varint(int(value))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _listening_ports(pid: int) -> set[int]:
    """TCP ports process `pid` listens on: its socket inodes matched against the kernel's TCP tables."""
    inodes = socket_inodes(pid)
    return {sock.local_port for sock in tcp_sockets() if sock.state == LISTEN and sock.inode in inodes}


@pytest.fixture(scope="module")
def lake():
    """A detached lakehouse (its catalog proxy is a process of its own) with a table and a canary file."""
    lh = Lakehouse(detached=True).start()
    try:
        info = lh.info
        cid, secret = info.credential.split(":", 1)
        token = requests.post(info.oauth2_server_uri, data={"grant_type": "client_credentials", "client_id": cid,
                                                            "client_secret": secret, "scope": "catalog"}, timeout=10).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        base = f"{info.iceberg_uri}/v1/warehouse/namespaces"
        assert requests.post(base, json={"namespace": ["ports"]}, headers=headers, timeout=10).status_code == 200
        assert requests.post(f"{base}/ports/tables", json={"name": "t", "schema": REST_ID_SCHEMA}, headers=headers, timeout=10).status_code == 200
        s3 = boto3.client("s3", endpoint_url=info.s3_endpoint, region_name="us-east-1", aws_access_key_id=info.access_key,
                          aws_secret_access_key=info.secret_key, config=Config(s3={"addressing_style": "path"}))
        s3.put_object(Bucket="warehouse", Key="ports/t/data/canary.parquet", Body=CANARY)
        yield lh, s3
    finally:
        lh.stop()


def _http_probes(port: int) -> list[tuple[str, requests.Response | str]]:
    """Unauthenticated HTTP reads and writes in every API SeaweedFS and the proxy speak."""
    url = f"http://127.0.0.1:{port}"
    probes = [
        ("GET", "/warehouse/ports/t/data/canary.parquet", None),  # S3 read
        ("GET", "/buckets/warehouse/ports/t/data/canary.parquet", None),  # filer read
        ("GET", "/v1/warehouse/namespaces/ports/tables/t", None),  # catalog read
        ("GET", "/dir/lookup?volumeId=1", None),  # master read
        ("GET", "/dir/assign", None),  # master: a volume write token
        ("PUT", "/warehouse/ports/t/data/planted.parquet", b"planted"),  # S3 write
        ("POST", "/buckets/warehouse/ports/t/data/planted.parquet", b"planted"),  # filer write
        ("POST", "/v1/warehouse/namespaces", b'{"namespace": ["planted"]}'),  # catalog write
        ("POST", "/1,0123456789ab", b"planted"),  # volume write
    ]
    out: list[tuple[str, requests.Response | str]] = []
    for method, path, body in probes:
        try:
            resp = requests.request(method, url + path, data=body, timeout=5, allow_redirects=False)
            out.append((f"{method} {path}", resp))
        except requests.RequestException as exc:  # no HTTP/1.1 answer at all: refused
            out.append((f"{method} {path}", type(exc).__name__))
    return out


def _grpc_probes(port: int) -> list[tuple[str, grpc.StatusCode]]:
    """Unauthenticated gRPC reads and writes of SeaweedFS's filer, master and volume server."""
    calls = [
        ("/filer_pb.SeaweedFiler/LookupDirectoryEntry", _field(1, "/buckets/warehouse/ports/t/data") + _field(2, "canary.parquet")),
        ("/filer_pb.SeaweedFiler/DeleteEntry", _field(1, "/buckets/warehouse/ports/t/data") + _field(2, "canary.parquet") + _field(4, True)),
        ("/master_pb.Seaweed/LookupVolume", _field(1, "1")),
        ("/master_pb.Seaweed/Assign", _field(1, 1)),
        ("/volume_server_pb.VolumeServer/VolumeServerStatus", b""),
        ("/volume_server_pb.VolumeServer/DeleteCollection", _field(1, "warehouse")),
    ]
    out = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        for method, request in calls:
            try:
                channel.unary_unary(method)(request, timeout=5)
                out.append((method, grpc.StatusCode.OK))
            except grpc.RpcError as err:
                out.append((method, err.code()))
    return out


def test_every_listening_port_refuses_unauthenticated_reads_and_writes(lake):
    lh, s3 = lake
    pids = [lh.info.pid, int(lh.info.ports["signer_pid"])]
    ports = set().union(*(_listening_ports(pid) for pid in pids))
    # weed's HTTP and gRPC ports, S3's gRPC, the catalog, the proxy: found without asking our config
    assert len(ports) >= 11, ports
    answered: list[str] = []
    for port in sorted(ports):
        for what, result in _http_probes(port):
            if isinstance(result, requests.Response) and (200 <= result.status_code < 300 or CANARY in result.content):
                answered.append(f"port {port}: HTTP {what} -> {result.status_code} {result.text[:120]!r}")
        for method, code in _grpc_probes(port):
            if code not in REFUSED_GRPC:
                answered.append(f"port {port}: gRPC {method} -> {code.name}")
    assert not answered, "\n".join(answered)
    assert s3.get_object(Bucket="warehouse", Key="ports/t/data/canary.parquet")["Body"].read() == CANARY
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="warehouse", Prefix="ports/").get("Contents", [])]
    assert not [k for k in keys if "planted" in k], keys


def test_the_node_certificate_opens_the_grpc_ports_the_probes_cannot(lake):
    """The control: with the lakehouse's own certificate the same filer lookup finds the canary, so
    the probes above fail for want of the certificate, not for a wrong request."""
    lh, _ = lake
    root = Path(lh._root)
    credentials = grpc.ssl_channel_credentials((root / "ca.crt").read_bytes(), (root / "node.key").read_bytes(),
                                               (root / "node.crt").read_bytes())
    filer_grpc = lh.info.ports["filer"] + 10000
    request = _field(1, "/buckets/warehouse/ports/t/data") + _field(2, "canary.parquet")
    options = [("grpc.ssl_target_name_override", "localhost")]
    with grpc.secure_channel(f"127.0.0.1:{filer_grpc}", credentials, options=options) as channel:
        answer = channel.unary_unary("/filer_pb.SeaweedFiler/LookupDirectoryEntry")(request, timeout=10)
    assert b"canary.parquet" in answer
    # and without it the TLS handshake itself fails
    context = ssl.create_default_context(cafile=str(root / "ca.crt"))
    context.check_hostname = False
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with context.wrap_socket(socket.create_connection(("127.0.0.1", filer_grpc), timeout=5)) as tls:
            tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            if not tls.recv(100):
                raise ConnectionError("closed")


def test_the_certificates_are_private_and_go_with_the_lakehouse():
    lh = Lakehouse().start()
    root = Path(lh._root)
    try:
        assert root.stat().st_mode & 0o777 == 0o700
        for name in ("ca.crt", "node.crt", "node.key", "security.toml"):
            assert (root / name).stat().st_mode & 0o777 == 0o600, name
        assert b"PRIVATE KEY" in (root / "node.key").read_bytes()
        assert not [p for p in root.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes() and p.name != "node.key"]
    finally:
        lh.stop()
    assert not root.exists()
