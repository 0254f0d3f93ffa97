"""The location guard's per-namespace index (lakehouse/table_index.py) finds exactly the tables a
comparison with every table would find, after any sequence of puts and removals."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_catalog_ext.lakehouse.locations import StoredTable, overlap
from pyspark_catalog_ext.lakehouse.table_index import NamespaceIndex

NS = ("warehouse", ("db",))
segment = st.sampled_from(["a", "b", "ab", "a.b", "metadata"])
relative = st.lists(segment, min_size=1, max_size=4).map("/".join)
name = st.sampled_from(["a", "b", "c", "ab"])
table = st.builds(lambda n, loc, meta: StoredTable((*NS, n), f"warehouse/db/{loc}", f"warehouse/db/{meta}/metadata/v1.metadata.json", ""),
                  name, relative, relative)


def _brute(tables: dict, path: str) -> set:
    return {ident for ident, t in tables.items() if any(overlap(path, held) for held in t.occupied)}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), table), max_size=12), st.lists(relative, min_size=1, max_size=5))
def test_the_index_finds_what_comparing_every_table_finds(steps, queries):
    index, tables = NamespaceIndex(), {}
    for put, t in steps:
        if put:
            index.put(t)
            tables[t.ident] = t
        else:
            index.remove(t.ident)
            tables.pop(t.ident, None)
    for query in queries:
        path = f"warehouse/db/{query}"
        found = list(index.overlapping(path))
        assert {ident for ident, _ in found} == _brute(tables, path)
        assert all(overlap(path, held) and held in tables[ident].occupied for ident, held in found)
    assert len(index) == len(tables)
