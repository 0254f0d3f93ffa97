"""The embedded lakehouse's S3 signer signs an allow-list only. Every test sends what the signer
signed (if it signed anything) to the real SeaweedFS and then checks what S3 actually did: object
copied or not, deleted or not, listed or not. The signer runs in-process in front of the session's
`lakehouse`; S3's real state is read with the admin keys (boto3), the test's ground truth."""

from __future__ import annotations

import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID
from tests.helpers import REST_ID_SCHEMA

BUCKET = "warehouse"


@pytest.fixture(scope="module")
def admin_s3(lakehouse):
    return boto3.client("s3", endpoint_url=lakehouse.info.s3_endpoint, region_name="us-east-1", aws_access_key_id=lakehouse.info.access_key,
                        aws_secret_access_key=lakehouse.info.secret_key, config=Config(s3={"addressing_style": "path"}))


@pytest.fixture(scope="module")
def token(signer) -> str:
    resp = requests.post(signer.url + "/v1/oauth/tokens", timeout=10, data={
        "grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": signer.clients[CLIENT_ID]})
    assert resp.status_code == 200, resp.text
    return resp.json()["access_token"]


@pytest.fixture(scope="module")
def tables(signer, token, admin_s3) -> dict[str, dict]:
    """Tables sg.a, sg.b and sg.ab (its location shares the name prefix of sg.a), created through
    the signer's catalog proxy, each with one data file written by the admin."""
    headers = {"Authorization": f"Bearer {token}", "X-Iceberg-Access-Delegation": "remote-signing"}
    requests.post(f"{signer.url}/v1/warehouse/namespaces", json={"namespace": ["sg"]}, headers=headers, timeout=10)
    out = {}
    for name in ("a", "b", "ab"):
        resp = requests.post(f"{signer.url}/v1/warehouse/namespaces/sg/tables", json={"name": name, "schema": REST_ID_SCHEMA}, headers=headers, timeout=10)
        assert resp.status_code == 200, resp.text
        location = resp.json()["metadata"]["location"]
        prefix = location.split("://", 1)[1].split("/", 1)[1]
        admin_s3.put_object(Bucket=BUCKET, Key=f"{prefix}/data/secret.parquet", Body=f"data of {name}".encode())
        out[name] = {"prefix": prefix, "endpoint": resp.json()["config"]["s3.signer.endpoint"]}
    return out


def _sign(signer, token, endpoint: str, method: str, url: str, headers: dict | None = None, body: str | None = None) -> requests.Response:
    request = {"region": "us-east-1", "method": method, "uri": url, "headers": {k: [v] for k, v in (headers or {}).items()}}
    if body is not None:
        request["body"] = body
    return requests.post(f"{signer.url}/{endpoint}", json=request, headers={"Authorization": f"Bearer {token}"}, timeout=10)


def _sign_and_send(signer, token, endpoint: str, method: str, url: str, headers: dict | None = None,
                   data: bytes | str | None = None, body: str | None = None) -> tuple[requests.Response, requests.Response | None]:
    """Ask for a signature and, if one comes back, send the request as a client would."""
    signed = _sign(signer, token, endpoint, method, url, headers, body)
    if signed.status_code != 200:
        return signed, None
    answer = signed.json()
    sent = {**(headers or {}), **{k: v[0] for k, v in answer["headers"].items()}}
    return signed, requests.request(method, answer["uri"], headers=sent, data=data, timeout=10)


def _exists(admin_s3, key: str) -> bool:
    try:
        admin_s3.head_object(Bucket=BUCKET, Key=key)
        return True
    except ClientError:
        return False


def _refused(resp: requests.Response, *needles: str) -> None:
    assert resp.status_code in (400, 403), (resp.status_code, resp.text[:300])
    message = resp.json()["error"]["message"]
    assert "\n" not in message and "Authorization" not in resp.text
    for needle in needles:
        assert needle in message, message


def test_cross_table_copy_is_refused_and_nothing_is_copied(lakehouse, signer, token, tables, admin_s3):
    a, b = tables["a"], tables["b"]
    s3 = lakehouse.info.s3_endpoint
    source = f"/{BUCKET}/{b['prefix']}/data/secret.parquet"
    for i, name in enumerate(("x-amz-copy-source", "X-Amz-Copy-Source", "x-amz-copy-source-range")):
        target = f"{a['prefix']}/data/copied-{i}.parquet"
        headers = {name: source} if name != "x-amz-copy-source-range" else {"x-amz-copy-source": source, name: "bytes=0-3"}
        signed, sent = _sign_and_send(signer, token, a["endpoint"], "PUT", f"{s3}/{BUCKET}/{target}", headers)
        _refused(signed, "copy source")
        assert sent is None and not _exists(admin_s3, target), f"B's data was copied into A by {name}"
    # the same PUT without a copy source is signed, and S3 takes it (the allow-list keeps PutObject)
    signed, sent = _sign_and_send(signer, token, a["endpoint"], "PUT", f"{s3}/{BUCKET}/{a['prefix']}/data/own.parquet", data=b"own")
    assert signed.status_code == 200 and sent is not None and sent.status_code == 200, sent and sent.text
    assert admin_s3.get_object(Bucket=BUCKET, Key=f"{a['prefix']}/data/own.parquet")["Body"].read() == b"own"


def test_multipart_upload_works_but_upload_part_copy_is_refused(lakehouse, signer, token, tables, admin_s3):
    a, b = tables["a"], tables["b"]
    url = f"{lakehouse.info.s3_endpoint}/{BUCKET}/{a['prefix']}/data/multi.parquet"
    signed, sent = _sign_and_send(signer, token, a["endpoint"], "POST", url + "?uploads")
    assert sent is not None and sent.status_code == 200, signed.text
    upload = re.search(r"<UploadId>(.+?)</UploadId>", sent.text).group(1)  # type: ignore[union-attr]
    part = f"{url}?partNumber=1&uploadId={quote(upload, safe='')}"
    signed, sent = _sign_and_send(signer, token, a["endpoint"], "PUT", part, {"x-amz-copy-source": f"/{BUCKET}/{b['prefix']}/data/secret.parquet"})
    _refused(signed, "copy source")
    listing = admin_s3.list_parts(Bucket=BUCKET, Key=f"{a['prefix']}/data/multi.parquet", UploadId=upload)
    assert not listing.get("Parts"), "UploadPartCopy put B's data into A's upload"
    # the allowed multipart operations, end to end: UploadPart, ListParts, CompleteMultipartUpload
    signed, sent = _sign_and_send(signer, token, a["endpoint"], "PUT", part, data=b"multipart body")
    assert sent is not None and sent.status_code == 200, signed.text
    etag = sent.headers["ETag"]
    signed, sent = _sign_and_send(signer, token, a["endpoint"], "GET", f"{url}?uploadId={quote(upload, safe='')}")
    assert sent is not None and sent.status_code == 200 and "<PartNumber>1</PartNumber>" in sent.text
    complete = f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part></CompleteMultipartUpload>"
    signed, sent = _sign_and_send(signer, token, a["endpoint"], "POST", f"{url}?uploadId={quote(upload, safe='')}", data=complete)
    assert sent is not None and sent.status_code == 200, (signed.text, sent and sent.text)
    assert admin_s3.get_object(Bucket=BUCKET, Key=f"{a['prefix']}/data/multi.parquet")["Body"].read() == b"multipart body"


def test_delete_objects_body_is_bound_to_what_the_signer_checked(lakehouse, signer, token, tables, admin_s3):
    a, b = tables["a"], tables["b"]
    s3 = lakehouse.info.s3_endpoint
    mine, theirs = f"{a['prefix']}/data/delete-me.parquet", f"{b['prefix']}/data/secret.parquet"
    admin_s3.put_object(Bucket=BUCKET, Key=mine, Body=b"x")

    def body(*keys: str) -> str:
        return '<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' + \
            "".join(f"<Object><Key>{k}</Key></Object>" for k in keys) + "</Delete>"

    signed = _sign(signer, token, a["endpoint"], "POST", f"{s3}/{BUCKET}?delete", body=body(mine))
    assert signed.status_code == 200, signed.text
    answer = signed.json()
    headers = {k: v[0] for k, v in answer["headers"].items()}
    # a different body on the signed request: refused, B's file is still there
    swapped = requests.post(answer["uri"], data=body(theirs).encode(), headers=headers, timeout=10)
    assert swapped.status_code == 403 and b"not the DeleteObjects body the signer checked" in swapped.content, swapped.text
    # ... and the answer holds nothing S3 would take by itself
    direct = requests.post(f"{s3}/{BUCKET}?delete", data=body(theirs).encode(), headers=headers, timeout=10)
    assert direct.status_code == 403
    assert _exists(admin_s3, theirs) and _exists(admin_s3, mine), "the swapped DeleteObjects body deleted something"
    # the body that was checked goes through, and S3 really deletes
    proper = requests.post(answer["uri"], data=body(mine).encode(), headers=headers, timeout=10)
    assert proper.status_code == 200 and f"<Key>{mine}</Key>" in proper.text, proper.text
    assert not _exists(admin_s3, mine) and _exists(admin_s3, theirs)
    # bodies the signer cannot check are refused before anything is signed
    for bad, needle in [(None, "without its body"), (body(mine, theirs), "outside the table"), ("<Delete></Delete>", "0 keys"),
                        ('<!DOCTYPE d [<!ENTITY e "x">]><Delete><Object><Key>&e;</Key></Object></Delete>', "DOCTYPE"),
                        (f"<Delete><Object><Key>{mine}</Key><VersionId>1</VersionId></Object></Delete>", "other than"),
                        (body(f"{a['prefix']}/../b/data/secret.parquet"), ".."), ("not xml", "not XML")]:
        _refused(_sign(signer, token, a["endpoint"], "POST", f"{s3}/{BUCKET}?delete", body=bad), needle)
    assert _exists(admin_s3, theirs)


@pytest.mark.parametrize("sub", ["acl", "policy", "tagging", "versionId=1", "uploads", "attributes", "retention", "legal-hold"])
def test_subresources_on_keys_inside_the_table_are_refused(lakehouse, signer, token, tables, admin_s3, sub):
    a = tables["a"]
    key = f"{a['prefix']}/data/secret.parquet"
    url = f"{lakehouse.info.s3_endpoint}/{BUCKET}/{key}?{sub}"
    tagging = "<Tagging><TagSet><Tag><Key>pce</Key><Value>leak</Value></Tag></TagSet></Tagging>"
    for method in ("GET", "PUT", "DELETE"):
        signed, sent = _sign_and_send(signer, token, a["endpoint"], method, url, data=tagging if method == "PUT" else None)
        _refused(signed, "allow-list")
    assert not admin_s3.get_object_tagging(Bucket=BUCKET, Key=key)["TagSet"], "a tag was set through the signer"
    assert _exists(admin_s3, key)


def test_headers_that_change_the_operation_are_refused(lakehouse, signer, token, tables, admin_s3):
    a = tables["a"]
    url = f"{lakehouse.info.s3_endpoint}/{BUCKET}/{a['prefix']}/data/public.parquet"
    for header in ({"x-amz-acl": "public-read"}, {"X-Amz-Grant-Read": "uri=http://acs.amazonaws.com/groups/global/AllUsers"},
                   {"x-amz-tagging": "pce=leak"}, {"x-amz-object-lock-mode": "GOVERNANCE"}):
        signed, sent = _sign_and_send(signer, token, a["endpoint"], "PUT", url, header, data=b"x")
        _refused(signed, next(iter(header)))
    assert not _exists(admin_s3, f"{a['prefix']}/data/public.parquet")
    bucket_policy = _sign(signer, token, a["endpoint"], "GET", f"{lakehouse.info.s3_endpoint}/{BUCKET}?policy")
    _refused(bucket_policy, "allow-list")


def test_list_prefix_must_lie_inside_the_table(lakehouse, signer, token, tables):
    a = tables["a"]
    s3 = lakehouse.info.s3_endpoint

    def listing(prefix: str) -> tuple[requests.Response, list[str]]:
        signed, sent = _sign_and_send(signer, token, a["endpoint"], "GET", f"{s3}/{BUCKET}?list-type=2&prefix={quote(prefix, safe='')}")
        return signed, re.findall(r"<Key>(.*?)</Key>", sent.text) if sent is not None else []

    signed, keys = listing(f"{a['prefix']}/")
    assert signed.status_code == 200 and f"{a['prefix']}/data/secret.parquet" in keys
    assert all(k.startswith(a["prefix"] + "/") for k in keys)
    for prefix in (f"{a['prefix']}/../b/", f"{a['prefix']}/%2e%2e/b/", f"{a['prefix']}/..", a["prefix"], "sg/", ""):
        signed, keys = listing(prefix)
        _refused(signed, "not signing GET")
        assert not keys, (prefix, keys)
    # the one that would really leak: "sg/a" lists the sibling table sg/ab too
    assert not [k for k in listing(a["prefix"])[1] if k.startswith(tables["ab"]["prefix"] + "/")]


class _Witness(BaseHTTPRequestHandler):
    """A loopback listener that records every request reaching it."""
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        self.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


def _raw(port: int, request: bytes, timeout: float = 5.0) -> bytes:
    """Send raw bytes (what `requests` would refuse to send) and read the answer: the server closes
    after a malformed request, so read until it does (a socket timeout fails the test)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_absolute_form_and_at_host_targets_are_not_proxied(lakehouse, signer, token, tables):
    witness = ThreadingHTTPServer(("127.0.0.1", 0), type("W", (_Witness,), {"seen": []}))
    threading.Thread(target=witness.serve_forever, daemon=True).start()
    try:
        port = witness.server_address[1]
        for target in (f"@127.0.0.1:{port}/latest/meta-data/", f"http://127.0.0.1:{port}/latest/meta-data/"):
            answer = _raw(signer.port, f"GET {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 400") and b"request target must be a path" in answer, (target, answer[:300])
        # the signer does not sign for a URI whose authority hides another host either
        a = tables["a"]
        s3 = lakehouse.info.s3_endpoint.split("://", 1)[1]
        _refused(_sign(signer, token, a["endpoint"], "GET", f"http://{s3}@127.0.0.1:{port}/{BUCKET}/{a['prefix']}/data/secret.parquet"), "@host")
        time.sleep(0.3)
        assert witness.RequestHandlerClass.seen == [], "a request reached the loopback listener through the signer"  # type: ignore[attr-defined]
    finally:
        witness.shutdown()
        witness.server_close()


def test_malformed_requests_are_refused_quickly(lakehouse, signer, token, tables):
    a = tables["a"]
    path = f"/{a['endpoint']}"
    for length, status in (("-1", b"400"), ("+5", b"400"), ("1_0", b"400"), ("5, 6", b"400"), (str(1 << 30), b"413")):
        started = time.monotonic()
        # the connection stays open: a signer that reads "until the end" would hang here
        answer = _raw(signer.port, f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Length: {length}\r\n\r\n{{".encode())
        assert answer.startswith(b"HTTP/1.1 " + status), (length, answer[:200])
        assert time.monotonic() - started < 2.0
        assert len([line for line in answer.split(b"\r\n\r\n", 1)[1].splitlines() if line]) == 1
    # the DeleteObjects relay takes no more than a DeleteObjects body either
    answer = _raw(signer.port, f"POST /v1/aws/s3/delete/x HTTP/1.1\r\nHost: x\r\nContent-Length: {2 << 20}\r\n\r\n<".encode())
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    url = f"{lakehouse.info.s3_endpoint}/{BUCKET}/{a['prefix']}/data/secret.parquet"
    _refused(_sign(signer, token, a["endpoint"], "PATCH", url), "not an S3 data operation")
    _refused(_sign(signer, token, a["endpoint"], "GET", url.replace(url.split("/")[2], "127.0.0.1:99999999")), "unparsable URI")
    _refused(_sign(signer, token, a["endpoint"], "GET", url + "?x-id=PutObject"), "allow-list")
    _refused(_sign(signer, token, a["endpoint"], "GET", url.replace("secret", "se cret")), "control characters")
    _refused(_sign(signer, token, a["endpoint"], "GET", f"{lakehouse.info.s3_endpoint}/{BUCKET}?prefix={a['prefix']}/%0Aforged"), "control characters")
    _refused(_sign(signer, token, a["endpoint"], "GET", url, {"x-amz-copy-source\nforged": "x"}), "copy source")
    _refused(_sign(signer, token, a["endpoint"], "GET", url, {"x-amz-meta-n": 5}), "S3SignRequest")  # type: ignore[dict-item]
    bad_json = requests.post(signer.url + path, data=b'{"method": "GET", "uri": 5}', headers={"Authorization": f"Bearer {token}"}, timeout=10)
    _refused(bad_json, "S3SignRequest")
