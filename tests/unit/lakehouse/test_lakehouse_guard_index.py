"""The location guard's index of each namespace's tables (lakehouse/table_index.py), on the real
SeaweedFS: a create costs the same in a namespace of 500 tables as in an empty one, the first one
does not wait for the index to be built (lakehouse/index_builds.py) and the rule holds meanwhile,
the rule still holds when the index is stale (a table made behind the guard's back, an answer
lost after SeaweedFS acted), and a namespace older than the guard is indexed as it starts.
A 5,000-table run: benchmarks/bench_guard_namespace_size.py."""

from __future__ import annotations

import re
import statistics
import threading
import time
import uuid

import requests

from pyspark_catalog_ext.lakehouse.catalog_proxy import CatalogGuardProxy
from pyspark_catalog_ext.lakehouse.guard import LocationGuard
from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from tests.lakehouse_rest import Rest, fill_namespace, refused
from tests.servers.base import BufferedProxy, Request, Response

TABLES = 500  # with the old per-create listing, 250 tables already read ~15 KB more per create
HOLD_SECONDS = 60  # the longest a held listing waits (a test releases it sooner)


def _raw(lakehouse) -> str:
    return f"http://127.0.0.1:{lakehouse.info.ports['iceberg']}"


class MeteredGateway(BufferedProxy):
    """Between the guard and SeaweedFS: counts the calls and the answer bytes the guard reads;
    `lose` (a path ending): the next POST to it is handled by SeaweedFS, its answer replaced by a 502."""

    lose: str | None = None

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.calls = self.bytes_read = 0
        self.listings = threading.Event()  # set: a namespace's tables may be listed (clear: held until set)
        self.listings.set()

    def process(self, req: Request) -> Response:
        if re.fullmatch(r".*/namespaces/[^/]+/tables", req.route) and req.method == "GET":
            self.listings.wait(HOLD_SECONDS)  # what building a namespace's index starts with
        out = self.forward(req)
        self.calls += 1
        self.bytes_read += len(out.body)
        if self.lose and req.method == "POST" and req.path.split("?")[0].endswith(self.lose):
            self.lose = None
            return Response(502, [("Content-Type", "text/plain")], b"answer lost", "Bad Gateway")
        return out


def _guarded(lakehouse, gateway: MeteredGateway) -> CatalogGuardProxy:
    info = lakehouse.info
    return CatalogGuardProxy(LocationGuard(gateway.url, info.s3_endpoint, info.access_key, info.secret_key,
                                           filer=lakehouse.filer_access()), clients=dict([info.credential.split(":", 1)]))


def test_a_create_costs_the_same_in_a_namespace_of_500_tables_as_in_an_empty_one(lakehouse):
    """Counted by cause (the guard's calls to SeaweedFS and the bytes it reads) and timed: the
    guard used to list and compare every table of the namespace on each create."""
    full = "full" + uuid.uuid4().hex[:8]
    fill_namespace(Rest(lakehouse.info, uri=_raw(lakehouse)), full, TABLES)
    with MeteredGateway(_raw(lakehouse)) as gateway, _guarded(lakehouse, gateway) as proxy:
        rest = Rest(lakehouse.info, uri=proxy.url)
        empty = rest.namespace("empty")
        for ns in (empty, full):  # the guard's first look at each namespace: its index is built
            assert rest.create(ns, "first").status_code == 200
        cost: dict[str, list[tuple[int, int, float]]] = {empty: [], full: []}
        for i in range(7):  # alternating, so a busy machine slows both alike
            for ns in (empty, full):
                calls, read = gateway.calls, gateway.bytes_read
                started = time.perf_counter()
                assert rest.create(ns, f"c{i}").status_code == 200
                cost[ns].append((gateway.calls - calls, gateway.bytes_read - read, time.perf_counter() - started))
        calls = gateway.calls  # over an existing name: the table's own files do not make the guard list the namespace
        assert rest.create(full, "c0").status_code == 200  # SeaweedFS answers a create over a name with that table
        assert gateway.calls - calls == 2
    seconds = {ns: statistics.median(c[2] for c in costs) for ns, costs in cost.items()}
    print(f"create: {seconds[empty] * 1000:.1f} ms in an empty namespace, {seconds[full] * 1000:.1f} ms with {TABLES} tables; "
          f"calls {[c[0] for c in cost[empty]]} vs {[c[0] for c in cost[full]]}, bytes read {cost[empty][0][1]} vs {cost[full][0][1]}")
    assert [c[0] for c in cost[full]] == [c[0] for c in cost[empty]]
    assert max(c[1] for c in cost[full]) <= max(c[1] for c in cost[empty]) + 500  # names differ a little in length
    assert seconds[full] < 2 * seconds[empty]


def _create(rest: Rest, ns: str, name: str, **extra) -> requests.Response:
    """A create through the guard; a time-out here means it waited for a held listing."""
    body = {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": []}, **extra}
    return requests.post(f"{rest.base}/namespaces/{ns}/tables", json=body, headers=rest.headers, timeout=20)


def test_the_first_create_in_a_namespace_does_not_wait_for_its_index(lakehouse):
    """The guard's first look at a namespace of N tables made after it started: its index is built
    in the background (its listing held here until the end), and the first creates cost the same
    calls and bytes as in an empty namespace; creates meanwhile are still refused where they
    overlap a table (its entry, one made through the guard meanwhile, one only files show)."""
    with MeteredGateway(_raw(lakehouse)) as gateway, _guarded(lakehouse, gateway) as proxy:
        rest, raw = Rest(lakehouse.info, uri=proxy.url), Rest(lakehouse.info, uri=_raw(lakehouse))
        full = "full" + uuid.uuid4().hex[:8]
        fill_namespace(raw, full, 40)
        empty = raw.namespace("empty")
        gateway.listings.clear()
        release = threading.Timer(HOLD_SECONDS / 2, gateway.listings.set)  # should the test fail midway
        release.start()
        try:
            cost = {}
            for ns in (empty, full):
                calls, read = gateway.calls, gateway.bytes_read
                assert _create(rest, ns, "first").status_code == 200
                cost[ns] = (gateway.calls - calls, gateway.bytes_read - read)
            print(f"first create: {cost[empty]} (calls, bytes) in an empty namespace, {cost[full]} with 40 tables")
            assert cost[full][0] == cost[empty][0] and cost[full][1] <= cost[empty][1] + 500
            refused(_create(rest, full, "x", location=f"s3://warehouse/{full}/t000001/nested"), "overlaps table", f"{full}.t000001")
            assert _create(rest, full, "d", location=f"s3://warehouse/{full}/free/deep").status_code == 200
            refused(_create(rest, full, "free"), "overlaps table", f"{full}.d")
            assert raw.create(full, "h", location=f"s3://warehouse/{full}/hidden/deep").status_code == 200
            assert not gateway.listings.is_set()  # none of the above waited for the index
            threading.Timer(1.0, gateway.listings.set).start()  # files show a table: this create waits for the index
            refused(_create(rest, full, "hidden"), "overlaps table", f"{full}.h")
        finally:
            gateway.listings.set()
            release.cancel()
        assert _create(rest, full, "after").status_code == 200


def test_a_table_moved_before_the_guard_started_is_not_overlapped(lakehouse):
    """A moved table's new place holds no file (SeaweedFS keeps writing its metadata at the old
    place): in a namespace older than the guard, a create there waits for the index."""
    info = lakehouse.info
    ns = Rest(info).namespace("older")
    assert Rest(info).create(ns, "a").status_code == 200
    assert Rest(info).set_location(ns, "a", f"s3://warehouse/{ns}/moved").status_code == 200
    with MeteredGateway(_raw(lakehouse)) as gateway, _guarded(lakehouse, gateway) as proxy:
        gateway.listings.clear()
        threading.Timer(1.0, gateway.listings.set).start()
        refused(_create(Rest(info, uri=proxy.url), ns, "moved"), "overlaps table", f"{ns}.a")


def test_a_namespace_older_than_the_guard_is_indexed_as_it_starts():
    """No quick check runs in a namespace older than the guard (a table moved before it started may
    hold a place no file shows), so the first create there waited for the whole index: a listing
    and a load per table. A guard made with `index_at_start`, as the lakehouse makes it, indexes
    such namespaces as it starts. Its own lakehouse: the guard indexes every namespace it holds."""
    with start_lakehouse() as lake:
        info = lake.info
        raw = Rest(info, uri=_raw(lake))
        old = "old" + uuid.uuid4().hex[:8]
        fill_namespace(raw, old, TABLES)
        assert raw.set_location(old, "t000001", f"s3://warehouse/{old}/moved").status_code == 200
        calls = {}
        for at_start in (False, True):
            with MeteredGateway(_raw(lake)) as gateway:
                guard = LocationGuard(gateway.url, info.s3_endpoint, info.access_key, info.secret_key,
                                      filer=lake.filer_access(), index_at_start=at_start)
                with CatalogGuardProxy(guard, clients=dict([info.credential.split(":", 1)])) as proxy:
                    rest = Rest(info, uri=proxy.url)
                    if at_start:
                        assert guard.indexed_at_start is not None and guard.indexed_at_start.wait(300)
                    before = gateway.calls
                    assert rest.create(old, f"first{int(at_start)}").status_code == 200
                    calls[at_start] = gateway.calls - before
                    refused(rest.create(old, "moved"), "overlaps table", f"{old}.t000001")
    print(f"first create in a namespace of {TABLES} tables older than the guard: {calls[False]} calls to SeaweedFS, "
          f"{calls[True]} when indexed as the guard started")
    assert calls[False] > TABLES  # the control: it listed the namespace and loaded each table
    assert calls[True] < 10


def test_a_table_made_behind_the_guards_back_is_not_overlapped(lakehouse):
    """The index does not know a table created on SeaweedFS's own port (admin keys): its files show
    it, so the guard indexes the namespace again before it admits a location."""
    info = lakehouse.info
    rest, raw = Rest(info), Rest(info, uri=_raw(lakehouse))
    ns = rest.namespace("stale")
    assert rest.create(ns, "known").status_code == 200  # the guard has indexed the namespace
    assert raw.create(ns, "victim").status_code == 200
    refused(rest.create(ns, "b", location=f"s3://warehouse/{ns}/victim/nested"), "overlaps table", f"{ns}.victim")
    assert raw.create(ns, "deep", location=f"s3://warehouse/{ns}/free/deep").status_code == 200
    refused(rest.create(ns, "free"), "overlaps table", f"{ns}.deep")
    assert rest.tables(ns) == ["deep", "known", "victim"]


def test_a_change_whose_answer_was_lost_is_read_again(lakehouse):
    """SeaweedFS moved a table but its answer was lost (502): the guard reads the table's entry
    again instead of keeping its old place, so its new place is not given to another table."""
    with MeteredGateway(_raw(lakehouse)) as gateway, _guarded(lakehouse, gateway) as proxy:
        rest = Rest(lakehouse.info, uri=proxy.url)
        ns = rest.namespace("lost")
        assert rest.create(ns, "mine").status_code == 200
        gateway.lose = f"/namespaces/{ns}/tables/mine"
        assert rest.set_location(ns, "mine", f"s3://warehouse/{ns}/moved").status_code == 502
        assert rest.location(ns, "mine") == f"s3://warehouse/{ns}/moved"  # SeaweedFS did move it
        refused(rest.create(ns, "other", location=f"s3://warehouse/{ns}/moved"), "overlaps table", f"{ns}.mine")
