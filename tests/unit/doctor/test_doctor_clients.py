"""The doctor's `duckdb` and `trino` client probes where they cannot run: skipped in one line naming
how to install the engine when it is absent, and `unsupported` with the engine's own reason on a
remote-signing catalog (decided from the connection alone: nothing is sent, no server started)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from pyspark_catalog_ext.catalog.profiles import get_profile
from pyspark_catalog_ext.doctor.clients import probe_duckdb, probe_trino


def _ctx(**connection: str) -> SimpleNamespace:
    return SimpleNamespace(profile=get_profile("seaweedfs"), connection={"uri": "http://127.0.0.1:9", "warehouse": "wh",
                                                                        "credential": "id:not-a-secret", **connection})


def test_skipped_in_one_line_naming_the_install_when_duckdb_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)  # what `import duckdb` meets where it is not installed
    outcome = probe_duckdb(_ctx())
    assert outcome.status == "skipped"
    assert outcome.summary == "DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'"


def test_unsupported_with_duckdbs_reason_on_remote_signing() -> None:
    pytest.importorskip("duckdb", reason="DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'")
    outcome = probe_duckdb(_ctx(delegation="remote-signing"))
    assert outcome.status == "unsupported", outcome
    assert "no S3 remote signing" in outcome.summary and "\n" not in outcome.summary


def test_trino_skipped_in_one_line_naming_the_install_when_its_client_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trino", None)  # what `import trino` meets where it is not installed
    outcome = probe_trino(_ctx())
    assert outcome.status == "skipped"
    assert outcome.summary.startswith("Trino's Python client is not installed: pip install 'pyspark-catalog-ext[trino]'")
    assert "JDK 24+" in outcome.summary and "\n" not in outcome.summary


def test_trino_unsupported_with_its_reason_on_remote_signing() -> None:
    pytest.importorskip("trino", reason="Trino's Python client is not installed: pip install 'pyspark-catalog-ext[trino]'")
    outcome = probe_trino(_ctx(delegation="remote-signing"))
    assert outcome.status == "unsupported", outcome
    assert "no S3 remote signing" in outcome.summary and "\n" not in outcome.summary
