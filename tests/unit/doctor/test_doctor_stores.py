"""Where the doctor's ADLS and GCS probes send a vended token: only to the endpoint Iceberg's FileIO
would use for that store (an ADLS SAS for host H to H's connection string, or https://H; a GCS token
to gcs.service.host, or storage.googleapis.com), an http(s) origin without userinfo, through a
session of their own that follows no redirect and adds no .netrc password. Loopback servers stand
in for the store and for an attacker; the doctor's runs on the real emulated stores are in
tests/slow/test_store_doctor.py."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pyspark_catalog_ext.doctor.stores import check_access, for_location, refresh_endpoint, store_credentials, store_endpoint
from tests.servers.scripted_catalog import R, Scripted

SAS_A = "sv=2024-08-04&sr=c&sp=racwdl&se=2099-01-01T00%3A00%3A00Z&sig=SASsecretAAAA0001"
SAS_B = "sv=2024-08-04&sr=c&sp=racwdl&se=2099-01-01T00%3A00%3A00Z&sig=SASsecretBBBB0002"
GCS_TOKEN = "ya29.gcs-secret-token-0003"
HOST_A, HOST_B = "acct-a.dfs.core.windows.net", "acct-b.dfs.core.windows.net"
LOC_A = f"abfss://warehouse@{HOST_A}/catalog/db/t"


@pytest.fixture
def store() -> Iterator[Scripted]:
    srv = Scripted()
    yield srv
    srv.close()


def _answer(**config: str) -> dict:
    return {"config": {f"adls.connection-string.{HOST_A}": "http://a.example:1/acct-a",
                       f"adls.connection-string.{HOST_B}": "http://b.example:2/acct-b", **config},
            "storage-credentials": [
                {"prefix": LOC_A, "config": {f"adls.sas-token.{HOST_A}": SAS_A, f"adls.sas-token-expires-at-ms.{HOST_A}": "4070908800000"}},
                {"prefix": f"abfss://warehouse@{HOST_B}/catalog/db/t", "config": {f"adls.sas-token.{HOST_B}": SAS_B}},
                {"prefix": "gs://bucket/catalog/db/t", "config": {"gcs.oauth2.token": GCS_TOKEN, "gcs.oauth2.token-expires-at": "4070908800000"}},
            ]}


def test_each_token_is_recognised_by_its_store_and_host_and_used_only_for_its_own_location() -> None:
    creds = store_credentials(_answer())
    assert sorted((c.store, c.host, c.expires_at_ms) for c in creds) == [
        ("adls", HOST_A, 4070908800000), ("adls", HOST_B, None), ("gcs", None, 4070908800000)]
    assert for_location(creds, f"{LOC_A}/data/x.parquet").token == SAS_A  # type: ignore[union-attr]
    assert for_location(creds, f"abfss://warehouse@{HOST_B}/catalog/db/t").token == SAS_B  # type: ignore[union-attr]
    assert for_location(creds, "gs://bucket/catalog/db/t/metadata/m.json").token == GCS_TOKEN  # type: ignore[union-attr]
    assert for_location(creds, f"{LOC_A}2/data/x.parquet") is None  # a sibling prefix (t vs t2) gets no token
    assert for_location(creds, "abfss://warehouse@acct-c.dfs.core.windows.net/catalog/db/t") is None  # another account
    assert for_location(creds, "s3://bucket/catalog/db/t") is None
    # A table config's SAS (no prefix) serves only its own account host; its GCS token no abfs:// location.
    in_config = store_credentials({"config": {f"adls.sas-token.{HOST_B}": SAS_B, "gcs.oauth2.token": GCS_TOKEN}})
    assert for_location(in_config, LOC_A) is None
    assert for_location(in_config, f"abfss://warehouse@{HOST_B}/x").token == SAS_B  # type: ignore[union-attr]
    public = json.dumps([c.public() for c in creds])
    assert SAS_A not in public and SAS_B not in public and GCS_TOKEN not in public and "sha256:" in public


def test_a_token_goes_to_the_endpoint_named_for_its_own_store_and_host() -> None:
    creds = {(c.store, c.host): c for c in store_credentials(_answer(**{"gcs.service.host": "http://gcs.example:3"}))}
    assert store_endpoint(creds[("adls", HOST_A)], {})["endpoint"] == "http://a.example:1/acct-a"
    assert store_endpoint(creds[("adls", HOST_B)], {})["endpoint"] == "http://b.example:2/acct-b"
    assert store_endpoint(creds[("gcs", None)], {})["origin"] == "http://gcs.example:3"
    bare = {(c.store, c.host): c for c in store_credentials({"storage-credentials": _answer()["storage-credentials"]})}
    assert store_endpoint(bare[("adls", HOST_A)], {}) == {"key": f"adls.connection-string.{HOST_A}", "from": None,
                                                         "endpoint": f"https://{HOST_A}", "origin": f"https://{HOST_A}:443"}
    assert store_endpoint(bare[("gcs", None)], {})["endpoint"] == "https://storage.googleapis.com"
    user_given = store_endpoint(bare[("gcs", None)], {"gcs.service.host": "http://mine.example:9"})
    assert user_given["endpoint"] == "http://mine.example:9" and user_given["from"] == "catalog properties"


@pytest.mark.parametrize("endpoint", ["http://user:pw@127.0.0.1:1/acct-a", "ftp://127.0.0.1/acct-a", "file:///tmp/x", "http://"])
def test_an_endpoint_that_is_no_plain_http_origin_is_refused(endpoint: str) -> None:
    (cred,) = [c for c in store_credentials(_answer(**{f"adls.connection-string.{HOST_A}": endpoint})) if c.host == HOST_A]
    where = store_endpoint(cred, {})
    assert "endpoint" not in where and where["refused"].startswith(f"adls.connection-string.{HOST_A} is not an endpoint")


def test_the_refresh_endpoint_of_a_store_prefers_its_own_key() -> None:
    body = {"config": {"client.refresh-credentials-endpoint": "v1/generic", "gcs.oauth2.refresh-credentials-endpoint": "v1/gcs"}}
    assert refresh_endpoint("gcs", body) == ("v1/gcs", "gcs.oauth2.refresh-credentials-endpoint")
    assert refresh_endpoint("adls", body) == ("v1/generic", "client.refresh-credentials-endpoint")
    assert refresh_endpoint("adls", {"config": {}}) is None


def test_the_probe_writes_reads_and_deletes_with_the_sas_in_the_query_only(store: Scripted, monkeypatch, tmp_path) -> None:
    """A .netrc entry for the store's host must not add a password: requests would, for a server-named host."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password netrc-password-0004\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    body = b"PAR1 pyspark-catalog-ext doctor store probe PAR1"
    (cred,) = [c for c in store_credentials(_answer()) if c.host == HOST_A]
    for method, status in (("PUT", 201), ("DELETE", 202)):
        store.routes[(method, "*")] = [R(status)]
    store.routes[("GET", "*")] = [R(200, body)]
    _route_every_path(store)
    result = check_access(cred, f"{store.uri}/acct-a", LOC_A)
    assert result["works"], result
    seen = store.requests()
    assert [s.method for s in seen] == ["PUT", "GET", "DELETE"]
    assert all(s.path.startswith("/acct-a/warehouse/catalog/db/t/data/doctor-probe-") and s.query == SAS_A for s in seen)
    assert not any("Authorization" in s.headers for s in seen), [s.headers for s in seen]


def test_a_gcs_token_goes_in_the_authorization_header_and_a_refusal_is_named(store: Scripted) -> None:
    (cred,) = [c for c in store_credentials(_answer()) if c.store == "gcs"]
    store.routes[("POST", "*")] = [R(401, {"error": {"code": 401, "errors": [{"reason": "authError"}]}})]
    _route_every_path(store)
    result = check_access(cred, store.uri, "gs://bucket/catalog/db/t")
    assert not result["works"] and result["refused"] and result["steps"][0]["code"] == "authError"
    (upload,) = store.requests()
    assert upload.path == "/upload/storage/v1/b/bucket/o" and upload.headers["Authorization"] == f"Bearer {GCS_TOKEN}"
    assert GCS_TOKEN not in json.dumps(result)


def test_a_redirect_is_not_followed(store: Scripted) -> None:
    attacker = Scripted()
    try:
        store.routes[("PUT", "*")] = [R(307, headers={"Location": f"{attacker.uri}/steal"})]
        _route_every_path(store)
        (cred,) = [c for c in store_credentials(_answer()) if c.host == HOST_A]
        result = check_access(cred, f"{store.uri}/acct-a", LOC_A)
        assert not result["works"] and result["steps"][0]["status"] == 307
        assert attacker.requests() == []
    finally:
        attacker.close()


def test_an_unreachable_store_is_a_transport_error_without_the_token() -> None:
    (cred,) = [c for c in store_credentials(_answer()) if c.host == HOST_A]
    from pyspark_catalog_ext.ports import free_port

    result = check_access(cred, f"http://127.0.0.1:{free_port()}/acct-a", LOC_A, timeout=2)
    assert result["transport_error"] and result["steps"][0]["error"] == "ConnectionError"
    assert "SASsecret" not in json.dumps(result)


def _route_every_path(srv: Scripted) -> None:
    """Serve every path of a method by its "*" route (the scripted server matches exact paths)."""
    routes = srv.routes

    class AnyPath(dict):
        def get(self, key, default=None):  # type: ignore[override]
            return routes.get((key[0], "*"), default) if (key[0], "*") in routes else dict.get(self, key, default)

    srv.routes = AnyPath(routes)
