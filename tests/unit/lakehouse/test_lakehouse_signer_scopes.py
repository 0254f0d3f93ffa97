"""The remote signer's per-table endpoints end with their table and with their tokens (on the real
SeaweedFS): an endpoint is bound to the table's uuid and location and to its OAuth2 client, and
lives no longer than the last token that loaded the table or signed through it, plus one token
lifetime in which only a live token of that client revives it, once the catalog confirms the table
is still the same. (Not bound to one token: Iceberg's signer client logs in on its own, on every
executor.)"""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID, SCOPE_RECHECK_SECONDS, SigningCatalogProxy
from tests.helpers import REST_ID_SCHEMA
from tests.lakehouse_rest import Rest

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def _raw(lakehouse) -> str:
    return f"http://127.0.0.1:{lakehouse.info.ports['iceberg']}"


@pytest.fixture()
def signer(lakehouse, request):
    info = lakehouse.info
    seconds = getattr(request, "param", 3600)
    proxy = SigningCatalogProxy(_raw(lakehouse), info.s3_endpoint, info.access_key, info.secret_key,
                                filer=lakehouse.filer_access(), token_seconds=seconds).start()
    yield proxy
    proxy.stop()


def _token(proxy: SigningCatalogProxy, exchange: str | None = None) -> str:
    form = ({"grant_type": TOKEN_EXCHANGE, "subject_token": exchange, "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}
            if exchange else {"grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": proxy.clients[CLIENT_ID]})
    resp = requests.post(proxy.url + "/v1/oauth/tokens", data=form, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()["access_token"]


def _catalog(proxy: SigningCatalogProxy, token: str, method: str, path: str, body: dict | None = None) -> requests.Response:
    return requests.request(method, f"{proxy.url}/v1/warehouse{path}", json=body, timeout=30,
                            headers={"Authorization": f"Bearer {token}", "X-Iceberg-Access-Delegation": "remote-signing"})


def _endpoint(answer: requests.Response) -> str:
    assert answer.status_code == 200, answer.text
    return answer.json()["config"]["s3.signer.endpoint"]


def _sign(proxy: SigningCatalogProxy, token: str, endpoint: str, key: str) -> requests.Response:
    request = {"region": "us-east-1", "method": "GET", "uri": f"{proxy.s3_endpoint}/warehouse/{key}", "headers": {}}
    return requests.post(f"{proxy.url}/{endpoint}", json=request, headers={"Authorization": f"Bearer {token}"}, timeout=10)


def test_an_endpoint_ends_with_its_table(lakehouse, signer):
    token = _token(signer)
    ns = "scope" + uuid.uuid4().hex[:8]
    assert _catalog(signer, token, "POST", "/namespaces", {"namespace": [ns]}).status_code == 200
    first = _endpoint(_catalog(signer, token, "POST", f"/namespaces/{ns}/tables", {"name": "t", "schema": REST_ID_SCHEMA}))
    key = f"{ns}/t/data/f.parquet"
    assert _sign(signer, token, first, key).status_code == 200
    # dropped and created again at the same location: a new table, and the old endpoint signs none of it
    assert _catalog(signer, token, "DELETE", f"/namespaces/{ns}/tables/t").status_code == 204
    second = _endpoint(_catalog(signer, token, "POST", f"/namespaces/{ns}/tables", {"name": "t", "schema": REST_ID_SCHEMA}))
    refused = _sign(signer, token, first, key)
    assert refused.status_code == 403 and "dropped, renamed or moved" in refused.json()["error"]["message"], refused.text
    assert _sign(signer, token, second, key).status_code == 200
    # the same behind the signer's back (SeaweedFS's own port, admin keys): noticed within the recheck time
    raw = Rest(lakehouse.info, uri=_raw(lakehouse))
    assert raw.request("DELETE", f"/namespaces/{ns}/tables/t").status_code == 204
    assert raw.create(ns, "t").status_code == 200
    time.sleep(SCOPE_RECHECK_SECONDS + 0.5)
    assert _sign(signer, token, second, key).status_code == 403
    # a rename through the signer ends the endpoints of the old name too
    third = _endpoint(_catalog(signer, token, "GET", f"/namespaces/{ns}/tables/t"))
    rename = {"source": {"namespace": [ns], "name": "t"}, "destination": {"namespace": [ns], "name": "u"}}
    assert _catalog(signer, token, "POST", "/tables/rename", rename).status_code == 204
    assert _sign(signer, token, third, key).status_code == 403
    assert _sign(signer, token, _endpoint(_catalog(signer, token, "GET", f"/namespaces/{ns}/tables/u")), key).status_code == 200


@pytest.mark.parametrize("signer", [3], indirect=True)
def test_an_endpoint_lives_no_longer_than_its_tokens_and_one_lifetime_of_revival(lakehouse, signer):
    first = _token(signer)
    ns = "life" + uuid.uuid4().hex[:8]
    assert _catalog(signer, first, "POST", "/namespaces", {"namespace": [ns]}).status_code == 200
    endpoint = _endpoint(_catalog(signer, first, "POST", f"/namespaces/{ns}/tables", {"name": "t", "schema": REST_ID_SCHEMA}))
    key = f"{ns}/t/data/f.parquet"
    assert _sign(signer, first, endpoint, key).status_code == 200
    time.sleep(1.5)
    second = _token(signer)  # the signer client's own login (each executor has one): it may use the endpoint ...
    assert _sign(signer, second, endpoint, key).status_code == 200  # ... and keeps it alive as long as it lives
    time.sleep(2.0)  # the first token has expired; the endpoint lives on with the second
    assert _sign(signer, first, endpoint, key).status_code == 401
    assert _sign(signer, _token(signer, exchange=second), endpoint, key).status_code == 200  # a refresh, as Iceberg does
    time.sleep(3.5)  # every token that loaded or used it has expired: so has the endpoint, ...
    assert _sign(signer, first, endpoint, key).status_code == 401
    # ... which, within one token lifetime, a live token of the client revives once the catalog
    # confirms the table is the same (a PyIceberg client renews its token only after a 401)
    assert _sign(signer, _token(signer), endpoint, key).status_code == 200
    time.sleep(3.5)
    # expired again, and the table re-created behind the signer's back meanwhile: not revived
    raw = Rest(lakehouse.info, uri=_raw(lakehouse))
    assert raw.request("DELETE", f"/namespaces/{ns}/tables/t").status_code == 204
    assert raw.create(ns, "t").status_code == 200
    late = _sign(signer, _token(signer), endpoint, key)
    assert late.status_code == 403 and "dropped, renamed or moved" in late.json()["error"]["message"], late.text
    # an endpoint left unused past its token and one more lifetime: dead, whatever token comes
    idle = _endpoint(_catalog(signer, _token(signer), "GET", f"/namespaces/{ns}/tables/t"))
    time.sleep(6.5)
    dead = _sign(signer, _token(signer), idle, key)
    assert dead.status_code == 403 and "outlived the tokens" in dead.json()["error"]["message"], dead.text
    # loading the table again gives a live endpoint
    fresh = _token(signer)
    again = _endpoint(_catalog(signer, fresh, "GET", f"/namespaces/{ns}/tables/t"))
    assert _sign(signer, fresh, again, key).status_code == 200


def test_an_endpoint_is_its_clients_only(lakehouse):
    info = lakehouse.info
    proxy = SigningCatalogProxy(_raw(lakehouse), info.s3_endpoint, info.access_key, info.secret_key,
                                clients={"x": "x-" + uuid.uuid4().hex, "y": "y-" + uuid.uuid4().hex}).start()
    try:
        def token(client: str) -> str:
            return requests.post(proxy.url + "/v1/oauth/tokens", timeout=10, data={
                "grant_type": "client_credentials", "client_id": client, "client_secret": proxy.clients[client]}).json()["access_token"]

        x, y = token("x"), token("y")
        ns = "own" + uuid.uuid4().hex[:8]
        assert _catalog(proxy, x, "POST", "/namespaces", {"namespace": [ns]}).status_code == 200
        endpoint = _endpoint(_catalog(proxy, x, "POST", f"/namespaces/{ns}/tables", {"name": "t", "schema": REST_ID_SCHEMA}))
        assert _sign(proxy, x, endpoint, f"{ns}/t/data/f.parquet").status_code == 200
        assert _sign(proxy, y, endpoint, f"{ns}/t/data/f.parquet").status_code == 403
    finally:
        proxy.stop()
