"""The embedded lakehouse's table-location rule (lakehouse/guard.py), on the real SeaweedFS: a table
lies under its namespace's location and overlaps no other table, checked on create, stage-create,
register and set-location commits, in both delegation modes; plus what the lakehouse no longer
shares between instances or opens to other local users (random keys, the filer's JWT)."""

from __future__ import annotations

import http.client
import json
import uuid
from urllib.parse import urlsplit

import pyarrow as pa
import pytest
import requests

from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from tests.helpers import REST_ID_SCHEMA


def _token(info) -> str:
    cid, secret = info.credential.split(":", 1)
    r = requests.post(info.oauth2_server_uri, timeout=10, data={"grant_type": "client_credentials", "client_id": cid,
                                                                "client_secret": secret, "scope": "catalog"})
    r.raise_for_status()
    return r.json()["access_token"]


class Rest:
    """Raw Iceberg REST calls to the lakehouse's catalog URI (what every client sees)."""

    def __init__(self, info) -> None:
        self.base = f"{info.iceberg_uri}/v1/{info.warehouse}"
        self.headers = {"Authorization": f"Bearer {_token(info)}", "X-Iceberg-Access-Delegation": "vended-credentials"}

    def post(self, path: str, body: dict) -> requests.Response:
        return requests.post(self.base + path, json=body, headers=self.headers, timeout=30)

    def create(self, ns: str, name: str, location: str | None = None, stage: bool = False) -> requests.Response:
        body: dict = {"name": name, "schema": REST_ID_SCHEMA}
        if location is not None:
            body["location"] = location
        if stage:
            body["stage-create"] = True
        return self.post(f"/namespaces/{ns}/tables", body)

    def set_location(self, ns: str, name: str, location: str) -> requests.Response:
        return self.post(f"/namespaces/{ns}/tables/{name}", {"requirements": [], "updates": [{"action": "set-location", "location": location}]})


@pytest.fixture(scope="module", params=["vended-credentials", "remote-signing"])
def lake(request):
    with start_lakehouse(delegation=request.param) as lh:
        yield lh


@pytest.fixture()
def ns(lake):
    name = "loc" + uuid.uuid4().hex[:8]
    rest = Rest(lake.info)
    assert rest.post("/namespaces", {"namespace": [name]}).status_code == 200
    assert rest.create(name, "a").status_code == 200
    return name


def _refused(resp: requests.Response, *needles: str) -> str:
    assert resp.status_code in (400, 403), (resp.status_code, resp.text[:300])
    message = resp.json()["error"]["message"]
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


def test_create_and_stage_create_at_another_tables_location_are_refused(lake, ns):
    rest = Rest(lake.info)
    a = f"s3://warehouse/{ns}/a"
    for stage in (False, True):
        _refused(rest.create(ns, "b", a, stage=stage), "overlaps table", f"{ns}.a")
        _refused(rest.create(ns, "b", a + "/data/inner", stage=stage), "overlaps table")  # nested inside a
        _refused(rest.create(ns, "b", f"s3://warehouse/{ns}", stage=stage), "not under its namespace")  # the namespace root
        _refused(rest.create(ns, "b", "s3://warehouse/elsewhere/b", stage=stage), "not under its namespace")
        _refused(rest.create(ns, "b", f"s3://warehouse/{ns}/x/../a", stage=stage), "not a plain")
    # a table whose location would contain a's
    other = "loc" + uuid.uuid4().hex[:8]
    assert rest.post("/namespaces", {"namespace": [other]}).status_code == 200
    _refused(rest.create(other, "c", f"s3://warehouse/{ns}"), "not under its namespace")
    listed = requests.get(f"{rest.base}/namespaces/{ns}/tables", headers=rest.headers, timeout=10).json()["identifiers"]
    assert [t["name"] for t in listed] == ["a"]


def test_normal_create_explicit_location_and_restage_still_work(lake, ns):
    rest = Rest(lake.info)
    assert rest.create(ns, "b").json()["metadata"]["location"] == f"s3://warehouse/{ns}/b"
    assert rest.create(ns, "c", f"s3://warehouse/{ns}/c-data").status_code == 200
    staged = rest.create(ns, "d", stage=True)
    assert staged.status_code == 200
    loc = staged.json()["metadata"]["location"]
    again = rest.create(ns, "d", loc, stage=True)  # Spark's CTAS re-stages at the staged location: same table
    assert again.status_code == 200, again.text
    # another name at the staged location is refused, though the staged table is not stored yet
    _refused(rest.create(ns, "e", loc, stage=True), "overlaps staged table", f"{ns}.d")
    # a table created over its own name is the same table
    assert rest.create(ns, "b", f"s3://warehouse/{ns}/b").status_code == 200


def test_set_location_onto_another_table_or_the_namespace_root_is_refused(lake, ns):
    rest = Rest(lake.info)
    assert rest.create(ns, "b").status_code == 200
    _refused(rest.set_location(ns, "b", f"s3://warehouse/{ns}/a"), "overlaps table", f"{ns}.a")
    _refused(rest.set_location(ns, "b", f"s3://warehouse/{ns}/a/metadata"), "overlaps table")
    _refused(rest.set_location(ns, "b", f"s3://warehouse/{ns}"), "not under its namespace")
    tx = rest.post("/transactions/commit", {"table-changes": [{"identifier": {"namespace": [ns], "name": "b"}, "requirements": [],
                                                               "updates": [{"action": "set-location", "location": f"s3://warehouse/{ns}/a"}]}]})
    _refused(tx, "overlaps table")
    loaded = requests.get(f"{rest.base}/namespaces/{ns}/tables/b", headers=rest.headers, timeout=10).json()
    assert loaded["metadata"]["location"] == f"s3://warehouse/{ns}/b"
    ok = rest.set_location(ns, "b", f"s3://warehouse/{ns}/b-moved")  # a free place under the namespace is fine
    assert ok.status_code == 200, ok.text


def test_register_at_another_tables_location_is_refused(lake, ns):
    rest = Rest(lake.info)
    a = requests.get(f"{rest.base}/namespaces/{ns}/tables/a", headers=rest.headers, timeout=10).json()
    resp = rest.post(f"/namespaces/{ns}/register", {"name": "stolen", "metadata-location": a["metadata-location"]})
    _refused(resp, "register", "overlaps table", f"{ns}.a")


def test_register_reads_nothing_outside_its_namespace_and_echoes_nothing_it_read(lake, ns):
    """The guard reads a registered metadata file with the admin keys: a file in another namespace or
    bucket is refused before anything is read (an existing and a missing file get the same answer,
    so no existence oracle), and what a file in the namespace says is never shown."""
    import boto3
    from botocore.config import Config

    rest = Rest(lake.info)
    other = "loc" + uuid.uuid4().hex[:8]
    assert rest.post("/namespaces", {"namespace": [other]}).status_code == 200
    assert rest.create(other, "z").status_code == 200
    theirs = requests.get(f"{rest.base}/namespaces/{other}/tables/z", headers=rest.headers, timeout=10).json()
    answers = []
    for target in (theirs["metadata-location"], f"s3://warehouse/{other}/z/metadata/none.metadata.json",
                   "s3://another-bucket/x/metadata/v1.metadata.json"):
        resp = rest.post(f"/namespaces/{ns}/register", {"name": "r" + uuid.uuid4().hex[:6], "metadata-location": target})
        answers.append(_refused(resp, "lies outside namespace").split(": the metadata file")[0])
    assert len(set(answers)) == 1, answers
    info = lake.info
    s3 = boto3.client("s3", endpoint_url=info.s3_endpoint, region_name="us-east-1", aws_access_key_id=info.access_key,
                      aws_secret_access_key=info.secret_key, config=Config(s3={"addressing_style": "path"}))
    content = "content-" + uuid.uuid4().hex
    key = f"{ns}/a/metadata/odd.metadata.json"
    s3.put_object(Bucket="warehouse", Key=key, Body=json.dumps({"location": f"{content} with spaces"}).encode())
    resp = rest.post(f"/namespaces/{ns}/register", {"name": "odd", "metadata-location": f"s3://warehouse/{key}"})
    assert content not in _refused(resp, "register") and content not in resp.text


def test_pyiceberg_create_at_another_tables_location_is_refused(lake, ns):
    from pyiceberg.exceptions import ForbiddenError

    cat = pyiceberg_catalog(lake)
    schema = pa.schema([("id", pa.int64())])
    with pytest.raises(ForbiddenError, match="overlaps table"):
        cat.create_table(f"{ns}.b", schema=schema, location=f"s3://warehouse/{ns}/a")
    with pytest.raises(ForbiddenError, match="overlaps table"):
        cat.create_table_transaction(f"{ns}.b", schema=schema, location=f"s3://warehouse/{ns}/a/data").commit_transaction()
    table = cat.create_table(f"{ns}.b", schema=schema)
    if lake.info.delegation == "vended-credentials":  # PyIceberg has no remote signing (docs/signing.md)
        table.append(pa.table({"id": [1, 2]}))
        assert table.scan().to_arrow().num_rows == 2


def test_posts_that_set_no_location_pass_and_unknown_table_paths_are_refused(lake, ns):
    rest = Rest(lake.info)
    metrics = rest.post(f"/namespaces/{ns}/tables/a/metrics", {"report-type": "scan-report"})
    assert "Path not found" not in metrics.text, metrics.text
    rename = rest.post("/tables/rename", {"source": {"namespace": [ns], "name": "a"}, "destination": {"namespace": [ns], "name": "z"}})
    assert rename.status_code == 204, rename.text  # SeaweedFS 4.48 renames within a namespace
    other = rest.post(f"/namespaces/{ns}/tables/z/other", {})
    assert other.status_code == 404 and "no route of this catalog" in other.json()["error"]["message"], other.text
    # a dot segment (requests would resolve it before sending: raw http.client keeps it)
    conn = http.client.HTTPConnection(urlsplit(rest.base).netloc, timeout=10)
    conn.request("POST", urlsplit(rest.base).path + f"/namespaces/{ns}/tables/x/../../tables", body=json.dumps({"name": "b", "schema": REST_ID_SCHEMA}),
                 headers={**rest.headers, "Content-Type": "application/json"})
    raw = conn.getresponse()
    assert raw.status == 400 and "segment" in json.loads(raw.read())["error"]["message"]
    conn.close()


def test_a_nested_namespace_works_through_the_proxy(lake):
    """Levels joined by 0x1F in the path (`a%1Fb`) and in `parent=`: the one control character a
    target may carry."""
    rest = Rest(lake.info)
    outer = "nest" + uuid.uuid4().hex[:8]
    for levels in ([outer], [outer, "inner"]):
        assert rest.post("/namespaces", {"namespace": levels}).status_code == 200
    path = f"/namespaces/{outer}%1Finner"
    made = requests.post(f"{rest.base}{path}/tables", json={"name": "t", "schema": REST_ID_SCHEMA}, headers=rest.headers, timeout=30)
    assert made.status_code == 200, made.text
    assert made.json()["metadata"]["location"] == f"s3://warehouse/{outer}.inner/t"
    loaded = requests.get(f"{rest.base}{path}/tables/t", headers=rest.headers, timeout=30)
    assert loaded.status_code == 200 and loaded.json()["metadata"]["location"] == f"s3://warehouse/{outer}.inner/t"
    _refused(rest.create(f"{outer}%1Finner", "u", f"s3://warehouse/{outer}.inner/t/x"), "overlaps table", f"{outer}.inner.t")
    listed = requests.get(f"{rest.base}/namespaces", params={"parent": outer}, headers=rest.headers, timeout=30)
    assert listed.status_code == 200 and [outer, "inner"] in listed.json()["namespaces"], listed.text
