"""The doctor's `duckdb` and `trino` client probes where they cannot run: skipped in one line naming
how to install the engine when it is absent, and `unsupported` with the engine's own reason on a
remote-signing or SigV4 catalog (decided from the connection alone: nothing is sent, no server
started), even where the Spark CTAS they would read did not pass."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from pyspark_catalog_ext.catalog.profiles import get_profile
from pyspark_catalog_ext.doctor.clients import probe_duckdb, probe_trino
from pyspark_catalog_ext.doctor.context import SecretBag
from pyspark_catalog_ext.doctor.runner import _run_one
from pyspark_catalog_ext.doctor.suite import PROBES


def _ctx(**connection: str) -> SimpleNamespace:
    return SimpleNamespace(profile=get_profile("seaweedfs"), connection={"uri": "http://127.0.0.1:9", "warehouse": "wh",
                                                                        "credential": "id:not-a-secret", **connection})


def test_skipped_in_one_line_naming_the_install_when_duckdb_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)  # what `import duckdb` meets where it is not installed
    outcome = probe_duckdb(_ctx())
    assert outcome.status == "skipped"
    assert outcome.summary == "DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'"


def test_trino_skipped_in_one_line_naming_the_install_when_its_client_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trino", None)  # what `import trino` meets where it is not installed
    outcome = probe_trino(_ctx())
    assert outcome.status == "skipped"
    assert outcome.summary.startswith("Trino's Python client is not installed: pip install 'pyspark-catalog-ext[trino]'")
    assert "JDK 24+" in outcome.summary and "\n" not in outcome.summary


class _Silent:
    def start(self, *_: object) -> None:
        pass


# (engine, connection, what the reason says)
CANNOT = [("duckdb", {"delegation": "remote-signing"}, "DuckDB's iceberg extension has no S3 remote signing"),
          ("trino", {"delegation": "remote-signing"}, "Trino's Iceberg connector has no S3 remote signing"),
          ("duckdb", {"profile": "glue"}, "not sigv4 auth"),
          ("trino", {"profile": "glue"}, "not sigv4 auth")]


@pytest.mark.parametrize(("engine", "connection", "says"), CANNOT, ids=[f"{e}-{'-'.join(c.values())}" for e, c, _ in CANNOT])
def test_unsupported_with_the_engines_reason_though_the_spark_ctas_failed(engine: str, connection: dict, says: str) -> None:
    profile = get_profile(connection.pop("profile", "seaweedfs"))
    ctx = _ctx(**connection)
    if profile.name == "glue":
        ctx.connection = {"uri": "http://127.0.0.1:9", "warehouse": "123456789012", "region": "us-east-1"}
    ctx.profile = profile
    ctx.results, ctx.secrets, ctx.http = {"spark-ctas": SimpleNamespace(status="fail")}, SecretBag(), []
    spec = next(p for p in PROBES if p.id == engine)
    result = _run_one(ctx, spec, required=False, skip=False, progress=_Silent())
    assert (result.status, says in result.summary, "\n" in result.summary) == ("unsupported", True, False), result.summary
