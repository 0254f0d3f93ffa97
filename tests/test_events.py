"""Event hooks: ordered structured events from staged tables and maintenance, sinks that never block
or fail a job (JSON lines, webhook with retries, callables), drops counted."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from pyspark_catalog_ext import events
from pyspark_catalog_ext.errors import CatalogConflictError, CommitFailedError
from pyspark_catalog_ext.staging import stage_create
from tests.conftest import SECRET
from tests.servers.webhook_receiver import WebhookReceiver


@pytest.fixture
def collected():
    seen: list[events.Event] = []
    events.subscribe(seen.append)
    yield seen
    events.unsubscribe(seen.append)


def test_a_failing_callable_is_counted_and_never_raises(collected):
    def broken(event):
        raise RuntimeError("listener bug")

    events.subscribe(broken)
    before = events.stats()["errors"]
    try:
        event = events.emit("test.ping", table="lake.db.t", note="secret=hunter2")
    finally:
        events.unsubscribe(broken)
    assert events.stats()["errors"] == before + 1
    assert collected[-1] is event  # later subscribers still get it
    assert "hunter2" not in event.to_json()  # string values pass the redactor


def test_json_lines_sink_writes_events_in_order(tmp_path):
    sink = events.subscribe(events.JsonLinesSink(tmp_path / "events.jsonl"))
    try:
        for i in range(50):
            events.emit("test.step", table="lake.db.t", i=i)
        assert sink.flush()
    finally:
        events.unsubscribe(sink)
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    steps = [line for line in lines if line["type"] == "test.step"]
    assert [s["i"] for s in steps] == list(range(50))
    assert all(a["seq"] < b["seq"] for a, b in zip(steps, steps[1:]))
    assert sink.stats()["sent"] == len(lines) and sink.stats()["dropped"] == 0


def test_webhook_retries_then_delivers_and_a_slow_one_never_blocks():
    with WebhookReceiver() as hook:
        hook.statuses.extend([503, 503])  # two refusals, then accepted
        sink = events.subscribe(events.WebhookSink(hook.url, max_seconds=20))
        try:
            events.emit("test.hook", table="lake.db.t")
            [body] = hook.wait_for(1)
            assert body["type"] == "test.hook" and hook.attempts == 3

            hook.delay_seconds = 2.0  # a stuck receiver: the queue (4) fills, the rest is dropped
            slow = events.subscribe(events.WebhookSink(hook.url, max_queue=4, timeout=5))
            started = time.monotonic()
            for i in range(20):
                events.emit("test.flood", i=i)
            assert time.monotonic() - started < 0.5, "emit waited for a sink"
            assert slow.stats()["dropped"] >= 20 - 4 - 1
            assert events.stats()["sinks"][repr(slow)]["dropped"] == slow.stats()["dropped"]
        finally:
            hook.delay_seconds = 0.0
            events.unsubscribe(sink)
            events.unsubscribe(slow)


def test_webhook_gives_up_after_its_attempts_and_counts_the_failure():
    with WebhookReceiver() as hook:
        hook.statuses.extend([500] * 10)
        sink = events.subscribe(events.WebhookSink(hook.url, attempts=3))
        try:
            events.emit("test.lost")
            assert sink.flush(20)
        finally:
            events.unsubscribe(sink)
        assert hook.attempts == 3 and sink.stats()["failed"] == 1 and not hook.received


def test_staged_create_and_commit_events_arrive_in_order(spark, collected, tmp_path):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.ev")
    sink = events.subscribe(events.JsonLinesSink(tmp_path / "events.jsonl"))
    name = f"lake.ev.t_{uuid.uuid4().hex[:8]}"
    try:
        with stage_create(spark, name, "id BIGINT") as staged:
            written = staged.write(spark.range(5))
        # a commit fault: someone else creates the name between our stage and our commit
        other = f"lake.ev.c_{uuid.uuid4().hex[:8]}"
        racing = stage_create(spark, other, "id BIGINT")
        racing.write(spark.range(1))
        spark.sql(f"CREATE TABLE {other} (id BIGINT) USING iceberg")
        with pytest.raises((CommitFailedError, CatalogConflictError)):
            racing.commit()
        assert sink.flush()
    finally:
        events.unsubscribe(sink)
    mine = [e for e in collected if e.fields.get("table") in (name, other)]
    assert [(e.type, e.fields.get("outcome")) for e in mine] == [
        ("stage_create.started", None), ("stage_create.finished", "staged"),
        ("commit.started", None), ("commit.finished", "committed"),
        ("stage_create.started", None), ("stage_create.finished", "staged"),
        ("commit.started", None), ("commit.finished", "rejected")]
    committed = mine[3].fields
    assert committed["snapshot_ids"] == [written.snapshot_id] and committed["duration_s"] >= 0
    assert committed["uuid"] == mine[1].fields["uuid"] and committed["location"].startswith("s3://")
    assert mine[-1].fields["error_class"] in ("CommitFailedError", "CatalogConflictError")
    text = (tmp_path / "events.jsonl").read_text()
    assert name in text and SECRET not in text and "session-token" not in text
