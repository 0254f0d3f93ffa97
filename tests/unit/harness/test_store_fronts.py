"""The store tests' loopback fronts on their own (tests/stores): the GCS token front and the vending
catalog front, each before a small stand-in upstream that records what reaches it."""
from __future__ import annotations

import json
import time
from urllib.parse import parse_qs

import pytest
import requests

from tests.servers.base import ThreadedServer, read_request_body, send_response_head
from tests.stores.azurite import AdlsLocation, Azurite
from tests.stores.catalog import VendingCatalog
from tests.stores.gcs import FakeGcs, GcsFront

LOCATION = "gs://warehouse/catalog/db/t"


class Upstream(ThreadedServer):
    """Answers every request 200 with a fixed JSON body (or `answers[path]`), recording the paths."""

    def __init__(self, answers: dict[str, tuple[int, dict]] | None = None):
        super().__init__()
        self.answers = answers or {}
        self.seen: list[str] = []

    def handle(self, h):
        read_request_body(h)
        self.seen.append(f"{h.command} {h.path}")
        status, body = self.answers.get(h.path.split("?", 1)[0], (200, {"ok": True}))
        data = json.dumps(body).encode()
        send_response_head(h, status, "OK" if status == 200 else "Error",
                           [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        h.wfile.write(data)
        h.wfile.flush()


@pytest.fixture
def gcs_front():
    with Upstream() as upstream, GcsFront() as front:
        front.upstream = upstream.url
        yield front, upstream


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_gcs_front_refuses_a_missing_unknown_or_expired_token_as_gcs_does(gcs_front):
    front, upstream = gcs_front
    grant = front.mint(60, bucket="warehouse")
    url = f"{front.url}/storage/v1/b/warehouse/o/catalog%2Fx"
    assert requests.get(url, headers=bearer(grant.token)).status_code == 200
    for headers in ({}, bearer("pce-gcs-not-minted")):
        resp = requests.get(url, headers=headers)
        assert resp.status_code == 401
        assert resp.json()["error"]["errors"][0]["reason"] == "authError"
        assert 'error="invalid_token"' in resp.headers["WWW-Authenticate"]
    front.expire(grant.token)
    assert requests.get(url, headers=bearer(grant.token)).status_code == 401
    assert len(upstream.seen) == 1  # only the request with a live token reached the store


def test_gcs_front_keeps_a_token_inside_its_bucket_and_prefix(gcs_front):
    front, upstream = gcs_front
    token = front.mint(60, bucket="warehouse", prefix="catalog/db/t/").token
    base = f"{front.url}/storage/v1/b"
    assert requests.get(f"{base}/warehouse/o/catalog%2Fdb%2Ft%2Fdata%2Fa.parquet", headers=bearer(token)).status_code == 200
    assert requests.get(f"{base}/warehouse/o/catalog%2Fdb%2Fother%2Fa.parquet", headers=bearer(token)).status_code == 403
    assert requests.get(f"{base}/elsewhere/o/catalog%2Fdb%2Ft%2Fa", headers=bearer(token)).status_code == 403
    upload = f"{front.url}/upload/storage/v1/b/warehouse/o"
    assert requests.post(upload, params={"uploadType": "media", "name": "catalog/db/t/m.json"}, data=b"{}",
                         headers=bearer(token)).status_code == 200
    assert requests.post(upload, params={"uploadType": "media", "name": "catalog/db/u/m.json"}, data=b"{}",
                         headers=bearer(token)).status_code == 403
    assert requests.get(f"{base}/warehouse/o", params={"prefix": "catalog/db/t/"}, headers=bearer(token)).status_code == 200
    assert requests.get(f"{base}/warehouse/o", headers=bearer(token)).status_code == 403  # the whole bucket


def test_gcs_front_checks_every_request_of_a_batch(gcs_front):
    front, upstream = gcs_front
    token = front.mint(60, bucket="warehouse", prefix="catalog/db/t/").token

    def batch(*objects: str) -> int:
        parts = "".join(f"--b\r\nContent-Type: application/http\r\n\r\nDELETE /storage/v1/b/warehouse/o/{o} HTTP/1.1\r\n\r\n"
                        for o in objects)
        return requests.post(f"{front.url}/batch/storage/v1", data=(parts + "--b--\r\n").encode(),
                             headers={**bearer(token), "Content-Type": "multipart/mixed; boundary=b"}).status_code

    assert batch("catalog%2Fdb%2Ft%2Fa", "catalog%2Fdb%2Ft%2Fb") == 200
    assert batch("catalog%2Fdb%2Ft%2Fa", "catalog%2Fdb%2Fu%2Fb") == 403
    assert upstream.seen == ["POST /batch/storage/v1"]


def test_gcs_front_serves_its_allow_list_only(gcs_front):
    front, upstream = gcs_front
    token = front.mint(60).token
    assert requests.get(f"{front.url}/warehouse/catalog/x", headers=bearer(token)).status_code == 404  # XML API
    assert requests.get(f"{front.url}/admin", headers=bearer(token)).status_code == 404
    # A resumable upload's session URI is its own credential: it passes without a token.
    assert requests.put(f"{front.url}/upload/storage/v1/b/warehouse/o", params={"uploadType": "resumable", "upload_id": "u1"},
                        data=b"x").status_code == 200
    assert upstream.seen == ["PUT /upload/storage/v1/b/warehouse/o?uploadType=resumable&upload_id=u1"]


def test_gcs_front_notes_a_status_before_the_client_hears_it():
    """A test reads the front's log as soon as its request is answered: the status must be there.
    The answer is larger than the sockets' buffers, and the client reads only its head, so the
    front is still relaying the body when the log is read."""
    big = {"/storage/v1/b/warehouse/o/catalog%2Fbig": (200, {"pad": "x" * (16 << 20)})}
    with Upstream(big) as upstream, GcsFront() as front:
        front.upstream = upstream.url
        token = front.mint(60, bucket="warehouse").token
        with requests.get(f"{front.url}/storage/v1/b/warehouse/o/catalog%2Fbig", headers=bearer(token), stream=True) as got:
            assert got.status_code == 200
            assert [e["status"] for e in front.entries()] == [200]
            assert len(got.content) > 16 << 20


def table_result(location: str) -> dict:
    return {"metadata-location": location + "/metadata/00000.json",
            "metadata": {"format-version": 2, "location": location}, "config": {}}


@pytest.fixture
def vending():
    """A vending front for GCS (and ADLS keys, no Azurite process) before a stand-in catalog that
    knows one committed table, db.t; every other table load is 404 (staged tables are not stored)."""
    gcs = FakeGcs()  # only its front runs: it mints and checks the tokens
    azurite = Azurite()
    answers = {"/v1/namespaces/db/tables/t": (200, table_result(LOCATION)),
               "/v1/namespaces/db/tables": (200, table_result("gs://warehouse/catalog/db/staged")),
               "/v1/namespaces/db/tables/staged": (404, {"error": {"code": 404, "type": "NoSuchTableException", "message": "no"}})}
    with Upstream(answers) as upstream, gcs.front:
        gcs.front.upstream = upstream.url
        with VendingCatalog(upstream.url, gcs=gcs, azurite=azurite, lifetime_s=30) as front:
            yield front, gcs.front
    azurite.stop()


ASK = {"X-Iceberg-Access-Delegation": "vended-credentials"}


def test_vending_front_hands_out_a_token_for_the_table_prefix_only(vending):
    front, gcs_front = vending
    assert "gcs.oauth2.token" not in requests.get(f"{front.url}/v1/namespaces/db/tables/t").json()["config"]
    started = time.time()
    answer = requests.get(f"{front.url}/v1/namespaces/db/tables/t", headers=ASK).json()
    config, (cred,) = answer["config"], answer["storage-credentials"]
    assert cred["prefix"] == LOCATION and cred["config"]["gcs.oauth2.token"] == config["gcs.oauth2.token"]
    assert started + 29 <= int(config["gcs.oauth2.token-expires-at"]) / 1000 <= time.time() + 30
    assert config["gcs.service.host"] == gcs_front.url
    # The token opens the table's prefix in the store, and nothing beside it.
    obj = f"{gcs_front.url}/storage/v1/b/warehouse/o/"
    assert requests.get(obj + "catalog%2Fdb%2Ft%2Fdata%2Fa", headers=bearer(config["gcs.oauth2.token"])).status_code == 200
    assert requests.get(obj + "catalog%2Fdb%2Ftt%2Fa", headers=bearer(config["gcs.oauth2.token"])).status_code == 403
    assert front.count(kind="load", table="db.t") == 2
    assert config["gcs.oauth2.token"] in front.secrets_handed_out


def test_vending_front_refresh_endpoint_serves_committed_tables_only(vending):
    front, _ = vending
    front.advertise_refresh_endpoint = True
    config = requests.get(f"{front.url}/v1/namespaces/db/tables/t", headers=ASK).json()["config"]
    for key in ("client.refresh-credentials-endpoint", "gcs.oauth2.refresh-credentials-endpoint",
                "adls.refresh-credentials-endpoint"):
        assert config[key] == "v1/namespaces/db/tables/t/credentials"
    fresh = requests.get(f"{front.url}/v1/namespaces/db/tables/t/credentials", headers=ASK)
    assert fresh.status_code == 200
    assert fresh.json()["storage-credentials"][0]["config"]["gcs.oauth2.token"] != config["gcs.oauth2.token"]
    assert requests.get(f"{front.url}/v1/namespaces/db/tables/staged/credentials", headers=ASK).status_code == 404
    assert front.count(kind="credentials", table="db.t") == 1


def test_vending_front_storage_refresh_token_serves_a_staged_table(vending):
    front, _ = vending
    front.refresh_tokens = True
    staged = requests.post(f"{front.url}/v1/namespaces/db/tables", headers=ASK,
                           json={"name": "staged", "stage-create": True, "schema": {"type": "struct", "fields": []}}).json()
    token = staged["storage-credentials"][0]["storage-refresh-token"]
    url = f"{front.url}/v1/namespaces/db/tables/staged/credentials"
    fresh = requests.get(url, params={"storageRefreshToken": token})
    assert fresh.status_code == 200
    assert fresh.json()["storage-credentials"][0]["prefix"] == "gs://warehouse/catalog/db/staged"
    assert requests.get(url, params={"storageRefreshToken": token[:-2] + "xx"}).status_code == 401
    assert requests.get(f"{front.url}/v1/namespaces/db/tables/t/credentials",
                        params={"storageRefreshToken": token}).status_code == 401  # another table's token
    assert front.count(kind="stage-create", table="db.staged") == 1


def test_vending_front_serves_endpoint_tables_by_endpoint_whatever_its_switches(vending):
    front, _ = vending
    front.refresh_tokens = True
    front.endpoint_tables = {"db.t"}
    answer = requests.get(f"{front.url}/v1/namespaces/db/tables/t", headers=ASK).json()
    assert answer["config"]["gcs.oauth2.refresh-credentials-endpoint"] == "v1/namespaces/db/tables/t/credentials"
    assert "storage-refresh-token" not in answer["storage-credentials"][0]
    assert requests.get(f"{front.url}/v1/namespaces/db/tables/t/credentials", headers=ASK).status_code == 200
    staged = requests.post(f"{front.url}/v1/namespaces/db/tables", headers=ASK,
                           json={"name": "staged", "stage-create": True, "schema": {"type": "struct", "fields": []}}).json()
    assert staged["storage-credentials"][0]["storage-refresh-token"]  # other tables: as the switches say
    assert "gcs.oauth2.refresh-credentials-endpoint" not in staged["config"]
    assert front.count(kind="credentials", table="db.t") == 1


def test_vending_front_vends_for_two_stores_in_one_answer(vending):
    front, gcs_front = vending
    other = "abfs://data@pcestore2.dfs.core.windows.net/db/t"
    front.extra_prefixes["db.t"] = [other]
    answer = requests.get(f"{front.url}/v1/namespaces/db/tables/t", headers=ASK).json()
    by_prefix = {c["prefix"]: c["config"] for c in answer["storage-credentials"]}
    assert set(by_prefix) == {LOCATION, other}
    host = AdlsLocation.parse(other).host
    sas = parse_qs(by_prefix[other][f"adls.sas-token.{host}"])
    assert sas["sr"] == ["c"] and "sig" in sas  # a container SAS: Azurite refuses directory SAS
    assert "gcs.oauth2.token" not in by_prefix[other] and f"adls.sas-token.{host}" not in by_prefix[LOCATION]
    assert answer["config"][f"adls.connection-string.{host}"].endswith("/pcestore2")
