"""Keys that die early: S3 rejects keys before the catalog's stated expiry (after a fixed share of
it, at random, or where the catalog states no lifetime). The S3 client the shim builds marks the
table's keys stale, the driver refreshes once per rejection wave and the rejected call is sent
again inside the SDK call: exact rows, no failed task (local mode fails a job on its first failed
task). Keys a refresh hands back dead end in one line; a scope AccessDenied is never retried.
The same on 4 executor JVMs: tests/slow/test_early_rejection_cluster.py.
Everything but the two loopback proxies is real: Spark, the Iceberg runtime, the shim, SeaweedFS."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError

from pyspark_catalog_ext.errors import CredentialsRejectedError
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.spark.credentials import attach
from tests.helpers import untrack_tables
from tests.refresh_support import add_spark_catalog, slow
from tests.servers import CatalogProxy, S3ExpiryProxy

LIFETIME = 10  # seconds the catalog proxy states for every key
POLICY = RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4)  # renews at 6 s


@contextmanager
def early_catalog(spark: Any, lakehouse: Any, name: str, policy: RefreshPolicy = POLICY) -> Iterator[tuple[Any, Any, Any]]:
    """Spark catalog `name` behind its own S3 and catalog proxies (nothing dies until a test says so)."""
    info = lakehouse.info
    with S3ExpiryProxy(info.s3_endpoint, exempt=(info.access_key,)) as s3, \
            CatalogProxy(info.iceberg_uri, short_lifetime_seconds=LIFETIME, s3_endpoint=s3.url, s3_proxy=s3) as catalog:
        add_spark_catalog(spark, lakehouse, name, catalog.url)
        manager = attach(spark)
        manager.set_policy(policy, catalogs=[name])
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}.db")
        try:
            yield s3, catalog, manager
        finally:
            # The proxies close with this block (the leak sweep's attacker once got a renewal of
            # early_scope_src, with this catalog's token, at a port one of them had held).
            assert not untrack_tables(spark, name)


def source_table(spark: Any, table: str, files: int = 12, rows_per_file: int = 500) -> None:
    """A committed table of `files` data files, read one after another by a single task."""
    (spark.range(0, files * rows_per_file, 1, files).selectExpr("id", "id % 7 AS k")
     .writeTo(table).create())


def entries(manager: Any, catalog: str) -> list[dict[str, Any]]:
    """The driver registry's raw entries of one catalog (no secrets)."""
    return [e for e in json.loads(manager._shim._api.registryEntries()) if e["catalog"] == catalog]


def rejection_report(s3: Any, catalog_entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Waves (distinct keys S3 rejected), reactive refreshes, catalog requests and retry waits."""
    return {"waves": len(s3.rejected), "rejected_requests": s3.total_rejected,
            "reactive_refreshes": sum(e["rejection_count"] for e in catalog_entries),
            "refreshes": sum(e["refresh_count"] for e in catalog_entries),
            "retried_calls": sum(e["retried_calls"] for e in catalog_entries),
            "max_retry_wait_ms": max((e["max_retry_wait_ms"] for e in catalog_entries), default=0)}


def check_one_refresh_per_wave(report: dict[str, Any]) -> None:
    assert report["rejected_requests"] > 0, f"no key died early: the test proves nothing {report}"
    # Each rejected key started at most one catalog request, whatever the number of calls it failed.
    assert 1 <= report["reactive_refreshes"] <= report["waves"], report
    assert report["retried_calls"] >= 1, report


def test_sql_ctas_survives_keys_dying_at_a_fixed_share_of_their_lifetime(spark, lakehouse):
    with early_catalog(spark, lakehouse, "early_share") as (s3, catalog, manager):
        source_table(spark, "early_share.db.early_share_src")
        s3.max_age_seconds = 0.3 * LIFETIME  # die at 3 s; the schedule renews at 6 s
        s3.reset_counters()
        catalog.reset_counters()
        spark.sql("CREATE TABLE early_share.db.early_share_copy USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1') "
                  f"AS SELECT id, k * 3 AS v FROM early_share.db.early_share_src WHERE {slow(3)}")  # ~18 s, one task
        assert spark.table("early_share.db.early_share_copy").count() == 6000
        assert spark.sql("SELECT sum(v) FROM early_share.db.early_share_copy").first()[0] == 3 * sum(i % 7 for i in range(6000))
        report = rejection_report(s3, entries(manager, "early_share"))
        print("fixed share:", report)
        check_one_refresh_per_wave(report)
        # Learned: keys die at ~3 s, so later ones are renewed before that; the waves stop early.
        assert report["waves"] <= 5, report
        stages = catalog.count(kind="stage-create", table="db.early_share_copy")
        staged = [e for e in entries(manager, "early_share") if e["table"] == "early_share_copy" and e["strategy_counts"].get("re-stage")]
        assert len(staged) == 1 and staged[0]["strategy_counts"]["re-stage"] == stages - 1  # one request per refresh


def test_write_to_create_survives_keys_dying_at_random(spark, lakehouse):
    with early_catalog(spark, lakehouse, "early_random") as (s3, _catalog, manager):
        source_table(spark, "early_random.db.early_random_src")
        s3.random_death, s3.random_seed = (0.3 * LIFETIME, 0.55 * LIFETIME), 29
        s3.reset_counters()
        (spark.table("early_random.db.early_random_src").where(slow(3)).selectExpr("id", "k")
         .writeTo("early_random.db.early_random_copy").tableProperty("write.target-file-size-bytes", "1").create())
        assert spark.table("early_random.db.early_random_copy").count() == 6000
        assert spark.table("early_random.db.early_random_copy").where("k = 3").count() == len([i for i in range(6000) if i % 7 == 3])
        report = rejection_report(s3, entries(manager, "early_random"))
        print("random:", report)
        check_one_refresh_per_wave(report)


def test_long_read_survives_keys_without_a_stated_lifetime(spark, lakehouse):
    """The catalog states no lifetime and the assumed one (60 s) is too long: keys die at 4 s."""
    policy = RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4, assumed_lifetime_s=60)
    with early_catalog(spark, lakehouse, "early_nolife", policy) as (s3, catalog, manager):
        catalog.state_lifetime = False
        source_table(spark, "early_nolife.db.early_nolife_src")
        s3.max_age_seconds = 4
        s3.reset_counters()
        assert spark.table("early_nolife.db.early_nolife_src").where(slow(3)).count() == 6000  # ~18 s, 12 files
        report = rejection_report(s3, entries(manager, "early_nolife"))
        print("no stated lifetime:", report)
        check_one_refresh_per_wave(report)
        assert report["waves"] <= 3, report  # then renewed by the learned lifetime


def test_keys_that_are_dead_when_refreshed_end_in_one_line_in_bounded_time(spark, lakehouse):
    with early_catalog(spark, lakehouse, "early_dead") as (s3, catalog, manager):
        source_table(spark, "early_dead.db.early_dead_src", files=2)
        catalog.reset_counters()
        s3.every_key_dead = True
        started = time.monotonic()
        with pytest.raises(CredentialsRejectedError) as err:
            spark.table("early_dead.db.early_dead_src").where(slow(1)).count()
        elapsed = time.monotonic() - started
        message = str(err.value)
        print("dead keys:", round(elapsed, 1), "s;", message)
        assert "\n" not in message and isinstance(err.value.__cause__, Py4JJavaError)
        assert message.startswith("S3 rejected the storage credentials of table early_dead.db.early_dead_src again"), message
        assert "stated lifetime " in message and ", observed " in message, message
        assert message.endswith("catalog-ext.refresh.max-clock-skew-ms"), message  # the whole line, not cut
        assert not [s for s in catalog.secrets_handed_out if s in message]
        assert elapsed < 30, elapsed
        refreshes = catalog.count(kind="load", table="db.early_dead_src") + catalog.count(kind="credentials", table="db.early_dead_src")
        assert refreshes <= 4, refreshes  # Spark's load, then one refresh (and a 404'd /credentials)


def test_a_scope_access_denied_is_never_retried(spark, lakehouse):
    with early_catalog(spark, lakehouse, "early_scope") as (s3, catalog, manager):
        source_table(spark, "early_scope.db.early_scope_src", files=2)
        spark.table("early_scope.db.early_scope_src").count()  # the table's keys work
        before = rejection_report(s3, entries(manager, "early_scope"))
        catalog.reset_counters()
        s3.deny_paths = r"/db/early_scope_src[^/]*/data/"  # AccessDenied for the data files: a scope error
        with pytest.raises(Py4JJavaError) as err:
            spark.table("early_scope.db.early_scope_src").where("id >= 0").collect()
        assert "AccessDenied" in str(err.value) or "403" in str(err.value)
        assert not isinstance(err.value, CredentialsRejectedError)
        after = rejection_report(s3, entries(manager, "early_scope"))
        assert after["reactive_refreshes"] == before["reactive_refreshes"] == 0
        assert after["refreshes"] == before["refreshes"]
        assert catalog.count(kind="credentials") == 0 and catalog.count(kind="stage-create") == 0
        assert 1 <= s3.denied <= 4, s3.denied  # the task's own S3 attempts, no refresh-and-retry
