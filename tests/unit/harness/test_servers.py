"""Self-tests of the loopback test servers (tests/servers/) against a real SeaweedFS.

Needs the ``lakehouse`` fixture: tests/conftest.py starts an embedded SeaweedFS.
"""
from __future__ import annotations

import http.client
import io
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import boto3
import botocore
import pytest
import requests
from boto3.s3.transfer import TransferConfig
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from tests.servers import CatalogProxy, IdempotencyProxy, S3ExpiryProxy
from tests.servers.idempotency_proxy import parse_iso_duration

SCHEMA = {"type": "struct", "schema-id": 0,
          "fields": [{"id": 1, "name": "x", "type": "long", "required": False}]}
VENDED = {"X-Iceberg-Access-Delegation": "vended-credentials"}


# --------------------------------------------------------------------------- helpers


class Rest:
    """Minimal Iceberg REST client (requests) for driving the proxies."""

    def __init__(self, lakehouse, base: str, prefix: str, token: str):
        self.lh, self.base, self.prefix = lakehouse, base.rstrip("/"), prefix
        self.auth = {"Authorization": f"Bearer {token}"}

    def via(self, base: str) -> Rest:
        r = Rest(self.lh, base, self.prefix, "")
        r.auth = self.auth
        return r

    def tables(self, ns: str) -> str:
        return f"{self.base}/v1/{self.prefix}/namespaces/{quote(ns)}/tables"

    def stage(self, ns: str, name: str, **kw) -> requests.Response:
        return requests.post(self.tables(ns), headers={**self.auth, **VENDED}, timeout=30,
                             json={"name": name, "schema": SCHEMA, "stage-create": True}, **kw)

    def create(self, ns: str, name: str) -> requests.Response:
        return requests.post(self.tables(ns), headers={**self.auth, **VENDED}, timeout=30,
                             json={"name": name, "schema": SCHEMA})

    def load(self, ns: str, name: str) -> requests.Response:
        return requests.get(f"{self.tables(ns)}/{name}", headers={**self.auth, **VENDED}, timeout=30)

    def commit(self, ns: str, name: str, body: dict, key: str | None = None, timeout=30, **kw):
        headers = dict(self.auth)
        if key:
            headers["Idempotency-Key"] = key
        return requests.post(f"{self.tables(ns)}/{name}", headers=headers, json=body, timeout=timeout, **kw)

    def credentials(self, ns: str, name: str, **params) -> requests.Response:
        return requests.get(f"{self.tables(ns)}/{name}/credentials", headers=self.auth,
                            params=params, timeout=30)


def create_commit(ns: str, name: str, staged: dict) -> dict:
    md = staged["metadata"]
    return {"identifier": {"namespace": [ns], "name": name},
            "requirements": [{"type": "assert-create"}],
            "updates": [{"action": "assign-uuid", "uuid": md["table-uuid"]},
                        {"action": "upgrade-format-version", "format-version": 2},
                        {"action": "add-schema", "schema": SCHEMA},
                        {"action": "set-current-schema", "schema-id": -1},
                        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                        {"action": "set-default-spec", "spec-id": -1},
                        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                        {"action": "set-default-sort-order", "sort-order-id": -1},
                        {"action": "set-location", "location": md["location"]}]}


def s3_client(endpoint: str, cfg: dict | None = None, lakehouse=None, **extra):
    if cfg is not None:
        keys = dict(aws_access_key_id=cfg["s3.access-key-id"],
                    aws_secret_access_key=cfg["s3.secret-access-key"],
                    aws_session_token=cfg["s3.session-token"])
    else:
        keys = dict(aws_access_key_id=lakehouse.access_key, aws_secret_access_key=lakehouse.secret_key)
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}, **extra), **keys)


def bucket_and_key(location: str, leaf: str) -> tuple[str, str]:
    bucket, _, path = location.removeprefix("s3://").partition("/")
    return bucket, f"{path}/{leaf}"


def uid(tag: str) -> str:
    return f"{tag}_{uuid.uuid4().hex[:8]}"


def s3_error(fn) -> dict:
    with pytest.raises(botocore.exceptions.ClientError) as e:
        fn()
    return {**e.value.response["Error"],
            "status": e.value.response["ResponseMetadata"]["HTTPStatusCode"]}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def lake(lakehouse):
    """Connection facts (iceberg_uri, s3_endpoint, warehouse, access_key, secret_key),
    whether ``lakehouse`` carries them itself or on ``.info`` (pyspark_catalog_ext.lakehouse.server)."""
    return getattr(lakehouse, "info", None) or lakehouse


@pytest.fixture(scope="module")
def rest(lake):
    base = lake.iceberg_uri
    tok = requests.post(f"{base}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": lake.access_key,
        "client_secret": lake.secret_key, "scope": "catalog"}).json()["access_token"]
    cfg = requests.get(f"{base}/v1/config", params={"warehouse": lake.warehouse},
                       headers={"Authorization": f"Bearer {tok}"}, timeout=30).json()
    prefix = cfg.get("overrides", {}).get("prefix", lake.warehouse)
    return Rest(lake, base, prefix, tok)


@pytest.fixture(scope="module")
def ns(rest):
    name = uid("srv")
    r = requests.post(f"{rest.base}/v1/{rest.prefix}/namespaces", headers=rest.auth,
                      json={"namespace": [name]}, timeout=30)
    assert r.status_code == 200, r.text
    yield name
    listed = requests.get(rest.tables(name), headers=rest.auth, timeout=30).json()
    for ident in listed.get("identifiers", []):
        requests.delete(f"{rest.tables(name)}/{ident['name']}", headers=rest.auth, timeout=30)
    requests.delete(f"{rest.base}/v1/{rest.prefix}/namespaces/{name}", headers=rest.auth, timeout=30)


@pytest.fixture
def s3proxy(lake):
    with S3ExpiryProxy(lake.s3_endpoint, exempt={lake.access_key}) as p:
        yield p


@pytest.fixture
def catalog_proxy(lake):
    with CatalogProxy(lake.iceberg_uri) as p:
        yield p


@pytest.fixture
def staged(rest, ns):
    name = uid("t")
    r = rest.stage(ns, name)
    assert r.status_code == 200, r.text
    return name, r.json()


# --------------------------------------------------------------------------- S3 expiry proxy


def test_s3_proxy_forwards_sigv4_put_get_multipart_chunked(lake, staged, s3proxy):
    name, body = staged
    s3 = s3_client(s3proxy.url, body["config"])
    bucket, key = bucket_and_key(body["metadata"]["location"], "data/00000-small.parquet")
    s3.put_object(Bucket=bucket, Key=key, Body=b"hello")
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"hello"
    assert s3.head_object(Bucket=bucket, Key=key)["ContentLength"] == 5

    # multipart (3 parts) through boto3's transfer manager
    data = os.urandom(11 * 1024 * 1024)
    _, big = bucket_and_key(body["metadata"]["location"], "data/00001-big.parquet")
    s3.upload_fileobj(io.BytesIO(data), bucket, big,
                      Config=TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
    assert s3.get_object(Bucket=bucket, Key=big)["Body"].read() == data
    assert any("uploadId=" in e["path"] for e in s3proxy.log)

    # HTTP-level chunked body (presigned PUT from a generator): framing relayed as is.
    # Admin key: SeaweedFS 4.48 rejects presigned URLs made with STS session credentials.
    _, chunked = bucket_and_key(body["metadata"]["location"], "data/00002-chunked.parquet")
    admin = s3_client(s3proxy.url, lakehouse=lake)
    url = admin.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": chunked})
    r = requests.put(url, data=(b"x" * 1000 for _ in range(100)), timeout=30)
    assert r.status_code == 200, r.text
    assert s3.get_object(Bucket=bucket, Key=chunked)["Body"].read() == b"x" * 100_000
    assert any(e["chunked"] for e in s3proxy.log)
    assert any(e["expect"] for e in s3proxy.log)  # botocore's Expect: 100-continue on PUTs

    assert s3proxy.total_rejected == 0
    assert s3proxy.forwarded_by_key[body["config"]["s3.access-key-id"]] == s3proxy.forwarded - 1


def test_s3_proxy_keeps_host_so_sigv4_verifies_upstream(lake, s3proxy):
    """SeaweedFS checks header SigV4 against the Host it receives (after trying its
    -s3.externalUrl host). A request signed for Host X passes through the proxy only if the
    proxy relays X untouched; a Host that differs from the signed one is refused."""
    creds = Credentials(lake.access_key, lake.secret_key)

    def send(signed_host: str, sent_host: str) -> tuple[int, bytes]:
        req = AWSRequest(method="GET", url=f"http://{signed_host}/{lake.warehouse}?list-type=2")
        SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        conn = http.client.HTTPConnection("127.0.0.1", s3proxy.port, timeout=30)
        conn.putrequest("GET", f"/{lake.warehouse}?list-type=2", skip_host=True)
        for k, v in {**dict(req.headers), "Host": sent_host}.items():
            conn.putheader(k, v)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()

    assert send("bucket-host.example:1234", "bucket-host.example:1234")[0] == 200
    status, body = send("bucket-host.example:1234", "other.example:1234")
    assert status == 403 and b"SignatureDoesNotMatch" in body
    assert s3proxy.forwarded == 2 and s3proxy.total_rejected == 0


def test_s3_proxy_expires_keys_with_seaweedfs_shaped_403(lake, staged, s3proxy):
    _, body = staged
    cfg = body["config"]
    akid = cfg["s3.access-key-id"]
    bucket, key = bucket_and_key(body["metadata"]["location"], "data/00000-exp.parquet")
    s3 = s3_client(s3proxy.url, cfg)
    s3proxy.max_age_seconds = 0.5
    s3.put_object(Bucket=bucket, Key=key, Body=b"1")  # first sight starts the clock
    time.sleep(0.7)
    ours = s3_error(lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"2" * 2_000_000))
    assert s3proxy.rejected[akid] == 1 and s3proxy.forwarded == 1

    # same shape as SeaweedFS's own answer to an unknown key
    bogus = s3_client(lake.s3_endpoint, {**cfg, "s3.access-key-id": "AKIDNOTAKEY0000"})
    theirs = s3_error(lambda: bogus.put_object(Bucket=bucket, Key=key, Body=b"2"))
    assert {k: ours[k] for k in ("Code", "Message", "Key", "BucketName", "status")} == \
           {k: theirs[k] for k in ("Code", "Message", "Key", "BucketName", "status")}

    # HEAD and GET after expiry, and the ExpiredToken flavour
    s3proxy.error_code = "ExpiredToken"
    assert s3_error(lambda: s3.get_object(Bucket=bucket, Key=key))["Code"] == "ExpiredToken"
    assert s3_error(lambda: s3.head_object(Bucket=bucket, Key=key))["status"] == 403
    # the exempt admin key is never aged; None turns aging off at runtime
    admin = s3_client(s3proxy.url, lakehouse=lake)
    assert admin.get_object(Bucket=bucket, Key=key)["Body"].read() == b"1"
    s3proxy.max_age_seconds = None
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"1"
    assert s3proxy.rejected[akid] == 3


def test_s3_proxy_register_key_sets_the_issue_time(staged, s3proxy):
    _, body = staged
    cfg = body["config"]
    bucket, key = bucket_and_key(body["metadata"]["location"], "data/00000-reg.parquet")
    s3proxy.max_age_seconds = 5
    s3proxy.register_key(cfg["s3.access-key-id"], issued_at=time.time() - 10)
    err = s3_error(lambda: s3_client(s3proxy.url, cfg).put_object(Bucket=bucket, Key=key, Body=b"1"))
    assert err["Code"] == "InvalidAccessKeyId" and s3proxy.forwarded == 0


def test_a_late_signature_counts_as_late_only_without_a_renewal_in_time():
    """A request signed with keys past their hard margin is a late renewal (a failure) unless a newer
    key already signed a request on the same table before then: the renewal came in time and the
    caller was late (starved between taking its keys and signing, or a client's own retry)."""
    proxy = S3ExpiryProxy("http://127.0.0.1:9")  # never started: only its judgement is tested
    t0 = time.time()
    proxy.register_key("OLD", issued_at=t0)
    proxy.register_key("NEW", issued_at=t0 + 2.4)  # renewed at 0.6 of a 4 s lifetime, as FAST does
    refused = {"at": t0 + 9.2, "method": "GET", "path": "/lake/ns/t/data/b.parquet", "akid": "OLD", "status": 403,
               "signed_age": 9.0}

    def judged(newer_use: dict) -> str | None:
        proxy.log.clear()
        proxy.log.extend([{"method": "GET", "akid": "NEW", "status": 200, **newer_use}, refused])
        return proxy.signed_with_dying_keys(t0, 4.0)

    assert judged({"at": t0 + 2.6, "path": "/lake/ns/t/data/a.parquet"}) is None
    late = judged({"at": t0 + 2.6, "path": "/lake/ns/other/data/a.parquet"})  # another table's keys prove nothing
    assert late and "no newer key was in use on that table" in late, late
    assert "(9.2, 'GET', '/lake/ns/t/data/b.parquet', 403, 9.0)" in late, late  # what the late key sent, for the reader
    assert judged({"at": t0 + 8.0, "path": "/lake/ns/t/data/a.parquet"})  # renewed, but too late


def test_keys_issued_before_a_client_was_made_are_not_its_late_signatures():
    """An earlier test's client whose reads straggle on (its scan raised; PyIceberg's pool finishes the
    files it started) is refused with its dead keys: with `issued_since`, those keys are not the new
    client's, and only its own late signatures count."""
    proxy = S3ExpiryProxy("http://127.0.0.1:9")  # never started: only its judgement is tested
    t0 = time.time()
    proxy.register_key("EARLIER", issued_at=t0)
    proxy.register_key("OURS", issued_at=t0 + 3.0)
    proxy.log.extend([{"at": t0 + 8.4, "method": "HEAD", "path": "/lake/ns/many/data/a.parquet", "akid": "EARLIER",
                       "status": 403, "signed_age": 7.7}])
    assert proxy.signed_with_dying_keys(t0 + 3.5, 8.0)  # unfiltered: the straggler reads as a late signature
    assert proxy.signed_with_dying_keys(t0 + 3.5, 8.0, issued_since=t0 + 2.0) is None
    proxy.log.append({"at": t0 + 11.5, "method": "GET", "path": "/lake/ns/t/data/b.parquet", "akid": "OURS",
                      "status": 403, "signed_age": 7.9})
    assert "OURS" in (proxy.signed_with_dying_keys(t0 + 3.5, 8.0, issued_since=t0 + 2.0) or "")


def test_waiting_until_a_key_is_unused_outlasts_its_stragglers():
    proxy = S3ExpiryProxy("http://127.0.0.1:9")  # never started: its log is written here
    stop = time.monotonic() + 1.0

    def straggle() -> None:
        while time.monotonic() < stop:
            proxy.log.append({"at": time.time(), "method": "HEAD", "path": "/lake/ns/t/a", "akid": "GONE", "status": 403})
            time.sleep(0.1)

    writer = threading.Thread(target=straggle, daemon=True)
    writer.start()
    proxy.wait_until_unused("GONE", quiet_s=0.3)
    assert not writer.is_alive() and time.time() - proxy.log[-1]["at"] >= 0.3
    with pytest.raises(AssertionError, match="still arrive"):
        proxy.log.append({"at": time.time() + 60, "method": "HEAD", "path": "/lake/ns/t/a", "akid": "GONE", "status": 403})
        proxy.wait_until_unused("GONE", quiet_s=0.3, timeout_s=0.5)


# --------------------------------------------------------------------------- catalog proxy


def test_refresh_token_roundtrip_for_a_staged_table(rest, ns, lake):
    with CatalogProxy(lake.iceberg_uri, refresh_tokens=True) as proxy:
        via = rest.via(proxy.url)
        name = uid("t")
        staged = via.stage(ns, name).json()
        cred = staged["storage-credentials"][0]
        token = cred["storage-refresh-token"]
        # data already at the location: a re-stage must still land on the same location
        bucket, key = bucket_and_key(staged["metadata"]["location"], "data/00000-q.parquet")
        s3_client(lake.s3_endpoint, cred["config"]).put_object(Bucket=bucket, Key=key, Body=b"1")
        r = via.credentials(ns, name, storageRefreshToken=token)
        assert r.status_code == 200, r.text
        fresh = r.json()["storage-credentials"][0]
        assert fresh["prefix"] == cred["prefix"]
        assert fresh["config"]["s3.access-key-id"] != cred["config"]["s3.access-key-id"]
        assert fresh["storage-refresh-token"] and fresh["storage-refresh-token"] != token
        # the fresh credentials work on the staged table's location
        bucket, key = bucket_and_key(staged["metadata"]["location"], "data/00000-r.parquet")
        s3_client(lake.s3_endpoint, fresh["config"]).put_object(Bucket=bucket, Key=key, Body=b"1")
        # ...and the new token refreshes again
        assert via.credentials(ns, name, storageRefreshToken=fresh["storage-refresh-token"]).ok
        assert proxy.count("stage-create", table=f"{ns}.{name}") == 1
        assert proxy.count("credentials", table=f"{ns}.{name}") == 2
        # the table is still only staged
        assert rest.load(ns, name).status_code == 404


def test_refresh_token_errors(rest, ns, lake):
    with CatalogProxy(lake.iceberg_uri, refresh_tokens=True) as proxy:
        via = rest.via(proxy.url)
        a, b = uid("a"), uid("b")
        tok_a = via.stage(ns, a).json()["storage-credentials"][0]["storage-refresh-token"]
        via.stage(ns, b)

        def err(r):
            return r.status_code, r.json()["error"]["type"], r.json()["error"]["message"]

        claims, mac = tok_a.split(".")
        tampered = claims[:-2] + ("AA" if claims[-2:] != "AA" else "BB") + "." + mac
        assert err(via.credentials(ns, a, storageRefreshToken=tampered))[:2] == (401, "NotAuthorizedException")
        assert err(via.credentials(ns, a, storageRefreshToken="garbage"))[0] == 401
        assert err(via.credentials(ns, b, storageRefreshToken=tok_a)) == (
            401, "NotAuthorizedException", "storage refresh token is not valid for this table")
        assert err(via.credentials(ns, a, storageRefreshToken=tok_a, planId="p1"))[:2] == (
            400, "BadRequestException")
        # expired: the proxy's clock moves past the token TTL
        proxy.clock = lambda: time.time() + proxy.token_ttl_seconds + 1
        assert err(via.credentials(ns, a, storageRefreshToken=tok_a)) == (
            401, "NotAuthorizedException", "storage refresh token expired")
        proxy.clock = time.time
        # a validly signed token for a table the catalog doesn't know
        ghost = proxy.signer.sign(rest.prefix, [ns], "ghost", "s3://x/y", time.time() + 60)
        assert err(via.credentials(ns, "ghost", storageRefreshToken=ghost))[:2] == (404, "NoSuchTableException")
        # without a token (and no advertised endpoint) it is SeaweedFS's own 404
        assert via.credentials(ns, a).status_code == 404
        assert proxy.upstream_log[-1]["path"].endswith(f"/{a}/credentials")


def test_refresh_token_for_a_committed_table_reloads(rest, ns, lake):
    with CatalogProxy(lake.iceberg_uri, refresh_tokens=True) as proxy:
        via = rest.via(proxy.url)
        name = uid("t")
        created = via.create(ns, name).json()
        token = created["storage-credentials"][0]["storage-refresh-token"]
        r = via.credentials(ns, name, storageRefreshToken=token)
        assert r.status_code == 200, r.text
        assert [e["method"] + " " + e["path"].rsplit("/", 1)[-1] for e in proxy.upstream_log[-1:]] == [
            f"GET {name}"]  # served by a load, not a re-stage
        assert "storage-refresh-token" in via.load(ns, name).json()["storage-credentials"][0]


def test_short_lifetime_endpoint_rewrite_and_advertised_endpoint(rest, ns, lake, s3proxy):
    with CatalogProxy(lake.iceberg_uri, short_lifetime_seconds=5, s3_endpoint=s3proxy.url,
                      s3_proxy=s3proxy, advertise_refresh_endpoint=True) as proxy:
        via = rest.via(proxy.url)
        name = uid("t")
        before = time.time()
        body = via.stage(ns, name).json()
        for cfg in (body["config"], body["storage-credentials"][0]["config"]):
            assert cfg["s3.endpoint"] == s3proxy.url
            assert abs(int(cfg["s3.session-token-expires-at-ms"]) / 1000 - (before + 5)) < 2
            assert s3proxy.issued_at(cfg["s3.access-key-id"]) >= before
        endpoint = body["config"]["client.refresh-credentials-endpoint"]
        assert endpoint == f"v1/{rest.prefix}/namespaces/{ns}/tables/{name}/credentials"
        # Iceberg resolves it against the catalog URI; works for the staged table, no token
        r = requests.get(f"{proxy.url}/{endpoint}", headers=rest.auth, timeout=30)
        assert r.status_code == 200, r.text
        fresh = r.json()["storage-credentials"][0]["config"]
        assert fresh["s3.endpoint"] == s3proxy.url and s3proxy.issued_at(fresh["s3.access-key-id"])
        # short lifetime enforced by the S3 proxy, agreed with the catalog
        s3proxy.max_age_seconds = 5
        bucket, key = bucket_and_key(body["metadata"]["location"], "data/00000-s.parquet")
        s3_client(s3proxy.url, fresh).put_object(Bucket=bucket, Key=key, Body=b"1")
        proxy.short_lifetime_seconds = None  # runtime switch: original expiry passes through
        again = via.load(ns, name)
        assert again.status_code == 404  # staged only
        assert proxy.counts() == {"stage-create": 1, "credentials": 1, "load": 1}


def test_fault_error_before_forwarding(rest, ns, catalog_proxy):
    via = rest.via(catalog_proxy.url)
    name = uid("t")
    f = catalog_proxy.faults.add("error", "POST", r"/tables$", status=503)
    r = via.stage(ns, name)
    assert r.status_code == 503 and r.json()["error"]["code"] == 503
    assert catalog_proxy.upstream_log == [] and f.fired == 1
    assert via.stage(ns, name).status_code == 200  # only the next 1 matching request


def test_fault_drop_after_apply_then_replay_conflicts(rest, ns, staged, catalog_proxy):
    name, body = staged
    via = rest.via(catalog_proxy.url)
    catalog_proxy.faults.add("drop", "POST", rf"/tables/{name}$")
    with pytest.raises(requests.ConnectionError):
        via.commit(ns, name, create_commit(ns, name, body))
    assert rest.load(ns, name).status_code == 200  # SeaweedFS applied it
    assert via.commit(ns, name, create_commit(ns, name, body)).status_code == 409


def test_fault_delay_past_client_timeout(rest, ns, staged, catalog_proxy):
    name, body = staged
    via = rest.via(catalog_proxy.url)
    catalog_proxy.faults.add("delay", "POST", rf"/tables/{name}$", seconds=1.5)
    with pytest.raises(requests.Timeout):
        via.commit(ns, name, create_commit(ns, name, body), timeout=0.5)
    assert rest.load(ns, name).status_code == 200


def test_fault_duplicate_returns_second_answer(rest, ns, staged, catalog_proxy):
    name, body = staged
    via = rest.via(catalog_proxy.url)
    catalog_proxy.faults.add("duplicate", "POST", rf"/tables/{name}$")
    r = via.commit(ns, name, create_commit(ns, name, body))
    assert r.status_code == 409  # the first applied, the duplicate hit assert-create
    assert [e["status"] for e in catalog_proxy.upstream_log] == [200, 409]
    assert catalog_proxy.count("commit", table=f"{ns}.{name}") == 1


def test_fault_after_apply_with_retry_after_then_error(rest, ns, staged, catalog_proxy):
    name, body = staged
    via = rest.via(catalog_proxy.url)
    catalog_proxy.faults.add("after", "POST", rf"/tables/{name}$", status=503, headers=[("Retry-After", "1")])
    catalog_proxy.faults.add("error", "POST", rf"/tables/{name}$", status=403)
    first = via.commit(ns, name, create_commit(ns, name, body))
    assert (first.status_code, first.headers["Retry-After"]) == (503, "1")
    assert rest.load(ns, name).status_code == 200  # SeaweedFS applied it behind the 503
    second = via.commit(ns, name, create_commit(ns, name, body))
    assert (second.status_code, second.json()["error"]["type"]) == (403, "ForbiddenException")
    assert [e["status"] for e in catalog_proxy.upstream_log] == [200]  # the 403 never went upstream


def test_fault_redirect_answers_without_forwarding(rest, ns, staged, catalog_proxy):
    name, body = staged
    via = rest.via(catalog_proxy.url)
    target = "http://127.0.0.1:9/elsewhere"
    catalog_proxy.faults.add("redirect", "POST", rf"/tables/{name}$", status=307, location=target)
    r = via.commit(ns, name, create_commit(ns, name, body), allow_redirects=False)
    assert (r.status_code, r.headers["Location"]) == (307, target)
    assert catalog_proxy.upstream_log == []
    with pytest.raises(ValueError, match="needs a location"):
        catalog_proxy.faults.add("redirect", "POST", status=303)


def test_fault_hang_is_bounded_by_stop(rest, ns, lake):
    proxy = CatalogProxy(lake.iceberg_uri).start()
    proxy.faults.add("hang", "GET", r"/v1/config")
    started = time.monotonic()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(requests.get, f"{proxy.url}/v1/config", headers=rest.auth, timeout=30)
        time.sleep(0.3)
        assert not fut.done()
        proxy.stop()
        with pytest.raises(requests.ConnectionError):
            fut.result(timeout=10)
    assert time.monotonic() - started < 5 and proxy.upstream_log == []


# --------------------------------------------------------------------------- idempotency proxy


@pytest.fixture
def idem(lake):
    with IdempotencyProxy(lake.iceberg_uri, lifetime="PT30M") as p:
        yield p


def test_idempotency_lifetime_advertised(rest, idem):
    cfg = requests.get(f"{idem.url}/v1/config", params={"warehouse": rest.lh.warehouse},
                       headers=rest.auth, timeout=30).json()
    assert cfg["idempotency-key-lifetime"] == "PT30M" and cfg["overrides"]["prefix"] == rest.prefix
    assert parse_iso_duration("PT30M") == 1800 and parse_iso_duration("P1DT1H") == 90000


def test_idempotency_lost_response_is_replayed(rest, ns, staged, idem):
    name, body = staged
    via, key = rest.via(idem.url), str(uuid.uuid4())
    idem.faults.add("drop", "POST", rf"/tables/{name}$")  # outer edge: after finalizing
    with pytest.raises(requests.ConnectionError):
        via.commit(ns, name, create_commit(ns, name, body), key=key)
    r = via.commit(ns, name, create_commit(ns, name, body), key=key)
    assert r.status_code == 200 and r.headers["Idempotent-Replayed"] == "true"
    assert r.json()["metadata"]["table-uuid"] == body["metadata"]["table-uuid"]
    assert idem.executions == 1 and idem.replays == 1 and idem.entries() == {key: 200}
    # a new key is a new operation: SeaweedFS says the table exists
    assert via.commit(ns, name, create_commit(ns, name, body), key=str(uuid.uuid4())).status_code == 409


def test_idempotency_terminal_4xx_finalized_and_5xx_not(rest, ns, staged, lake):
    name, body = staged
    # idempotency proxy -> fault proxy -> SeaweedFS: the 503 comes from "the catalog"
    with CatalogProxy(lake.iceberg_uri) as inner, IdempotencyProxy(inner.url) as idem:
        via, key = rest.via(idem.url), str(uuid.uuid4())
        inner.faults.add("error", "POST", rf"/tables/{name}$", status=503)
        assert via.commit(ns, name, create_commit(ns, name, body), key=key).status_code == 503
        assert idem.entries() == {}  # released
        r = via.commit(ns, name, create_commit(ns, name, body), key=key)
        assert r.status_code == 200 and "Idempotent-Replayed" not in r.headers
        assert idem.executions == 2 and inner.count("commit") == 2
        # a terminal 4xx (409 from assert-create) is finalized and replayed
        key2 = str(uuid.uuid4())
        assert via.commit(ns, name, create_commit(ns, name, body), key=key2).status_code == 409
        r = via.commit(ns, name, create_commit(ns, name, body), key=key2)
        assert r.status_code == 409 and r.headers["Idempotent-Replayed"] == "true"
        assert inner.count("commit") == 3  # the replay never reached the catalog


def test_idempotency_key_reuse_for_another_request_is_422(rest, ns, staged, idem):
    name, body = staged
    via, key = rest.via(idem.url), str(uuid.uuid4())
    assert via.commit(ns, name, create_commit(ns, name, body), key=key).status_code == 200
    other = {"identifier": {"namespace": [ns], "name": name}, "requirements": [],
             "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    r = via.commit(ns, name, other, key=key)  # same key, different body
    assert r.status_code == 422 and r.json()["error"]["code"] == 422
    r = requests.post(f"{via.base}/v1/{rest.prefix}/namespaces", json={"namespace": [uid("n")]},
                      headers={**rest.auth, "Idempotency-Key": key}, timeout=30)  # other resource
    assert r.status_code == 422
    assert idem.mismatches == 2 and idem.executions == 1
    # requests without a key pass straight through
    assert via.commit(ns, name, other).status_code == 200


@pytest.mark.parametrize("policy", ["wait", "conflict"])
def test_idempotency_race_two_concurrent_requests_same_key(rest, ns, staged, lake, policy):
    name, body = staged
    # slow the catalog's answer so the two requests overlap inside the idempotency proxy
    with CatalogProxy(lake.iceberg_uri) as inner, \
            IdempotencyProxy(inner.url, in_flight_policy=policy) as idem:
        inner.faults.add("delay", "POST", rf"/tables/{name}$", seconds=1.0)
        via, key = rest.via(idem.url), str(uuid.uuid4())
        commit = create_commit(ns, name, body)
        barrier = threading.Barrier(2)

        def send():
            barrier.wait()
            return via.commit(ns, name, commit, key=key)

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda _: send(), range(2)))
        statuses = sorted(r.status_code for r in results)
        replayed = sorted(r.headers.get("Idempotent-Replayed", "") for r in results)
        assert inner.count("commit") == 1 and idem.executions == 1  # exactly one reached SeaweedFS
        if policy == "wait":
            assert statuses == [200, 200] and replayed == ["", "true"]
            uuids = {r.json()["metadata"]["table-uuid"] for r in results}
            assert uuids == {body["metadata"]["table-uuid"]}
        else:
            assert statuses == [200, 409] and idem.conflicts == 1
        assert rest.load(ns, name).status_code == 200


def test_fault_proxy_in_front_of_idempotency_proxy(rest, ns, staged, lake):
    name, body = staged
    with IdempotencyProxy(lake.iceberg_uri) as idem, CatalogProxy(idem.url) as outer:
        via, key = rest.via(outer.url), str(uuid.uuid4())
        outer.faults.add("delay", "POST", rf"/tables/{name}$", seconds=1.5)
        with pytest.raises(requests.Timeout):
            via.commit(ns, name, create_commit(ns, name, body), key=key, timeout=0.5)
        outer.faults.add("duplicate", "POST", rf"/tables/{name}$")
        r = via.commit(ns, name, create_commit(ns, name, body), key=key)
        assert r.status_code == 200 and r.headers["Idempotent-Replayed"] == "true"
        assert idem.executions == 1 and idem.replays == 2
