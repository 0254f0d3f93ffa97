"""Attacks on the embedded lakehouse's catalog proxy, each one reproduced against an earlier version,
now refused; on the real SeaweedFS, checked by what S3 and the catalog hold afterwards.

* encoded routes (`tabl%65s`, `tr%61nsactions`) that SeaweedFS decodes and the proxy did not;
* a `warehouse` table property, from which SeaweedFS derives a location;
* a transaction whose changes are each fine alone but nest one table in another;
* a rename into another namespace, after which the old namespace's checks no longer saw the table;
* a drop that SeaweedFS would turn into a purge of another table's files;
* a change SeaweedFS stored elsewhere than the proxy checked (a tampering gateway in between):
  rolled back without deleting any file;
* the lock: a create waits for no other namespace, and costs the same with 300 namespaces.

The signer's endpoints ending with their table and their token: test_lakehouse_signer_scopes.py.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
import requests

from pyspark_catalog_ext.lakehouse.catalog_proxy import CatalogGuardProxy
from pyspark_catalog_ext.lakehouse.guard import LocationGuard
from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from tests.helpers import REST_ID_SCHEMA
from tests.lakehouse_rest import Rest, admin_s3, objects, refused
from tests.servers.base import BufferedProxy, Request, Response


@pytest.fixture(scope="module", params=["vended-credentials", "remote-signing"])
def lake(request):
    with start_lakehouse(delegation=request.param) as lh:
        yield lh


@pytest.fixture()
def rest(lake):
    return Rest(lake.info, delegation=lake.info.delegation)


def test_encoded_routes_are_read_as_seaweedfs_reads_them(lake, rest):
    s3 = admin_s3(lake.info)
    ns = rest.namespace("enc")
    assert rest.create(ns, "victim").status_code == 200
    victim = f"s3://warehouse/{ns}/victim"
    victim_files = objects(s3, f"{ns}/victim/")
    create_at_victim = {"name": "b", "schema": REST_ID_SCHEMA, "location": victim}
    for path in (f"/namespaces/{ns}/tabl%65s", f"/namespaces/{ns}/%74%61%62%6C%65%73", f"/n%61mespaces/{ns}/tables"):
        refused(rest.raw("POST", path, create_at_victim), "overlaps table", f"{ns}.victim")
    assert rest.create(ns, "mine").status_code == 200
    mine = rest.location(ns, "mine")
    move = {"requirements": [], "updates": [{"action": "set-location", "location": victim}]}
    for path in (f"/namespaces/{ns}/tabl%65s/mine", f"/namespaces/{ns}/tables/m%69ne"):
        refused(rest.raw("POST", path, move), "overlaps table", f"{ns}.victim")
    transaction = {"table-changes": [{"identifier": {"namespace": [ns], "name": "mine"}, **move}]}
    refused(rest.raw("POST", "/tr%61nsactions/commit", transaction), "overlaps table", f"{ns}.victim")
    # a separator in an escape is no spelling of a route; a second encoding is decoded once, like SeaweedFS
    refused(rest.raw("POST", f"/namespaces/{ns}%2Ftables", create_at_victim), "encodes a /", status=(400,))
    refused(rest.raw("POST", f"/namespaces/{ns}/tabl%2565s", create_at_victim), "Path not found", status=(404,))
    refused(rest.raw("POST", f"/namespaces/{ns}/tables;x", create_at_victim), "Path not found", status=(404,))
    refused(rest.raw("POST", f"/namespaces/{ns}//tables", create_at_victim), "empty segment", status=(400,))
    assert objects(s3, f"{ns}/victim/") == victim_files  # v1.metadata.json not overwritten
    assert rest.tables(ns) == ["mine", "victim"] and rest.location(ns, "mine") == mine


def test_a_warehouse_property_does_not_place_a_table(lake, rest):
    s3 = admin_s3(lake.info)
    ns1, ns2 = rest.namespace("wh"), rest.namespace("wh")
    assert rest.create(ns1, "victim").status_code == 200
    victim_files = objects(s3, f"{ns1}/victim/")
    resp = rest.create(ns2, "t", properties={"warehouse": f"s3://warehouse/{ns1}/victim"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["metadata"]["location"] == rest.location(ns2, "t") == f"s3://warehouse/{ns2}/t"
    assert objects(s3, f"{ns1}/victim/") == victim_files


def test_one_transaction_cannot_nest_one_table_in_another(lake, rest):
    ns = rest.namespace("tx")
    for name in ("b", "c"):
        assert rest.create(ns, name).status_code == 200

    def moves(**to: str) -> dict:
        return {"table-changes": [{"identifier": {"namespace": [ns], "name": name}, "requirements": [],
                                   "updates": [{"action": "set-location", "location": f"s3://warehouse/{ns}/{place}"}]}
                                  for name, place in to.items()]}

    refused(rest.post("/transactions/commit", moves(b="x", c="x/inner")), "overlaps table")
    refused(rest.post("/transactions/commit", moves(b="y", c="y")), "overlaps table")
    refused(rest.post("/transactions/commit", moves(b="z/inner", c="z")), "overlaps table")
    assert [rest.location(ns, n) for n in ("b", "c")] == [f"s3://warehouse/{ns}/b", f"s3://warehouse/{ns}/c"]
    ok = rest.post("/transactions/commit", moves(b="b2", c="c2"))  # each to a place of its own
    assert ok.status_code in (200, 204), ok.text
    assert [rest.location(ns, n) for n in ("b", "c")] == [f"s3://warehouse/{ns}/b2", f"s3://warehouse/{ns}/c2"]


def test_a_renamed_table_keeps_its_place_and_no_one_moves_in(lake, rest):
    s3 = admin_s3(lake.info)
    ns1, ns2 = rest.namespace("rn"), rest.namespace("rn")
    assert rest.create(ns1, "a").status_code == 200
    s3.put_object(Bucket="warehouse", Key=f"{ns1}/a/data/f.parquet", Body=b"a's data")
    a_files = objects(s3, f"{ns1}/a/")

    def rename(to_ns: str, to_name: str) -> requests.Response:
        return rest.post("/tables/rename", {"source": {"namespace": [ns1], "name": "a"}, "destination": {"namespace": [to_ns], "name": to_name}})

    refused(rename(ns2, "z"), "keeps its location", status=(403,))
    refused(rename("nosuch" + uuid.uuid4().hex[:6], "z"), "does not exist", status=(404,))  # as SeaweedFS answers it
    assert rest.tables(ns1) == ["a"] and rest.tables(ns2) == []
    assert rename(ns1, "z").status_code == 204  # within its namespace: fine
    refused(rest.create(ns1, "b", f"s3://warehouse/{ns1}/a/inner"), "overlaps table", f"{ns1}.z")
    refused(rest.create(ns1, "a"), "overlaps table", f"{ns1}.z")  # the old name's place holds z's files
    refused(rest.create(ns1, "b", stage=True, location=f"s3://warehouse/{ns1}/a"), "overlaps table", f"{ns1}.z")
    assert objects(s3, f"{ns1}/a/") == a_files and rest.location(ns1, "z") == f"s3://warehouse/{ns1}/a"


# -- behind the proxy: SeaweedFS's own port, and gateways between the proxy and SeaweedFS ----------------
def _raw(lakehouse) -> str:
    return f"http://127.0.0.1:{lakehouse.info.ports['iceberg']}"


def test_a_drop_that_would_purge_another_tables_files_is_refused(lakehouse):
    """A table placed inside another's data directory behind the proxy's back (SeaweedFS's own port,
    admin keys): SeaweedFS's DROP purges it, the other table's data files with it (measured), so the
    proxy refuses the drop and the files stay."""
    info = lakehouse.info
    s3 = admin_s3(info)
    rest, raw = Rest(info), Rest(info, uri=_raw(lakehouse))
    ns = rest.namespace("drop")
    assert rest.create(ns, "victim").status_code == 200
    s3.put_object(Bucket="warehouse", Key=f"{ns}/victim/data/f.parquet", Body=b"victim's data")
    assert raw.create(ns, "squatter", location=f"s3://warehouse/{ns}/victim/data").status_code == 200
    refused(rest.request("DELETE", f"/namespaces/{ns}/tables/squatter"), "would delete its files", status=(403,))
    assert s3.get_object(Bucket="warehouse", Key=f"{ns}/victim/data/f.parquet")["Body"].read() == b"victim's data"
    assert rest.tables(ns) == ["squatter", "victim"]


class SwappingGateway(BufferedProxy):
    """Between the proxy and SeaweedFS: replaces `swap[0]` by `swap[1]` in the bodies of POSTs, so
    SeaweedFS stores something else than the proxy checked."""

    swap: tuple[bytes, bytes] | None = None

    def process(self, req: Request) -> Response:
        if self.swap and req.method == "POST":
            req = Request(req.method, req.path, req.headers, req.body.replace(*self.swap))
        return self.forward(req)


@pytest.fixture()
def swapped(lakehouse):
    """(guard proxy URL, gateway) with the gateway between the guard and SeaweedFS."""
    info = lakehouse.info
    with SwappingGateway(_raw(lakehouse)) as gateway:
        guard = LocationGuard(gateway.url, info.s3_endpoint, info.access_key, info.secret_key, filer=lakehouse.filer_access())
        with CatalogGuardProxy(guard, clients=dict([info.credential.split(":", 1)])) as proxy:
            yield proxy.url, gateway


def test_what_seaweedfs_stored_is_checked_and_rolled_back_without_deleting_files(lakehouse, swapped):
    url, gateway = swapped
    info = lakehouse.info
    s3 = admin_s3(info)
    rest = Rest(info, uri=url)
    ns = rest.namespace("vfy")
    assert rest.create(ns, "victim").status_code == 200 and rest.create(ns, "mine").status_code == 200
    s3.put_object(Bucket="warehouse", Key=f"{ns}/victim/data/f.parquet", Body=b"victim's data")
    victim_meta = rest.load(ns, "victim")["metadata-location"]
    # a metadata file of no live table at a free place: the victim's, moved there with a new uuid
    metadata = json.loads(s3.get_object(Bucket="warehouse", Key=victim_meta.split("/", 3)[3])["Body"].read())
    metadata.update({"location": f"s3://warehouse/{ns}/free", "table-uuid": str(uuid.uuid4())})
    s3.put_object(Bucket="warehouse", Key=f"{ns}/free/metadata/v1.metadata.json", Body=json.dumps(metadata).encode())
    victim_files = objects(s3, f"{ns}/victim/")

    gateway.swap = (f"{ns}/free/metadata/v1.metadata.json".encode(), victim_meta.split("://", 1)[1].split("/", 1)[1].encode())
    resp = rest.post(f"/namespaces/{ns}/register", {"name": "copy", "metadata-location": f"s3://warehouse/{ns}/free/metadata/v1.metadata.json"})
    refused(resp, "SeaweedFS stored", f"overlaps table {ns}.victim", "catalog entry was removed", status=(403,))
    assert rest.tables(ns) == ["mine", "victim"]  # the registration is gone ...
    assert objects(s3, f"{ns}/victim/") == victim_files  # ... and nothing of the victim with it (a DROP would purge it)

    mine = rest.location(ns, "mine")
    gateway.swap = (f"{ns}/mine-moved".encode(), f"{ns}/victim/nested".encode())
    refused(rest.set_location(ns, "mine", f"s3://warehouse/{ns}/mine-moved"), "SeaweedFS stored", f"moved back to {mine}", status=(403,))
    assert rest.location(ns, "mine") == mine
    assert objects(s3, f"{ns}/victim/") == victim_files
    assert rest.load(ns, "victim")["metadata-location"] == victim_meta


class HoldingGateway(BufferedProxy):
    """Holds creates in namespace `hold` until `release` is set."""

    hold = ""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.entered, self.release = threading.Event(), threading.Event()

    def process(self, req: Request) -> Response:
        if self.hold and req.method == "POST" and req.route.endswith(f"/namespaces/{self.hold}/tables"):
            self.entered.set()
            self.release.wait(60)
        return self.forward(req)


def test_a_create_waits_for_no_other_namespace(lakehouse):
    info = lakehouse.info
    with HoldingGateway(_raw(lakehouse)) as gateway, \
            CatalogGuardProxy(LocationGuard(gateway.url, info.s3_endpoint, info.access_key, info.secret_key),
                                  clients=dict([info.credential.split(":", 1)])) as proxy:
        rest = Rest(info, uri=proxy.url)
        slow, fast = rest.namespace("slow"), rest.namespace("fast")
        gateway.hold = slow
        held = threading.Thread(target=rest.create, args=(slow, "t"), daemon=True)
        held.start()
        try:
            assert gateway.entered.wait(30)
            resp = requests.post(f"{rest.base}/namespaces/{fast}/tables", json={"name": "t", "schema": REST_ID_SCHEMA},
                                 headers=rest.headers, timeout=20)  # a global lock would hold it until the release
            assert resp.status_code == 200 and held.is_alive()
        finally:
            gateway.release.set()
            held.join(60)
        assert rest.tables(slow) == ["t"]


def _wait_for_index_builds(timeout: float = 60.0) -> None:
    """Until no guard in this process is building a namespace's index (index_builds.py's threads)."""
    deadline = time.monotonic() + timeout
    while any(t.name.startswith("guard-index") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a guard's index build did not end"
        time.sleep(0.05)


def test_a_create_costs_the_same_with_300_namespaces():
    """A create lists its own namespace's tables only: with 300 namespaces it makes the same few
    calls to SeaweedFS as with one (it used to walk every namespace, 1.8 s per create)."""
    with start_lakehouse() as lh:
        info = lh.info
        raw = Rest(info, uri=_raw(lh))
        with BufferedProxy(_raw(lh)) as gateway, \
                CatalogGuardProxy(LocationGuard(gateway.url, info.s3_endpoint, info.access_key, info.secret_key),
                                  clients=dict([info.credential.split(":", 1)])) as proxy:
            rest = Rest(info, uri=proxy.url)
            ns = rest.namespace("many")
            assert rest.create(ns, "first").status_code == 200

            def calls_of_a_create(name: str) -> int:
                _wait_for_index_builds()  # a build a create started calls SeaweedFS in the background
                gateway.reset_counters()
                assert rest.create(ns, name).status_code == 200
                return len(gateway.upstream_log)

            alone = calls_of_a_create("t1")
            for _ in range(300):
                raw.namespace("other")
            started = time.perf_counter()
            crowded = calls_of_a_create("t2")
            print(f"calls to SeaweedFS per create: {alone} with 1 namespace, {crowded} with 301; "
                  f"one create with 301 namespaces took {time.perf_counter() - started:.3f} s")
            assert crowded <= alone + 1 <= 6, (alone, crowded)  # +1: the table created before it is loaded once
