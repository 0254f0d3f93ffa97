"""Change notifications to a mirror catalog (Polaris's notifications API on the reference server),
driven by the commit events of real staged tables on SeaweedFS."""

from __future__ import annotations

import time
import uuid

import pytest

from pyspark_catalog_ext import events
from pyspark_catalog_ext.governance.notifications import NotificationSink
from pyspark_catalog_ext.staging.staged import stage_create, stage_replace
from tests.servers import PolicyServer


@pytest.fixture(scope="module")
def mirror(lakehouse):
    with PolicyServer(lakehouse.info.iceberg_uri) as server:
        yield server


@pytest.fixture
def sink(spark, lakehouse, mirror):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.nt")
    props = {"uri": mirror.url, "warehouse": lakehouse.info.warehouse, "credential": lakehouse.info.credential,
             "oauth2-server-uri": f"{mirror.url}/v1/oauth/tokens", "scope": "catalog"}
    created = NotificationSink.from_spark(spark, "lake", props, clock=lambda: 1_700_000_000.0)  # a clock that stands still
    events.subscribe(created)
    outcomes: list[events.Event] = []
    listener = events.subscribe(lambda e: outcomes.append(e) if e.type == "notification.finished" else None)
    created.outcomes = outcomes
    yield created
    events.unsubscribe(listener)
    events.unsubscribe(created)


def wait(sink, n, timeout=20.0):
    deadline = time.monotonic() + timeout
    while len(sink.outcomes) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return [(e.fields["notification_type"], e.fields["outcome"]) for e in sink.outcomes]


def test_validate_then_create_then_update_with_increasing_timestamps(spark, sink, mirror):
    name = f"t_{uuid.uuid4().hex[:8]}"
    with stage_create(spark, f"lake.nt.{name}", "id BIGINT") as staged:
        staged.write(spark.range(3))
    replace = stage_replace(spark, f"lake.nt.{name}", "id BIGINT, note STRING", expected_uuid=staged.uuid)
    replace.write(spark.sql("SELECT id, 'x' AS note FROM range(2)"))
    replace.commit()
    spark.sql(f"INSERT INTO lake.nt.{name} VALUES (7, 'sql')")  # any commit path, not only the helpers
    assert wait(sink, 4) == [("VALIDATE", "sent"), ("CREATE", "sent"), ("UPDATE", "sent"), ("UPDATE", "sent")]
    sent = [n for n in mirror.notifications if n["table"] == f"nt.{name}"]
    assert [n["type"] for n in sent] == ["VALIDATE", "CREATE", "UPDATE", "UPDATE"]
    stamps = [n["timestamp"] for n in sent]
    assert stamps == sorted(set(stamps)) and stamps[0] == 1_700_000_000_000  # strictly increasing, clock frozen
    payload = mirror.mirrored[f"nt.{name}"]
    assert payload["table-name"] == name and payload["table-uuid"] == staged.uuid
    assert payload["metadata-location"].startswith(staged.location) and payload["metadata-location"].endswith(".metadata.json")
    assert [f["name"] for f in payload["metadata"]["schemas"][-1]["fields"]] == ["id", "note"]
    assert payload["metadata"]["current-snapshot-id"] == spark.sql(
        f"SELECT snapshot_id FROM lake.nt.{name}.snapshots ORDER BY committed_at DESC LIMIT 1").first()[0]


def test_stale_timestamp_is_reported_not_retried_and_the_job_goes_on(spark, sink, mirror):
    name = f"t_{uuid.uuid4().hex[:8]}"
    with stage_create(spark, f"lake.nt.{name}", "id BIGINT") as staged:
        staged.write(spark.range(1))
    assert wait(sink, 2) == [("VALIDATE", "sent"), ("CREATE", "sent")]
    # another source admitted a far newer notification for the same table
    with mirror._lock:
        mirror._admitted_ts[f"nt.{name}"] = 9_999_999_999_999
    replace = stage_replace(spark, f"lake.nt.{name}", "id BIGINT", expected_uuid=staged.uuid)
    replace.write(spark.range(5))
    replace.commit()  # the job itself succeeds
    assert wait(sink, 3)[-1] == ("UPDATE", "stale")
    assert sink.outcomes[-1].fields["status"] == 409
    assert [n["status"] for n in mirror.notifications if n["table"] == f"nt.{name}"] == [204, 204, 409]  # one try
    assert spark.table(f"lake.nt.{name}").count() == 5


def test_a_failed_validate_stops_that_tables_notifications(spark, sink, mirror):
    mirror.allowed_locations = ("s3://somewhere-else/",)
    try:
        name = f"t_{uuid.uuid4().hex[:8]}"
        with stage_create(spark, f"lake.nt.{name}", "id BIGINT") as staged:
            staged.write(spark.range(1))
        assert wait(sink, 1) == [("VALIDATE", "failed")]
        assert sink.flush()
        time.sleep(0.3)
        assert [n["type"] for n in mirror.notifications if n["table"] == f"nt.{name}"] == ["VALIDATE"]
        assert spark.table(f"lake.nt.{name}").count() == 1
    finally:
        mirror.allowed_locations = ("s3://",)
