"""Property-based tests (hypothesis) of the remote signer's request checks: whatever the encoding
(percent, double percent, NFC/NFD), header duplicates and case, odd methods and whitespace, `..`
segments and query subresources, nothing is signed outside the table's prefix as S3 would read the
key. A sample of the signed requests is then replayed against the real SeaweedFS S3: no object
outside the prefix appears, changes or is read."""

from __future__ import annotations

import posixpath
import re
import unicodedata
import uuid
from urllib.parse import parse_qsl, unquote, urlsplit

import boto3
import pytest
import requests
from botocore.config import Config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyspark_catalog_ext.lakehouse.signer import SigningCatalogProxy
from tests.helpers import REST_ID_SCHEMA

BUCKET = "warehouse"
CANARY = b"the other table's data"


@pytest.fixture(scope="module")
def setup(lakehouse):
    """A signer on the session lakehouse, table prop.t (the scope) and prop.other with a canary file."""
    info = lakehouse.info
    proxy = SigningCatalogProxy(info.iceberg_uri, info.s3_endpoint, info.access_key, info.secret_key).start()
    token = requests.post(proxy.url + "/v1/oauth/tokens", timeout=10, data={
        "grant_type": "client_credentials", "client_id": "lakeclient", "client_secret": proxy.clients["lakeclient"]}).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    ns = "prop" + uuid.uuid4().hex[:6]
    base = f"{proxy.url}/v1/{BUCKET}/namespaces"
    requests.post(base, json={"namespace": [ns]}, headers=headers, timeout=10).raise_for_status()
    scopes = {}
    for name in ("t", "other"):
        resp = requests.post(f"{base}/{ns}/tables", json={"name": name, "schema": REST_ID_SCHEMA}, headers=headers, timeout=10)
        resp.raise_for_status()
        scopes[name] = resp.json()["config"]["s3.signer.endpoint"].rsplit("/", 1)[1]
    s3 = boto3.client("s3", endpoint_url=info.s3_endpoint, region_name="us-east-1", aws_access_key_id=info.access_key,
                      aws_secret_access_key=info.secret_key, config=Config(s3={"addressing_style": "path"}))
    s3.put_object(Bucket=BUCKET, Key=f"{ns}/other/data/canary.parquet", Body=CANARY)
    yield {"proxy": proxy, "scope": scopes["t"], "prefix": f"{ns}/t", "ns": ns, "s3": s3, "endpoint": info.s3_endpoint}
    proxy.stop()


# -- what S3 would read ----------------------------------------------------------------------------
def _readings(key: str) -> set[str]:
    """Every key a server could make of `key`: as sent, decoded once more, with . and .. resolved,
    backslashes as slashes, NFC and NFD."""
    out: set[str] = set()
    for form in (key, unquote(key)):
        for form2 in (form, form.replace("\\", "/")):
            resolved = posixpath.normpath("/" + form2).lstrip("/") + ("/" if form2.endswith("/") else "")
            for f in (form2, resolved):
                out |= {f, unicodedata.normalize("NFC", f), unicodedata.normalize("NFD", f)}
    return out


def _inside(prefix: str, key: str) -> bool:
    return all(r.startswith(prefix + "/") for r in _readings(key))


def _s3_keys(url: str, body: str | None) -> tuple[str, list[str]]:
    """(bucket, keys) S3 reads from a path-style URL (+ list prefix / DeleteObjects body)."""
    parts = urlsplit(url)
    bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    if key:
        return bucket, [key]
    keys = [params["prefix"]] if "prefix" in params else []
    if body:
        keys += re.findall(r"<Key>(.*?)</Key>", body, flags=re.S)
    return bucket, keys or [""]


# -- strategies ----------------------------------------------------------------------------------
# plain values repeated: about half the requests should be ones the signer signs
PLAIN = ["data", "metadata", "f.parquet", "part-0.parquet", "v1.metadata.json"] * 6
SEGMENTS = st.sampled_from([*PLAIN, "data", "metadata", "f.parquet", ".", "..", "%2e", "%2E%2E", "%252e%252e", "..%2f", "%2F", "other",
                            "t", "caf\u00e9", "cafe\u0301", "a b", "x\\..", "\u2024\u2024", "%00", "~", "t2", ""])
METHODS = st.sampled_from(["GET", "HEAD", "PUT", "DELETE"] * 5 + ["GET", "HEAD", "PUT", "POST", "DELETE", "get", "PATCH", "COPY", "OPTIONS", " GET", "GET "])
QUERIES = st.sampled_from([""] * 30 + ["?uploads", "?uploadId=1", "?partNumber=1&uploadId=1"] * 3 + ["", "?acl", "?uploads", "?uploadId=1", "?partNumber=1&uploadId=1", "?delete", "?tagging", "?versionId=1",
                           "?x-id=GetObject", "?x-id=PutObjectAcl", "?list-type=2&prefix=", "?prefix=", "?uploadId=1&uploadId=2",
                           "?policy", "?list-type=1&prefix="])
HEADERS = st.dictionaries(st.sampled_from(["x-amz-copy-source", "X-Amz-Copy-Source", "X-AMZ-ACL", "x-amz-tagging", "Range",
                                           "Content-Type", "x-amz-meta-a", " x-amz-copy-source", "x-amz-grant-read",
                                           "Content-MD5", "x-amz-date"]),
                          st.one_of(st.just("v"), st.lists(st.sampled_from(["a", "b", " ", "bucket/key"]), max_size=3)), max_size=2)


@st.composite
def requests_(draw, ns_prefix: str = "") -> dict:
    root = draw(st.sampled_from(["{t}"] * 8 + ["{other}", "{ns}", "", "{t}2"]))
    segs = draw(st.lists(SEGMENTS, max_size=5))
    key = "/".join([root, *segs]) if root else "/".join(segs)
    query = draw(QUERIES)
    bucket = draw(st.sampled_from([BUCKET] * 8 + ["other-bucket", BUCKET + "%2F.."]))
    bucket_level = draw(st.integers(0, 3)) == 0
    query = draw(st.sampled_from(["?list-type=2&prefix=", "?prefix=", "?delete", "?list-type=1&prefix="])) if bucket_level else query
    bucket_level = bucket_level and query in ("?list-type=2&prefix=", "?prefix=", "?delete", "?list-type=1&prefix=")
    body = None
    if bucket_level:
        if "prefix" in query:
            query = query + key
        else:
            keys = draw(st.lists(st.just(key) | st.sampled_from(["{t}/data/x", "{other}/data/canary.parquet"]), min_size=1, max_size=3))
            body = "<Delete>" + "".join(f"<Object><Key>{k}</Key></Object>" for k in keys) + "</Delete>"
        path = f"/{bucket}"
    else:
        path = f"/{bucket}/{key}"
    method = "POST" if "delete" in query else "GET" if "prefix" in query and draw(st.booleans()) else draw(METHODS)
    headers = draw(HEADERS) if draw(st.booleans()) else {}
    return {"method": method, "path": path, "query": query, "headers": headers, "body": body,
            "host": draw(st.sampled_from(["{s3}"] * 8 + ["http://127.0.0.1:1", "{s3}@evil"]))}


SIGNED: list[dict] = []


@settings(max_examples=500, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(req=requests_())
def test_nothing_is_signed_outside_the_table_prefix(setup, req):
    proxy, prefix, ns = setup["proxy"], setup["prefix"], setup["ns"]

    def fill(text: str) -> str:
        return text.replace("{t}", prefix).replace("{other}", f"{ns}/other").replace("{ns}", ns).replace("{s3}", setup["endpoint"])

    url = fill(req["host"]) + fill(req["path"]) + fill(req["query"])
    body = fill(req["body"]) if req["body"] else None
    method = req["method"].strip().upper() if req["method"].strip() == req["method"] else req["method"]
    why = proxy.check_request(setup["scope"], method, url, req["headers"], body)
    if why is not None:
        assert "\n" not in why
        return
    signed = proxy.sign({"method": method, "uri": url, "region": "us-east-1", "headers": req["headers"], "body": body})
    if "/v1/aws/s3/delete/" not in signed["uri"]:
        assert signed["uri"] == url  # the signature is for exactly the request that was checked
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == setup["endpoint"]
    bucket, keys = _s3_keys(url, body)
    assert bucket == BUCKET
    for key in keys:
        assert _inside(prefix, key), f"signed {method} {url} reaches {key!r} outside {prefix}/"
    if len(SIGNED) < 500:
        SIGNED.append({"method": method, "url": url, "headers": req["headers"], "signed": signed, "body": body})


def test_a_sample_of_signed_requests_replayed_on_s3_stays_inside(setup):
    """Replays up to 20 of the requests the property test got signed (run after it) on the real S3."""
    if not SIGNED:
        pytest.skip("run with test_nothing_is_signed_outside_the_table_prefix first")
    s3, prefix, ns = setup["s3"], setup["prefix"], setup["ns"]

    def outside() -> dict[str, str]:
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{ns}/").get("Contents") or []
        return {o["Key"]: o["ETag"] for o in listed if not o["Key"].startswith(prefix + "/")}

    before = outside()
    step = max(1, len(SIGNED) // 20)
    statuses = []
    for item in SIGNED[::step][:20]:
        answer = item["signed"]
        headers = {k: (",".join(v) if isinstance(v, list) else v) for k, v in item["headers"].items()
                   if k.strip().lower().startswith("x-amz-") or k.lower() in ("content-type", "range", "content-md5")}
        headers.update({k: v[0] for k, v in answer["headers"].items()})
        data = item["body"].encode() if item["body"] else (b"written by the replay" if item["method"] == "PUT" else None)
        try:
            resp = requests.request(item["method"], answer["uri"], headers=headers, data=data, timeout=10)
        except (requests.RequestException, ValueError):
            continue  # a request requests cannot send is no request S3 saw
        statuses.append(resp.status_code)
        key = unquote(urlsplit(item["url"]).path).split("/", 2)[-1]
        plain = item["method"] in ("GET", "HEAD", "PUT") and not urlsplit(item["url"]).query and not item["headers"]
        if plain and re.fullmatch(rf"{re.escape(prefix)}/data/([A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+\.parquet", key) and ".." not in key.split("/"):
            # a plain data-file request inside the table: S3 takes the signature (found or not found);
            # other keys may meet SeaweedFS's table-bucket layout rules (403 even for the admin)
            assert resp.status_code in (200, 404), (item["method"], key, resp.status_code, resp.text[:200])
        assert CANARY not in resp.content
    assert outside() == before, "a replayed signed request changed an object outside the table"
    assert s3.get_object(Bucket=BUCKET, Key=f"{ns}/other/data/canary.parquet")["Body"].read() == CANARY
    # Of 500 random requests, 40-88 were signed in ten runs here: 20 leaves room for chance, while a
    # generator that misses the allowed space signs next to none.
    assert len(SIGNED) >= 20, f"only {len(SIGNED)} of the generated requests were signed: the generator misses the allowed space"
    assert len(statuses) >= 10, statuses


