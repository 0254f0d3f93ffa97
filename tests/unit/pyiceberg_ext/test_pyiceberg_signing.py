"""PyIceberg jobs on a catalog that signs instead of vending: the embedded lakehouse in signing mode
(its signer signs only objects inside a table's stored location), with each FileIO. A loopback
proxy in front of it records every sign request (and names itself as the signer in table answers).

Every S3 request of a scan, an append, an overwrite, a delete (DeleteObjects, body and Content-MD5
seen by the signer) and a multipart write is signed by the table's own signer; a table's signer never
sees another table's location; a refusal is one line and is not retried; a scan outlives the
signer's token; Iceberg 1.12's remote-signing-config works as the older keys do.
"""

from __future__ import annotations

import base64
import hashlib
import time
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyspark_catalog_ext.errors import SigningRefusedError
from pyspark_catalog_ext.lakehouse.server import Lakehouse
from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID, SigningCatalogProxy
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.storage.signing import SIGNATURE_LIFETIME_S, SIGNATURE_MARGIN_S, signer_target
from tests.helpers import ID_SCHEMA, id_rows
from tests.servers.signer_proxy import RefusingS3Proxy, SignerProxy

FILEIOS = {"pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO", "fsspec": "pyiceberg.io.fsspec.FsspecFileIO"}
NS = "signed"


@pytest.fixture(scope="module")
def signing_lake():
    lake = Lakehouse(delegation="remote-signing").start()
    yield lake
    lake.stop()


@pytest.fixture(scope="module")
def proxy(signing_lake):
    with SignerProxy(signing_lake.info.iceberg_uri) as p:
        yield p


@pytest.fixture(autouse=True)
def fresh_proxy(request):
    if "proxy" in request.fixturenames:
        p = request.getfixturevalue("proxy")
        p.faults.clear()
        p.table_config, p.signing_config, p.signer_uri, p.as_signing_config, p.sign_delay_s = {}, None, None, None, 0.0
        p.sign_cache_control, p.sign_date_age_s = None, 0.0
        p.config_overrides, p.drop_table_keys = {}, set()
        with p._lock:
            p.signs.clear()
    yield


def catalog(lake, uri: str, io: str, **extra):
    return pyiceberg_catalog(lake, uri=uri, **{"oauth2-server-uri": f"{uri}/v1/oauth/tokens", "py-io-impl": FILEIOS[io]},
                             **extra)


def fresh_table(cat, name: str, properties: dict | None = None, schema: pa.Schema = ID_SCHEMA):
    cat.create_namespace_if_not_exists(NS)
    if cat.table_exists(f"{NS}.{name}"):
        cat.drop_table(f"{NS}.{name}")
    return cat.create_table(f"{NS}.{name}", schema, properties=properties or {})


def s3_admin(lake):
    import boto3
    from botocore.config import Config

    info = lake.info
    return boto3.client("s3", endpoint_url=info.s3_endpoint, aws_access_key_id=info.access_key,
                        aws_secret_access_key=info.secret_key, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


def s3_key(location: str) -> tuple[str, str]:
    bucket, _, key = location.split("://", 1)[1].partition("/")
    return bucket, key


def exists(lake, location: str) -> bool:
    bucket, key = s3_key(location)
    try:
        s3_admin(lake).head_object(Bucket=bucket, Key=key)
        return True
    except Exception:  # noqa: BLE001 - ClientError 404
        return False


def query_names(uri: str) -> set[str]:
    return {part.split("=", 1)[0] for part in urlsplit(uri).query.split("&") if part}


def inside(uri: str, location: str) -> bool:
    """Is the S3 request URI (path-style) inside the table location (s3://bucket/prefix)?"""
    bucket, prefix = s3_key(location)
    path = urlsplit(uri).path
    query = dict(p.split("=", 1) if "=" in p else (p, "") for p in urlsplit(uri).query.split("&") if p)
    if path.rstrip("/") == f"/{bucket}" and "prefix" in query:  # a listing: its prefix
        from urllib.parse import unquote
        return unquote(query["prefix"]).startswith(prefix + "/")
    return path.startswith(f"/{bucket}/{prefix}/")


# ------------------------------------------------------------------------------------- the data path
@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_scan_append_overwrite_and_delete_are_signed_by_the_tables_signer(signing_lake, proxy, io):
    cat = catalog(signing_lake, proxy.url, io)
    table = fresh_table(cat, f"paths_{io}")
    assert not any(k.startswith("s3.") and ("key" in k or "token" in k) for k in table.io.properties), table.io.properties
    assert "auth.manager" not in table.io.properties
    table.append(id_rows(0, 100))
    table.append(id_rows(100, 150))
    assert table.scan().to_arrow().num_rows == 150
    table.overwrite(id_rows(0, 7))
    reloaded = cat.load_table(f"{NS}.paths_{io}")
    assert reloaded.io.signer is not table.io.signer
    signed_before = (table.io.signer.requests, reloaded.io.signer.requests)
    assert reloaded.scan().to_arrow().num_rows == 7
    assert table.io.signer.requests == signed_before[0] and reloaded.io.signer.requests > signed_before[1], \
        "a FileIO's requests went through another FileIO's filesystem and signer"
    # a delete of files: s3fs deletes by DeleteObjects, whose body the signer must see
    extra = f"{table.location()}/data/extra-{io}.parquet"
    with table.io.new_output(extra).create(overwrite=True) as out:
        out.write(b"x" * 1000)
    assert exists(signing_lake, extra)
    table.io.delete(extra)
    assert not exists(signing_lake, extra)

    signs = proxy.signs_of()
    methods = {s["method"] for s in signs}
    assert {"GET", "PUT", "POST"} <= methods, methods  # no HEAD: a file's size comes from its first GET
    assert all(s["status"] == 200 for s in signs), [s for s in signs if s["status"] != 200]
    assert all(s["authorization"] and s["authorization"].startswith("Bearer ") for s in signs)
    assert not any(k.lower() in ("range", "amz-sdk-invocation-id") for s in signs for k in s["headers"]), \
        "per-read headers were shown to the signer: one signature cannot serve every range of an object"
    deletes = [s for s in signs if s["method"] == "POST" and "delete" in query_names(s["uri"])]
    assert deletes, "the delete went to S3 as DeleteObjects"
    body = deletes[-1]["body"]
    assert body and s3_key(extra)[1] in body
    md5 = {k.lower(): v for k, v in deletes[-1]["headers"].items()}.get("content-md5")
    assert md5 == [base64.b64encode(hashlib.md5(body.encode()).digest()).decode()]  # noqa: S324
    assert {s["scope"] for s in signs} == {table.io.signer.target.url.rsplit("/", 1)[1]}, "one table, one signer"
    assert all(inside(s["uri"], table.location()) for s in signs if "delete" not in query_names(s["uri"]))
    assert table.io.signer.requests >= len(signs) // 2  # the table's own signer sent them
    cat.close()


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_a_multipart_write_of_over_100_mb_is_signed_part_by_part(signing_lake, proxy, io):
    cat = catalog(signing_lake, proxy.url, io)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.float64(), nullable=False)])
    table = fresh_table(cat, f"big_{io}", {"write.target-file-size-bytes": str(1 << 30)}, schema)
    n = 13_500_000  # random doubles barely compress: one data file of ~108 MB
    table.append(pa.table({"id": pa.array(range(n), pa.int64()), "v": pc.random(n)}, schema=schema))
    files = list(table.scan().plan_files())
    assert len(files) == 1 and files[0].file.file_size_in_bytes >= 100 * 1024 * 1024, [f.file.file_size_in_bytes for f in files]
    signs = proxy.signs_of()
    creates = [s for s in signs if s["method"] == "POST" and "uploads" in query_names(s["uri"])]
    parts = [s for s in signs if s["method"] == "PUT" and {"partNumber", "uploadId"} <= query_names(s["uri"])]
    completes = [s for s in signs if s["method"] == "POST" and query_names(s["uri"]) == {"uploadId"}]
    assert creates and len(parts) >= 2 and completes, (len(creates), len(parts), len(completes))
    assert all(s["status"] == 200 for s in signs)
    assert table.scan(selected_fields=("id",)).to_arrow().num_rows == n
    cat.close()


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_a_long_scan_outlives_the_signers_token(signing_lake, io):
    """The signer's tokens live 2 s, each sign request takes 0.3 s and the signer lets nothing be kept
    (so every read asks it, and a token expiry meets a sign request at once): the scan of 60 files needs
    several tokens. The signer answers 401 to an expired one; the catalog's token is renewed (once per
    expiry, not per request) and the request signed again; the scan returns every row."""
    info = signing_lake.info
    secret = "signer-test-" + "s" * 24
    short = SigningCatalogProxy(f"http://127.0.0.1:{info.ports['iceberg']}", info.s3_endpoint, info.access_key,
                                info.secret_key, clients={CLIENT_ID: secret}, token_seconds=2).start()
    try:
        with SignerProxy(short.url) as front:
            # written through the lakehouse's own signer (hour-long tokens), scanned through the short one
            writer = pyiceberg_catalog(signing_lake, **{"py-io-impl": FILEIOS[io]})
            fresh_table(writer, f"long_{io}", {"write.target-file-size-bytes": "600"}).append(id_rows(0, 3000))
            writer.close()
            cat = pyiceberg_catalog(signing_lake, uri=front.url, credential=f"{CLIENT_ID}:{secret}",
                                    **{"oauth2-server-uri": f"{front.url}/v1/oauth/tokens", "py-io-impl": FILEIOS[io]})
            table = cat.load_table(f"{NS}.long_{io}")
            assert len(list(table.scan().plan_files())) >= 40
            tokens_before = front.token_requests
            front.sign_delay_s, front.sign_cache_control = 0.3, "no-cache"
            started = time.monotonic()
            assert table.scan().to_arrow().num_rows == 3000
            elapsed = time.monotonic() - started
            expired = [s for s in front.signs if s["status"] == 401]
    finally:
        short.stop()
    assert elapsed > 2 * 2, f"the scan took {elapsed:.1f} s: not long enough to outlive a 2 s token"
    assert expired, "no sign request met an expired token"
    renewals = front.token_requests - tokens_before
    assert 1 <= renewals <= len(expired), (renewals, len(expired))
    assert renewals <= elapsed / 2 + 2, f"{renewals} renewals in {elapsed:.1f} s: more than one per token lifetime"
    cat.close()


# ------------------------------------------------------------------------------------------ scope
def test_a_tables_signer_never_sees_another_tables_location(signing_lake, proxy):
    """Two tables, each written and read: each signer endpoint is asked only about its own table's
    objects. A's FileIO asked for B's file gets the signer's refusal, in one line naming table A and
    the request, sent once (not retried, not taken for an expiry)."""
    cat = catalog(signing_lake, proxy.url, "pyarrow")
    cat_fs = catalog(signing_lake, proxy.url, "fsspec")
    a, b = fresh_table(cat, "scope_a"), fresh_table(cat_fs, "scope_b")
    a.append(id_rows(0, 10))
    b.append(id_rows(10, 30))
    assert a.scan().to_arrow().num_rows == 10 and b.scan().to_arrow().num_rows == 20
    scope_a, scope_b = (t.io.signer.target.url.rsplit("/", 1)[1] for t in (a, b))
    assert scope_a != scope_b
    for scope, own, other in ((scope_a, a, b), (scope_b, b, a)):
        uris = [s["uri"] for s in proxy.signs if s["scope"] == scope]
        assert uris and all(inside(u, own.location()) for u in uris), [u for u in uris if not inside(u, own.location())]
        assert not any(inside(u, other.location()) for u in uris)
    refused_before = signing_lake.signer.refused
    b_file = next(iter(b.scan().plan_files())).file.file_path
    for table in (a, cat_fs.load_table(f"{NS}.scope_a")):  # each FileIO
        before = len(proxy.signs)
        with pytest.raises(SigningRefusedError) as err:
            table.io.new_input(b_file).open().read()
        line = str(err.value)
        assert "\n" not in line and f"{NS}.scope_a" in line and "/scope_b/" in line and "HTTP 403" in line, line
        refused = [s for s in proxy.signs[before:] if s["status"] == 403]
        assert len(refused) == 1 and len(proxy.signs[before:]) == 1, proxy.signs[before:]
    assert signing_lake.signer.refused == refused_before + 2
    cat.close()
    cat_fs.close()


# ------------------------------------------------------------------------- one signature per object
def data_files(table) -> list[str]:
    return [t.file.file_path for t in table.scan().plan_files()]


def http_url(lake, location: str) -> str:
    """The path-style S3 URL the FileIOs send for `s3://bucket/key` on the lakehouse."""
    from urllib.parse import quote

    bucket, key = s3_key(location)
    return f"{lake.info.s3_endpoint.rstrip('/')}/{bucket}/{quote(key)}"


def twelve_files(cat, name: str):
    """A table of exactly 12 data files (one append: 12 record batches, one per file)."""
    table = fresh_table(cat, name, {"write.target-file-size-bytes": str(8 * 1000)})
    table.append(pa.Table.from_batches([id_rows(i * 1000, (i + 1) * 1000).to_batches()[0] for i in range(12)]))
    assert len(data_files(table)) == 12
    return table


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_a_scan_of_a_12_file_table_signs_each_object_once(signing_lake, proxy, io):
    """On a cold cache each object the scan reads is signed once (its GETs of any range, and its size,
    share one signature): at most 12 sign requests for the 12 data files, one each for the manifest
    list and the manifest. The lakehouse's signer allows that (Cache-Control: private). A second scan
    within the signatures' validity asks the signer nothing."""
    writer = pyiceberg_catalog(signing_lake, **{"py-io-impl": FILEIOS[io]})
    twelve_files(writer, f"twelve_{io}")
    writer.close()
    cat = catalog(signing_lake, proxy.url, io)
    table = cat.load_table(f"{NS}.twelve_{io}")
    files = {http_url(signing_lake, f) for f in data_files(table)}
    before = len(proxy.signs)
    assert table.scan().to_arrow().num_rows == 12_000
    signs = proxy.signs[before:]
    on_data = [s["uri"] for s in signs if s["uri"] in files]
    assert sorted(on_data) == sorted(files), f"{len(on_data)} sign requests for the 12 data files"
    per_object = {u: sum(1 for s in signs if s["uri"] == u) for u in {s["uri"] for s in signs}}
    assert max(per_object.values()) == 1, {u: n for u, n in per_object.items() if n > 1}
    assert len(signs) <= 12 + 2, len(signs)  # + the manifest list and the one manifest
    assert all(s["cache_control"] == "private" for s in signs)
    assert table.io.signer.reused > len(files), "the reads of a file did not reuse its signature"
    again = len(proxy.signs)
    assert table.scan().to_arrow().num_rows == 12_000
    assert len(proxy.signs) == again, proxy.signs[again:]
    cat.close()


def test_a_kept_signature_is_never_sent_for_another_object_method_or_table(signing_lake, proxy):
    """The signer's own client, against the lakehouse's signer and S3: GET of A signed once serves
    every range of A (S3 accepts it); B, a HEAD of A, and another table's signer asking for A each go
    to the signer (the last one refused there: the kept signature of A was not used for it)."""
    import requests

    writer = catalog(signing_lake, proxy.url, "pyarrow")
    fresh_table(writer, "kept_other")
    written = fresh_table(writer, "kept_a")
    written.append(id_rows(0, 10))
    written.append(id_rows(10, 20))
    writer.close()
    cat = catalog(signing_lake, proxy.url, "pyarrow")  # its signatures: none kept yet
    table, other = cat.load_table(f"{NS}.kept_a"), cat.load_table(f"{NS}.kept_other")
    a, b = (http_url(signing_lake, f) for f in data_files(table))
    signer = table.io.signer
    before = len(proxy.signs)
    url_a, first = signer.sign("GET", a, {"Range": "bytes=0-3"}, "us-east-1")
    url_a2, second = signer.sign("GET", a, {"Range": "bytes=4-7"}, "us-east-1")
    assert len(proxy.signs) == before + 1 and first["Authorization"] == second["Authorization"]
    assert (first["Range"], second["Range"]) == ("bytes=0-3", "bytes=4-7")
    whole = requests.get(a, headers={k: v for k, v in first.items() if k != "Range"}, timeout=30).content
    for url, headers, want in ((url_a, first, whole[0:4]), (url_a2, second, whole[4:8])):
        resp = requests.get(url, headers=headers, timeout=30)
        assert resp.status_code == 206 and resp.content == want, (resp.status_code, resp.text[:200])
    _, for_b = signer.sign("GET", b, {}, "us-east-1")
    _, head_a = signer.sign("HEAD", a, {}, "us-east-1")
    asked = proxy.signs[before:]
    assert [(s["method"], s["uri"]) for s in asked] == [("GET", a), ("GET", b), ("HEAD", a)]
    assert len({first["Authorization"], for_b["Authorization"], head_a["Authorization"]}) == 3
    assert requests.get(b, headers=for_b, timeout=30).status_code == 200
    assert requests.head(a, headers=head_a, timeout=30).status_code == 200
    with pytest.raises(SigningRefusedError):
        other.io.signer.sign("GET", a, {}, "us-east-1")
    assert proxy.signs[-1]["uri"] == a and proxy.signs[-1]["status"] == 403
    cat.close()


def test_a_kept_signature_ends_with_its_validity(signing_lake, proxy):
    """The signer's clock is behind: its X-Amz-Date makes the signature valid (minus the margin) for 4
    more seconds: kept that long, then asked again; one already past it is never kept."""
    writer = catalog(signing_lake, proxy.url, "fsspec")
    fresh_table(writer, "kept_validity").append(id_rows(0, 10))
    writer.close()
    cat = catalog(signing_lake, proxy.url, "fsspec")  # its signatures: none kept yet
    table = cat.load_table(f"{NS}.kept_validity")
    a = http_url(signing_lake, data_files(table)[0])
    signer = table.io.signer
    proxy.sign_date_age_s = SIGNATURE_LIFETIME_S - SIGNATURE_MARGIN_S - 4
    before = len(proxy.signs)
    signer.sign("GET", a, {}, "us-east-1")
    signer.sign("GET", a, {}, "us-east-1")
    assert len(proxy.signs) == before + 1, "kept while valid"
    time.sleep(4.5)
    signer.sign("GET", a, {}, "us-east-1")
    assert len(proxy.signs) == before + 2, "a signature past its validity (minus the margin) was used"
    proxy.sign_date_age_s = SIGNATURE_LIFETIME_S - SIGNATURE_MARGIN_S + 1
    signer.sign("HEAD", a, {}, "us-east-1")
    signer.sign("HEAD", a, {}, "us-east-1")
    assert len(proxy.signs) == before + 4, "a signature already past its validity was kept"
    cat.close()


@pytest.mark.parametrize("cache_control", ["", "no-cache", "private, no-store", "public"])
def test_a_signer_that_does_not_allow_caching_is_asked_every_time(signing_lake, proxy, cache_control):
    proxy.sign_cache_control = cache_control
    cat = catalog(signing_lake, proxy.url, "pyarrow")
    table = fresh_table(cat, f"uncached_{len(cache_control)}")
    table.append(id_rows(0, 10))
    path = data_files(table)[0]
    a = http_url(signing_lake, path)
    before = len(proxy.signs)
    for _ in range(2):
        table.io.new_input(path).open().read()
    reads = [s for s in proxy.signs[before:] if s["uri"] == a]
    assert len(reads) >= 4, f"{len(reads)} sign requests for 2 opens of a file (its size and its reads, each asked)"
    assert table.io.signer.reused == 0
    cat.close()


@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_s3_refusing_a_kept_signature_drops_it_and_signs_once_more(signing_lake, io):
    """S3 (a loopback front of it) refuses a request sent with a kept signature: that signature is
    dropped, the request signed afresh and sent once more, and the read succeeds. Refused again, the
    read fails with S3's refusal: one more sign request, not a loop."""
    info = signing_lake.info
    secret = "signer-reuse-" + "s" * 24
    with RefusingS3Proxy(info.s3_endpoint) as s3:
        signer = SigningCatalogProxy(f"http://127.0.0.1:{info.ports['iceberg']}", s3.url, info.access_key,
                                     info.secret_key, clients={CLIENT_ID: secret}).start()
        try:
            with SignerProxy(signer.url) as front:
                front.table_config = {"s3.endpoint": s3.url}
                writer = pyiceberg_catalog(signing_lake, **{"py-io-impl": FILEIOS[io]})
                fresh_table(writer, f"refused_{io}").append(id_rows(0, 50))
                writer.close()
                cat = pyiceberg_catalog(signing_lake, uri=front.url, credential=f"{CLIENT_ID}:{secret}",
                                        **{"oauth2-server-uri": f"{front.url}/v1/oauth/tokens", "py-io-impl": FILEIOS[io]})
                table = cat.load_table(f"{NS}.refused_{io}")
                path = data_files(table)[0]
                data = table.io.new_input(path).open().read()
                signs_of_a = lambda: [s for s in front.signs if s["uri"].endswith(s3_key(path)[1])]  # noqa: E731
                assert len(signs_of_a()) == 1 and table.io.signer.reused >= 1
                s3.refuse(s3_key(path)[1], times=1)
                assert table.io.new_input(path).open().read() == data
                assert s3.denied == 1 and len(signs_of_a()) == 2, (s3.denied, len(signs_of_a()))
                s3.refuse(s3_key(path)[1], times=2)
                with pytest.raises(PermissionError):
                    table.io.new_input(path).open().read()
                assert s3.denied == 3 and len(signs_of_a()) == 3, (s3.denied, len(signs_of_a()))
                cat.close()
        finally:
            signer.stop()


# --------------------------------------------------------------------- Iceberg 1.12's signing config
@pytest.mark.parametrize("form", ["endpoint", "route"])
def test_iceberg_112_remote_signing_config_is_read(signing_lake, proxy, form):
    """The answer names the signer the Iceberg 1.12 way: `remote-signing-config` with an
    `endpoint-path`, or the field alone (the table's own `.../sign` route). Its properties go in each
    sign request's body, its headers on each sign request."""
    proxy.as_signing_config = form
    proxy.signing_properties = {"purpose": "test"}
    proxy.signing_headers = {"X-Signing-Test": ["a", "b"]}
    cat = catalog(signing_lake, proxy.url, "fsspec")
    table = fresh_table(cat, f"config_{form}")
    assert "s3.signer.endpoint" not in table.io.properties
    table.append(id_rows(0, 5))
    assert table.scan().to_arrow().num_rows == 5
    signs = proxy.signs_of()
    assert signs and all(s["status"] == 200 for s in signs)
    assert all(s["properties"] == {"purpose": "test"} for s in signs)
    assert all(s["http_headers"].get("X-Signing-Test") == "a, b" for s in signs)
    if form == "route":
        assert all(s["route"].endswith("/tables/config_route/sign") for s in signs), {s["route"] for s in signs}
    cat.close()


# ------------------------------------------------------------------------------- where the URL comes from
def test_signer_target_reads_each_form_and_names_the_key():
    uri, route = "https://cat.example/api", "/v1/p/namespaces/ns/tables/t"
    old = signer_target({"s3.signer.uri": "https://s.example/", "s3.signer.endpoint": "v1/sign/x"}, {}, None, uri, route)
    assert (old.url, old.key, old.properties) == ("https://s.example/v1/sign/x", "s3.signer.uri", None)
    new = signer_target({"signer.uri": "https://n.example", "s3.signer.uri": "https://o.example"}, {}, None, uri, route)
    assert (new.url, new.key) == ("https://n.example/v1/aws/s3/sign", "signer.uri")
    absolute = signer_target({"s3.signer.endpoint": "https://abs.example/sign"}, {}, None, uri, route)
    assert (absolute.url, absolute.key) == ("https://abs.example/sign", "s3.signer.endpoint")
    presence = signer_target({}, {}, {}, uri, route)
    assert (presence.url, presence.key, presence.properties) == (f"{uri}/v1/p/namespaces/ns/tables/t/sign", "uri", {})
    rsc = signer_target({}, {"s3.signer.uri": "https://user.example"},
                        {"base-uri": "https://b.example", "endpoint-path": "/e", "headers": {"H": ["1", "2"]}}, uri, route)
    assert (rsc.url, rsc.key, dict(rsc.headers)) == ("https://b.example/e", "remote-signing-config.base-uri", {"H": "1, 2"})
    # the table's config wins over the catalog's settings, which win over the defaults
    user = signer_target({}, {"s3.signer.uri": "https://user.example"}, None, uri, route)
    assert (user.url, user.key) == ("https://user.example/v1/aws/s3/sign", "s3.signer.uri")
    table = signer_target({"s3.signer.uri": "https://t.example"}, {"s3.signer.uri": "https://user.example"}, None, uri, route)
    assert table.url == "https://t.example/v1/aws/s3/sign"


def test_without_s3fs_remote_signing_is_one_line_naming_the_extra():
    import subprocess
    import sys

    code = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "s3fs":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from pyspark_catalog_ext.pyiceberg_ext.s3signing import signing_filesystem
try:
    signing_filesystem({}, None)
except Exception as exc:
    print(type(exc).__name__, exc)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == ("ConfigError remote signing in PyIceberg needs s3fs (both FileIOs sign through it): "
                                   "pip install 'pyspark-catalog-ext[signing]'"), proc.stdout + proc.stderr
