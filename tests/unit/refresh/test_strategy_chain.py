"""The refresh strategy chain on the real SeaweedFS catalog, which has no credentials endpoint:
the 404 is remembered (no second request) and forgotten after FORGET_MISSING_AFTER_S."""

from __future__ import annotations

from pyspark_catalog_ext.catalog.rest import open_catalog
from pyspark_catalog_ext.refresh.strategies import StrategyChain
from pyspark_catalog_ext.spark.conf import catalog_properties


class Timer:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_missing_credentials_endpoint_is_remembered_then_forgotten(lakehouse, pyiceberg_catalog) -> None:
    pyiceberg_catalog.create_namespace_if_not_exists("chain")
    import pyarrow as pa

    if not pyiceberg_catalog.table_exists("chain.t"):
        pyiceberg_catalog.create_table("chain.t", schema=pa.schema([("id", pa.int64())]))
    client = open_catalog(catalog_properties("local", lakehouse=lakehouse, shim=False))
    timer = Timer()
    chain = StrategyChain(timer=timer)
    req = {"catalog": "lake", "namespace": ["chain"], "table": "t", "staged": False}
    names = lambda: [s.name for s in chain.plan(req)]  # noqa: E731

    assert names() == ["credentials-endpoint", "reload"]
    answer = chain.fetch(client, req)
    assert answer["strategy"].startswith("reload (after credentials-endpoint failed")
    assert answer["config"].get("s3.access-key-id")
    assert names() == ["reload"]  # remembered: the next refresh asks no more
    assert chain.fetch(client, req)["strategy"] == "reload"

    timer.now += StrategyChain.FORGET_MISSING_AFTER_S + 1
    assert names() == ["credentials-endpoint", "reload"]  # forgotten: asked again after an hour
    pyiceberg_catalog.drop_table("chain.t")
