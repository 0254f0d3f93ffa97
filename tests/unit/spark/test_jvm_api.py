"""The JVM's JSON answers parse into the facade's dataclasses (no Spark needed)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pyspark_catalog_ext.spark.shim_api import (
    CredentialPrefix,
    EventBatch,
    JvmStagedTable,
    RegistryEntry,
    StagedAbort,
    StagedInfo,
    StagedWrite,
)

# Shaped like TableEntry.describe() in the shim.
ENTRY = {
    "handle": "h1", "catalog": "lake", "namespace": ["db", "sub"], "table": "t", "location": "s3://b/t",
    "staged": False, "table_uuid": "u", "has_refresh_endpoint": True, "has_storage_refresh_token": False,
    "generation": 3, "refresh_count": 2, "failure_count": 1, "last_strategy": "refresh-endpoint",
    "strategy_counts": {"initial": 1, "refresh-endpoint": 2}, "created_at_ms": 1, "last_refresh_at_ms": 1700,
    "last_used_at_ms": 1800, "last_error": None,
    "prefixes": [{"prefix": "s3://b/t", "fetched_at_ms": 1000, "expires_at_ms": -1, "refresh_at_ms": 5000}],
}


def test_registry_entry_parses_and_names_the_table() -> None:
    entry = RegistryEntry.from_json(json.loads(json.dumps(ENTRY)))
    assert entry.name == "lake.db.sub.t" and entry.namespace == ("db", "sub")
    assert (entry.generation, entry.refresh_count, entry.failure_count) == (3, 2, 1)
    assert entry.strategy_counts == {"initial": 1, "refresh-endpoint": 2} and entry.last_error is None
    assert entry.prefixes == (CredentialPrefix("s3://b/t", 1000, -1, 5000),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.generation = 4  # type: ignore[misc]


def test_registry_entry_without_credentials_yet() -> None:
    raw = {k: v for k, v in ENTRY.items() if k not in ("prefixes", "strategy_counts", "last_refresh_at_ms")}
    entry = RegistryEntry.from_json({**raw, "last_error": "boom"})
    assert entry.prefixes == () and entry.strategy_counts == {} and entry.last_refresh_at_ms == 0
    assert entry.last_error == "boom"


def test_event_batch_splits_header_from_fields() -> None:
    batch = EventBatch.from_json({"events": [{"seq": 7, "type": "commit.finished", "time": 12.5, "table": "t",
                                              "outcome": "committed"}], "lost": 2})
    assert batch.lost == 2 and len(batch.events) == 1
    event = batch.events[0]
    assert (event.seq, event.type, event.time) == (7, "commit.finished", 12.5)
    assert event.fields == {"table": "t", "outcome": "committed"}
    assert EventBatch.from_json({"events": []}) == EventBatch((), 0)


class _FakeStagedHandle:
    """Stands in for the Py4J handle: answers with the JSON strings StagedTables.Staged returns."""

    def describe(self) -> str:
        return json.dumps({"table": "db.t", "mode": "create", "uuid": "u1", "location": "s3://b/t",
                           "state": "staged", "snapshot_ids": [11, 12]})

    def commit(self) -> str:
        return json.dumps({**json.loads(self.describe()), "state": "committed", "committed_snapshot_ids": [11, 12]})

    def write(self, jdf: object) -> str:
        return json.dumps({} if jdf == "empty" else {"snapshot_id": 13, "added_records": 5, "added_files": 1})

    def abort(self) -> str:
        return json.dumps({"deleted": 3, "not_deleted": ["s3://b/t/x.parquet"]})

    def writtenFilesJson(self) -> str:  # noqa: N802 - Java name
        return json.dumps(["s3://b/t/a.parquet"])


class _Df:
    def __init__(self, jdf: str) -> None:
        self._jdf = jdf


def test_staged_handle_answers_parse() -> None:
    staged = JvmStagedTable(_FakeStagedHandle())
    assert staged.describe() == StagedInfo("db.t", "create", "u1", "s3://b/t", "staged", (11, 12))
    assert staged.commit().committed_snapshot_ids == (11, 12)
    assert staged.write(_Df("rows")) == StagedWrite(13, 5, 1)
    assert staged.write(_Df("empty")) == StagedWrite(None, 0, 0)
    assert staged.abort() == StagedAbort(3, ("s3://b/t/x.parquet",), None)
    assert staged.written_files() == ["s3://b/t/a.parquet"]
