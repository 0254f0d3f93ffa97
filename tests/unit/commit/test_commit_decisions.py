"""PyIceberg's commit rule checked row by row against the shared decision table
(resources/commit-decisions.json), the same rows CommitDecisionTest.java checks the shim's
CommitDecision against; docs/commits.md must show exactly that table."""

from __future__ import annotations

import json
import uuid
import zipfile
from typing import Any

import pytest

from pyspark_catalog_ext.commit import decision
from pyspark_catalog_ext.commit.decision import (
    Answer,
    Facts,
    Kind,
    Landed,
    Outcome,
    answer_of_status,
    decide,
    landed_state,
    needs_reconciliation,
)
from pyspark_catalog_ext.pyiceberg_ext.commits import CommitPolicy, own_commit_landed
from tests.helpers import ROOT

TABLE = decision.table()
ROWS = TABLE["rows"]
PY_ROWS = [r for r in ROWS if "pyiceberg" in TABLE["runtimes"][r["commit"]]]


def answer(raw: int | str) -> Answer:
    if isinstance(raw, int) and 300 <= raw < 400:
        return Answer.REDIRECT  # the transport refuses it before any answer is read
    if isinstance(raw, int):
        found = answer_of_status(raw)
        assert found is not None, f"HTTP {raw} is no error"
        return found
    return {"refused": Answer.REFUSED, "lost": Answer.LOST}[raw]


@pytest.mark.parametrize("row", PY_ROWS, ids=[r["id"] for r in PY_ROWS])
def test_every_row_of_the_shared_table(row: dict[str, Any]) -> None:
    advertised = row["lifetime"] == "advertised"
    sends_key = CommitPolicy(idempotency=row["key_mode"]).sends_keys(300.0 if advertised else None)
    assert ("sent" if sends_key else "none") == row["key"]
    covered = row.get("covered", True)  # the catalog de-duplicates this operation under the key
    facts = Facts(Kind(row["commit"]), answer(row["answer"]), row["earlier"],
                  deduplicated=sends_key and advertised and covered, can_retry=row["can_retry"])
    assert needs_reconciliation(facts) == row["reconcile"]
    assert decide(facts.with_landed(Landed(row["landed"]))) == Outcome(row["outcome"])


@pytest.mark.parametrize("row", TABLE["landed"], ids=[r["why"] for r in TABLE["landed"]])
def test_every_landed_row_of_the_shared_table(row: dict[str, Any]) -> None:
    inputs = {k: row[k] for k in ("create", "exists", "uuid_matches", "found", "expected", "requirements_hold")}
    assert landed_state(**inputs) == Landed(row["landed"])


def test_the_table_is_consistent_and_covers_every_case() -> None:
    assert len({r["id"] for r in ROWS}) == len(ROWS), "row ids are unique"
    for r in ROWS:
        assert r["why"] and r["reference"], r["id"]
        # A landed state is the result of a reconciliation: rows without one say not-checked.
        assert (r["landed"] != "not-checked") == r["reconcile"], r["id"]
        assert r["commit"] in TABLE["runtimes"], r["id"]
    assert {answer(r["answer"]) for r in PY_ROWS} == set(Answer)
    assert {Outcome(r["outcome"]) for r in PY_ROWS} == set(Outcome)
    assert {Kind(r["commit"]) for r in PY_ROWS} == set(Kind)
    assert len(PY_ROWS) >= 60 and len(ROWS) > len(PY_ROWS)  # the JVM-only rows: stage-create


def test_every_5xx_but_the_gateways_is_a_server_error() -> None:
    assert answer_of_status(501) is Answer.SERVER_ERROR and answer_of_status(505) is Answer.SERVER_ERROR
    assert answer_of_status(502) is Answer.GATEWAY and answer_of_status(418) is Answer.CLIENT_ERROR
    assert answer_of_status(302) is None


def test_docs_show_exactly_the_table() -> None:
    doc = ROOT.joinpath("docs", "commits.md").read_text()
    start, end = "<!-- commit-decisions.json: start -->\n", "<!-- commit-decisions.json: end -->"
    assert start in doc and end in doc, "docs/commits.md lost the markers around its decision table"
    shown = doc[doc.index(start) + len(start):doc.index(end)]
    assert shown == decision.markdown_table(), (
        "docs/commits.md's decision table is not resources/commit-decisions.json's: replace the lines between "
        "its markers with the output of `python -m pyspark_catalog_ext.commit.decision`")


def test_the_shim_jar_carries_the_same_table() -> None:
    from pyspark_catalog_ext.spark.jvm_deps import shim_build

    with zipfile.ZipFile(shim_build.shim_jar()) as jar:
        assert jar.read("io/catalogext/shim/commit-decisions.json") == decision.TABLE_PATH.read_bytes()
    json.loads(decision.TABLE_PATH.read_text())  # and it parses


# ---- the landed state as the guard reads it off real PyIceberg metadata


def _metadata(snapshot_ids: list[int], table_uuid: uuid.UUID | None = None):
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.refs import SnapshotRef, SnapshotRefType
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.table.sorting import SortOrder
    from pyiceberg.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), required=True))
    meta = new_table_metadata(schema, PartitionSpec(), SortOrder(), "s3://b/t", table_uuid=table_uuid)
    snapshots = [Snapshot(snapshot_id=sid, sequence_number=i + 1, timestamp_ms=1, manifest_list=f"s3://b/t/m{i}")
                 for i, sid in enumerate(snapshot_ids)]
    refs = {"main": SnapshotRef(snapshot_id=snapshot_ids[-1], snapshot_ref_type=SnapshotRefType.BRANCH)} if snapshot_ids else {}
    return meta.model_copy(update={"snapshots": snapshots, "refs": refs,
                                   "current_snapshot_id": snapshot_ids[-1] if snapshot_ids else None})


def _append(*snapshot_ids: int) -> tuple[tuple, tuple]:
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId

    updates = tuple(AddSnapshotUpdate(snapshot=Snapshot(snapshot_id=sid, sequence_number=1, timestamp_ms=1,
                                                          manifest_list="s3://b/t/x")) for sid in snapshot_ids)
    return (AssertRefSnapshotId(ref="main", snapshot_id=None),), updates


def test_partly_landed_commit_is_unknown_even_when_the_table_moved_on() -> None:
    """Landed row 'partly there': one of our two snapshots is on a table whose main moved (expired
    since?). Never 'failed': PyIceberg would delete the files of the snapshot that is there."""
    requirements, updates = _append(11, 12)
    assert own_commit_landed(_metadata([11]), requirements, updates) is Landed.UNKNOWN
    assert own_commit_landed(_metadata([11, 12]), requirements, updates) is Landed.YES
    assert own_commit_landed(_metadata([99]), requirements, updates) is Landed.NO  # another writer won
    assert own_commit_landed(_metadata([]), requirements, updates) is Landed.PENDING  # may still land
    assert own_commit_landed(None, requirements, updates) is Landed.NO  # dropped


def test_create_is_recognised_by_its_uuid() -> None:
    from pyiceberg.table.update import AssertCreate, AssignUUIDUpdate

    ours, theirs = uuid.uuid4(), uuid.uuid4()
    requirements, updates = (AssertCreate(),), (AssignUUIDUpdate(uuid=ours),)
    assert own_commit_landed(_metadata([], ours), requirements, updates) is Landed.YES
    assert own_commit_landed(_metadata([], theirs), requirements, updates) is Landed.NO
    assert own_commit_landed(None, requirements, updates) is Landed.PENDING
