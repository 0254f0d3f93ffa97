"""One rule picks a storage credential for a path in every Python reader of vended answers (the
refresher's slots, the storage-refresh-token strategy, `staged cleanup`), as Iceberg's FileIOs do."""

from __future__ import annotations

from pyspark_catalog_ext.catalog.locations import longest_prefix
from pyspark_catalog_ext.staging.cleanup import _io_props


def test_the_longest_covering_prefix_wins_and_the_first_of_equals() -> None:
    prefixes = ["s3://b/", "s3://b/db/t", "s3://b/db/t/data/", "s3://b/db/t/data/"]
    assert longest_prefix(prefixes, "s3://b/db/t/data/f.parquet") == "s3://b/db/t/data/"
    assert longest_prefix(prefixes, "s3://b/db/t/metadata/m.json") == "s3://b/db/t"
    assert longest_prefix(prefixes, "s3://other/x") is None
    assert longest_prefix(prefixes, None) is None
    assert longest_prefix(["", "s3://b/"], "s3://c/x") == ""  # an empty prefix covers every path


def test_cleanup_takes_the_longest_prefix_in_one_spelling_of_the_scheme() -> None:
    answer = {"config": {"s3.region": "r"}, "storage-credentials": [
        {"prefix": "s3a://b/", "config": {"s3.access-key-id": "wide"}},
        {"prefix": "s3://b/db/t", "config": {"s3.access-key-id": "table"}},
        {"prefix": "s3n://b/db/t/other", "config": {"s3.access-key-id": "elsewhere"}}]}
    assert _io_props(answer, "s3a://b/db/t")["s3.access-key-id"] == "table"
    assert _io_props(answer, "s3://b/db/u")["s3.access-key-id"] == "wide"
    assert "s3.access-key-id" not in _io_props(answer, "s3://c/db/t")
