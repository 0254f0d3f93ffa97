"""Event hooks: ordered structured events from staged tables and maintenance, sinks that never block
or fail a job (JSON lines, webhook with retries, callables), drops counted."""

from __future__ import annotations

import collections
import json
import time
import uuid

import pytest

import pyspark_catalog_ext as pce
from pyspark_catalog_ext import events
from pyspark_catalog_ext.errors import CatalogConflictError, CommitFailedError, ConfigError
from pyspark_catalog_ext.staging.staged import stage_create
from tests.conftest import SECRET
from tests.refresh_support import add_spark_catalog
from tests.servers.webhook_receiver import WebhookReceiver


@pytest.fixture
def collected():
    seen: list[events.Event] = []
    events.subscribe(seen.append)
    yield seen
    events.unsubscribe(seen.append)


def test_a_failing_callable_is_counted_and_never_raises(collected):
    def broken(event):
        if event.type == "test.ping":  # JVM events (earlier tests' refreshes, pulled by the bridge) pass
            raise RuntimeError("listener bug")

    events.subscribe(broken)
    before = events.stats()["errors"]
    try:
        event = events.emit("test.ping", table="lake.db.t", note="secret=hunter2")
    finally:
        events.unsubscribe(broken)
    assert events.stats()["errors"] == before + 1
    assert any(e is event for e in collected)  # later subscribers still get it
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
    assert all(a["seq"] < b["seq"] for a, b in zip(steps, steps[1:], strict=False))
    assert sink.stats()["sent"] == len(lines) and sink.stats()["dropped"] == 0


def test_json_lines_sink_stops_at_its_size_bound_and_counts_drops(tmp_path):
    path = tmp_path / "bounded.jsonl"
    sink = events.subscribe(events.JsonLinesSink(path, max_bytes=2_000))
    try:
        for i in range(100):
            events.emit("test.bound", table="lake.db.t", i=i)
        assert sink.flush()
    finally:
        events.unsubscribe(sink)
    size = path.stat().st_size
    assert 0 < size <= 2_000, size
    assert all(json.loads(line) for line in path.read_text().splitlines())  # only whole lines
    assert sink.stats()["dropped"] > 0 and sink.stats()["sent"] + sink.stats()["dropped"] >= 100


def test_json_lines_sink_refuses_a_bad_bound(tmp_path):
    with pytest.raises(events.ConfigError, match="max_bytes"):
        events.JsonLinesSink(tmp_path / "x.jsonl", max_bytes=0)


def test_webhook_follows_no_redirect_with_its_headers():
    # A 3xx would otherwise carry the event and the sink's headers (an API key, say) to wherever
    # the receiver points; it is a failure instead, counted and not retried.
    with WebhookReceiver() as trap, WebhookReceiver() as hook:
        hook.redirect_to = trap.url
        sink = events.subscribe(events.WebhookSink(hook.url, headers={"X-Api-Key": "k-SECRET"}, attempts=3))
        try:
            events.emit("test.redirect")
            assert sink.flush(20)
        finally:
            events.unsubscribe(sink)
        # Counted for this test's event only: a refresh still running from an earlier test may publish too.
        assert hook.attempted_types.count("test.redirect") == 1 and trap.attempts == 0 and not trap.received
        assert sink.stats()["sent"] == 0 and sink.stats()["failed"] == hook.attempts


def test_webhook_retries_then_delivers_and_a_slow_one_never_blocks():
    with WebhookReceiver() as hook:
        # Two refusals of our event, then accepted. By type: the JVM's events of earlier tests' tables
        # can reach the sink meanwhile (each emit pulls them first).
        hook.statuses_by_type["test.hook"] = collections.deque([503, 503])
        sink = events.subscribe(events.WebhookSink(hook.url, max_seconds=20))
        slow = None
        try:
            events.emit("test.hook", table="lake.db.t")
            deadline = time.monotonic() + 10
            while "test.hook" not in [b.get("type") for b in hook.received] and time.monotonic() < deadline:
                time.sleep(0.02)
            assert "test.hook" in [b.get("type") for b in hook.received]
            assert hook.attempted_types.count("test.hook") == 3

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
            if slow is not None:
                events.unsubscribe(slow)


def test_webhook_gives_up_after_its_attempts_and_counts_the_failure():
    with WebhookReceiver() as hook:
        hook.statuses.extend([500] * 100)
        sink = events.subscribe(events.WebhookSink(hook.url, attempts=3))
        try:
            events.emit("test.lost")
            assert sink.flush(20)
        finally:
            events.unsubscribe(sink)
        # Counted by type: JVM events of earlier tests' tables may reach the sink meanwhile.
        assert hook.attempted_types.count("test.lost") == 3 and sink.stats()["failed"] >= 1
        assert "test.lost" not in [body.get("type") for body in hook.received]


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
    mine = [e for e in collected if e.fields.get("table") in (name, other) and e.source == "python"]
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


def _wait_for(seen, predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(predicate(e) for e in list(seen)):
            return
        time.sleep(0.1)
    raise AssertionError("event did not arrive")


def test_ctas_refresh_commit_fault_and_maintenance_events_arrive_in_order(spark, lakehouse, tmp_path):
    """One stream, in the order things happened: the JVM's stage-create/commit events of a SQL
    CTAS, a credential refresh, a rejected commit (both layers), and a maintenance run with the
    commit it made. The JVM also writes its events to a JSON-lines file set by a catalog property."""
    jsonl = tmp_path / "jvm-events.jsonl"
    add_spark_catalog(spark, lakehouse, "evjvm", lakehouse.info.iceberg_uri)
    spark.conf.set("spark.sql.catalog.evjvm.catalog-ext.events.jsonl-path", str(jsonl))
    seen: list[events.Event] = []
    manager = pce.attach(spark, event_sinks=[seen.append])  # picks up evjvm too
    spark.sql("CREATE NAMESPACE IF NOT EXISTS evjvm.ev")
    ctas = f"evjvm.ev.ctas_{uuid.uuid4().hex[:8]}"
    other = f"evjvm.ev.race_{uuid.uuid4().hex[:8]}"
    policy_file = tmp_path / "policies.json"
    policy_file.write_text(json.dumps({"policies": [{
        "policy-type": "system.data-compaction", "name": "ev-compaction", "version": 2, "inheritable": True,
        "content": json.dumps({"version": "2025-02-03", "enable": True, "config": {"min-input-files": 2}}),
        "target": {"type": "namespace", "path": ["ev"]}}]}))
    try:
        spark.sql(f"CREATE TABLE {ctas} USING iceberg AS SELECT id FROM range(0, 40, 1, 2)")

        assert manager.refresh_now(ctas) >= 1
        _wait_for(seen, lambda e: e.type == "credential_refresh.finished" and e.fields["table"] == ctas)

        racing = stage_create(spark, other, "id BIGINT")
        racing.write(spark.range(1))
        spark.sql(f"CREATE TABLE {other} (id BIGINT) USING iceberg")
        with pytest.raises((CommitFailedError, CatalogConflictError)):
            racing.commit()

        report = pce.maintenance.run(spark, [ctas], policy_file=policy_file, state_file=tmp_path / "state.json",
                                     progress=lambda line: None)
        assert report.tables[0].status == "ok", report.tables[0].error
        events.emit("test.end")  # pulls whatever the JVM did last
    finally:
        events.unsubscribe(seen.append)
    assert spark.sparkContext._jvm.io.catalogext.shim.events.EventLog.flush(5000)

    mine = [e for e in seen if e.fields.get("table") in (ctas, other)]
    got = [(e.source, e.type, e.fields.get("outcome")) for e in mine]
    refreshes = [g for g in got if g[1].startswith("credential_refresh.")]
    assert refreshes and refreshes[:2] == [("jvm", "credential_refresh.started", None),
                                           ("jvm", "credential_refresh.finished", "refreshed")]
    assert all(g in (("jvm", "credential_refresh.started", None), ("jvm", "credential_refresh.finished", "refreshed"))
               for g in refreshes)
    first_refresh = got.index(refreshes[0])
    assert got[:first_refresh] == [
        ("jvm", "stage_create.started", None), ("jvm", "stage_create.finished", "staged"),
        ("jvm", "commit.started", None), ("jvm", "commit.finished", "committed")]
    rest = [g for g in got[first_refresh:] if not g[1].startswith("credential_refresh.")]
    assert rest == [
        ("python", "stage_create.started", None), ("jvm", "stage_create.started", None),
        ("jvm", "stage_create.finished", "staged"), ("python", "stage_create.finished", "staged"),
        ("python", "commit.started", None), ("jvm", "commit.started", None),
        ("jvm", "commit.finished", "rejected"), ("python", "commit.finished", "rejected"),
        ("python", "maintenance.action.started", None), ("jvm", "commit.started", None),
        ("jvm", "commit.finished", "committed"), ("python", "maintenance.action.finished", "ok")]
    assert [e.seq for e in seen] == sorted(e.seq for e in seen)

    # The documented fields.
    by = {(e.source, e.type, e.fields.get("outcome"), e.fields.get("table")): e.fields for e in mine}
    created = next(e.fields for e in mine if e.type == "commit.finished")  # the CTAS's
    assert created["create"] is True and len(created["snapshot_ids"]) == 1 and created["duration_s"] >= 0
    assert created["snapshot_id"] == created["snapshot_ids"][0] and created["uuid"]
    refresh = next(e.fields for e in mine if e.type == "credential_refresh.finished")
    assert refresh["strategy"] and refresh["expires_at"] > time.time() and refresh["next_refresh"] <= refresh["expires_at"]
    assert refresh["duration_s"] >= 0 and refresh["staged"] is False
    rejected = by[("jvm", "commit.finished", "rejected", other)]
    assert rejected["error_class"] == "AlreadyExistsException" and rejected["create"] is True  # Iceberg: 409 on a create
    compaction = [e.fields for e in mine if e.type == "commit.finished"][-1]
    assert compaction["create"] is False and compaction["snapshot_ids"] == [compaction["snapshot_id"]]
    action = by[("python", "maintenance.action.finished", "ok", ctas)]
    assert action["action"] == "rewrite_data_files" and action["snapshot_id"] == compaction["snapshot_id"]

    # The JVM's own file, written by configuration alone: its events, in order, no secret.
    text = jsonl.read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    jvm_mine = [(e["type"], e.get("outcome")) for e in lines if e.get("table") in (ctas, other)]
    assert jvm_mine == [(t, o) for s, t, o in got if s == "jvm"]
    assert all(a["seq"] < b["seq"] for a, b in zip(lines, lines[1:], strict=False))
    assert SECRET not in text and "secret-access-key" not in text and "session-token" not in text
    assert events.stats()["jvm"]["lost"] == 0


@pytest.mark.parametrize("url", ["ftp://hooks.example.com/x", "hooks.example.com/x", "https://user:pw@hooks.example.com/"])
def test_webhook_url_is_an_http_origin_or_a_one_line_error(url):
    """The sink's headers go to its URL's origin only: a URL without one is refused at once."""
    with pytest.raises(ConfigError) as err:
        events.WebhookSink(url)
    assert str(err.value).startswith("WebhookSink url: ") and "pw" not in str(err.value) and "\n" not in str(err.value)
