"""The namespace walk behind `staged cleanup` and maintenance's remove_orphan_files (`tables_under`)
sees every namespace or refuses, saying why: a table it missed would lose its files.

A table ten namespace levels deep is created in the real SeaweedFS; the shapes SeaweedFS never
answers (a 400 to `?parent=`, a listing whose child is not under its parent, more levels than the
walk descends) come from a small loopback catalog that serves a namespace tree."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from pyspark_catalog_ext.catalog.locations import MAX_NAMESPACE_LEVELS, tables_under
from pyspark_catalog_ext.catalog.rest import open_catalog
from pyspark_catalog_ext.errors import CleanupRefused
from pyspark_catalog_ext.staging.cleanup import find_orphans
from tests.helpers import catalog_client
from tests.servers.base import ThreadedServer, read_request_body, send_response_head

LOCATION = "s3://warehouse/walk/t"
# Advertised, so that PyIceberg asks HEAD whether a namespace or table exists.
ENDPOINTS = [f"{method} /v1/{{prefix}}/{path}" for method, path in (
    ("GET", "namespaces"), ("HEAD", "namespaces/{namespace}"), ("GET", "namespaces/{namespace}/tables"),
    ("GET", "namespaces/{namespace}/tables/{table}"), ("HEAD", "namespaces/{namespace}/tables/{table}"))]


class NamespaceTree(ThreadedServer):
    """A catalog of namespaces (`children[parent] = [child, ...]`, each a tuple) and tables (one,
    `t`, per namespace in `tables`, at `LOCATION/<namespace path>`). `status[parent]` answers that
    listing with an error instead; `lost` namespaces answer 404 to their tables' listing and loads;
    `exists` is what HEAD on a namespace or table answers (200/204 or 404)."""

    def __init__(self, children: Mapping[tuple[str, ...], list[tuple[str, ...]]], tables: list[tuple[str, ...]] = (),
                 status: Mapping[tuple[str, ...], int] | None = None, lost: tuple[tuple[str, ...], ...] = (),
                 exists: bool = True) -> None:
        super().__init__()
        self.children, self.tables, self.status = dict(children), list(tables), dict(status or {})
        self.lost, self.exists = set(lost), exists
        self.listed: list[tuple[str, ...]] = []

    def handle(self, h: Any) -> None:
        read_request_body(h)
        parts = urlsplit(h.path)
        path = parts.path
        if path == "/v1/config":
            return self._send(h, 200, {"defaults": {}, "overrides": {"prefix": "wh"}, "endpoints": ENDPOINTS})
        if path == "/v1/wh/namespaces":
            raw = parse_qs(parts.query).get("parent", [""])[0]
            parent = tuple(raw.split("\x1f")) if raw else ()
            self.listed.append(parent)
            if parent in self.status:
                return self._send(h, self.status[parent], {"error": {"message": "no", "type": "BadRequestException",
                                                                    "code": self.status[parent]}})
            return self._send(h, 200, {"namespaces": [list(ns) for ns in self.children.get(parent, [])]})
        ns = tuple(path.split("/")[4].replace("%1F", "\x1f").split("\x1f")) if path.count("/") >= 4 else ()
        if h.command == "HEAD":
            return self._send(h, 204 if self.exists else 404, None)
        if ns in self.lost:
            return self._send(h, 404, {"error": {"message": "no such thing", "type": "NoSuchNamespaceException", "code": 404}})
        if path.startswith("/v1/wh/namespaces/") and path.endswith("/tables"):
            names = [{"namespace": list(ns), "name": "t"}] if ns in self.tables else []
            return self._send(h, 200, {"identifiers": names})
        if "/tables/" in path:
            location = f"{LOCATION}/{'/'.join(ns)}"
            return self._send(h, 200, {"metadata-location": f"{location}/metadata/v1.metadata.json",
                                       "metadata": {"format-version": 2, "table-uuid": "u", "location": location}})
        self._send(h, 404, {"error": {"message": "no route", "type": "NotFound", "code": 404}})

    @staticmethod
    def _send(h: Any, status: int, body: Any) -> None:
        payload = json.dumps(body).encode() if body is not None else b""
        send_response_head(h, status, "OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
        h.wfile.write(payload)
        h.wfile.flush()


def chain(levels: int) -> dict[tuple[str, ...], list[tuple[str, ...]]]:
    """One namespace per level: a, a.l1, a.l1.l2, ..."""
    names = ["a"] + [f"l{i}" for i in range(1, levels)]
    return {tuple(names[:i]): [tuple(names[:i + 1])] for i in range(levels)}


@pytest.fixture
def tree() -> Iterator[list[NamespaceTree]]:
    started: list[NamespaceTree] = []
    yield started
    for server in started:
        server.stop()


def client_of(tree: list[NamespaceTree], server: NamespaceTree) -> Any:
    tree.append(server.start())
    return open_catalog({"uri": server.url, "warehouse": "wh", "token": "t0ken-for-the-tree"})


def test_a_table_ten_namespace_levels_deep_in_seaweedfs_is_seen(lakehouse, pyiceberg_catalog) -> None:
    """Deep namespaces in the real catalog: SeaweedFS lists every namespace at the top level and
    again under its parent, and the walk takes each once. (The level the walk used to stop at
    without a word, the ninth, shows with a catalog that lists children only under their parent:
    the chain tests below.)"""
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    levels = [f"walk_{uuid.uuid4().hex[:8]}"] + [f"l{i}" for i in range(1, 10)]
    for i in range(1, len(levels) + 1):
        pyiceberg_catalog.create_namespace(tuple(levels[:i]))
    deep = pyiceberg_catalog.create_table((*levels, "deep"), Schema(NestedField(1, "x", LongType(), required=False)))
    with catalog_client(lakehouse) as client:
        found = tables_under(client, deep.location())
    assert list(found) == [".".join([*levels, "deep"])]


def test_namespaces_deeper_than_the_walk_goes_refuse(tree) -> None:
    client = client_of(tree, NamespaceTree(chain(MAX_NAMESPACE_LEVELS + 1)))
    with pytest.raises(CleanupRefused) as err:
        find_orphans(client, LOCATION, table="a.t", s3=object(), min_age_seconds=1, allow_min_age_under_24h=True)
    text = str(err.value)
    assert f"namespaces nest deeper than {MAX_NAMESPACE_LEVELS} levels under a.l1." in text and "\n" not in text, text
    assert "nothing was deleted" in text


def test_the_deepest_level_the_walk_goes_is_listed_and_may_be_empty(tree) -> None:
    server = NamespaceTree(chain(MAX_NAMESPACE_LEVELS), tables=[tuple(["a"] + [f"l{i}" for i in range(1, MAX_NAMESPACE_LEVELS)])])
    client = client_of(tree, server)
    assert len(tables_under(client, LOCATION)) == 1
    assert max(len(p) for p in server.listed) == MAX_NAMESPACE_LEVELS


def test_a_400_to_a_child_listing_refuses(tree) -> None:
    """A catalog that rejects `?parent=` may have nothing below, or may spell the parent otherwise:
    the walk cannot tell, so cleanup does not run."""
    client = client_of(tree, NamespaceTree(chain(3), tables=[("a", "l1", "l2")], status={("a", "l1"): 400}))
    with pytest.raises(CleanupRefused, match=r"cannot list the namespaces under a\.l1 \(.*400"):
        tables_under(client, LOCATION)


@pytest.mark.parametrize("child", [("b",), ("a",), ("a", "")])
def test_a_child_listing_that_does_not_extend_its_parent_refuses(tree, child) -> None:
    client = client_of(tree, NamespaceTree({(): [("a",)], ("a",): [child]}))
    with pytest.raises(CleanupRefused, match="among the namespaces under a: a listing the walk cannot follow"):
        tables_under(client, LOCATION)


def test_a_catalog_that_lists_nested_namespaces_at_the_top_walks_each_once(tree) -> None:
    """SeaweedFS lists every namespace at the top level and again under its parent."""
    server = NamespaceTree({(): [("a",), ("a", "b")], ("a",): [("a", "b")]}, tables=[("a",), ("a", "b")])
    client = client_of(tree, server)
    assert sorted(tables_under(client, LOCATION)) == ["a.b.t", "a.t"]
    assert sorted(server.listed) == [(), ("a",), ("a", "b")]


@pytest.mark.parametrize("exists", [True, False])
def test_a_404_counts_as_dropped_only_when_the_catalog_says_it_is_gone(tree, exists) -> None:
    """A namespace or table listed, then answering 404: dropped meanwhile (nothing to keep) only if
    the catalog confirms it no longer exists; a 404 from a route or a proxy would hide its files."""
    for lost in [("a",), ("a", "b")]:
        server = NamespaceTree({(): [("a",), ("a", "b")]}, tables=[("a", "b")], lost=(lost,), exists=exists)
        client = client_of(tree, server)
        if exists:
            with pytest.raises(CleanupRefused, match="yet the catalog says it exists"):
                tables_under(client, LOCATION)
        else:
            assert list(tables_under(client, LOCATION)) == ([] if lost == ("a", "b") else ["a.b.t"])
