"""Vended credentials that outlive the job, with fast expiry: SeaweedFS vends 900 s credentials, and
two loopback proxies make them live LIFETIME seconds instead. The catalog proxy rewrites the expiry
it reports; the S3 proxy answers with SeaweedFS's own 403 once a key is older than that. Everything
else is real: Spark, the Iceberg runtime, the shim, SeaweedFS."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from secrets import token_urlsafe

import pytest
from py4j.protocol import Py4JJavaError

from pyspark_catalog_ext.errors import CredentialRefreshError
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.spark.credentials import attach
from tests.helpers import REST_ID_SCHEMA, expiring_proxies
from tests.refresh_support import add_spark_catalog, register_slow_udf, slow, statuses, table_status

LIFETIME = 10  # seconds the proxies let a credential live
FAST_POLICY = RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4)


@pytest.fixture(scope="module")
def fast_catalog(lakehouse):
    with expiring_proxies(lakehouse, LIFETIME) as proxies:  # keys age from the `fast` fixture on
        yield proxies.catalog


@pytest.fixture(scope="module")
def s3_proxy(fast_catalog):
    return fast_catalog.s3_proxy


@pytest.fixture(scope="module")
def fast(spark, lakehouse, fast_catalog, s3_proxy):
    """Spark catalogs `fast` (with the shim) and `plain` (Iceberg alone), both behind the proxies."""
    add_spark_catalog(spark, lakehouse, "fast", fast_catalog.url)
    add_spark_catalog(spark, lakehouse, "plain", fast_catalog.url, shim=False)
    register_slow_udf(spark)
    manager = attach(spark, policy=FAST_POLICY)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS fast.db")
    s3_proxy.max_age_seconds = LIFETIME
    yield manager
    s3_proxy.max_age_seconds = None
    manager.set_policy(RefreshPolicy())


def slow_ctas(spark, table: str, rows: int, tasks: int, ms_per_row: int):
    """CTAS through writeTo().create() (a staged table) whose tasks write a file per 1000 rows."""
    df = spark.range(0, rows, 1, tasks).where(slow(ms_per_row)).selectExpr("id", "id * 3 AS v")
    df.writeTo(table).tableProperty("write.target-file-size-bytes", "1").create()


def test_plain_iceberg_ctas_dies_when_credentials_expire(spark, fast, s3_proxy):
    """The bug itself, through the same proxies: without the shim the CTAS fails with a 403."""
    s3_proxy.reset_counters()
    with pytest.raises(Py4JJavaError) as err:
        slow_ctas(spark, "plain.db.doomed", rows=3000, tasks=1, ms_per_row=8)
    assert "403" in str(err.value) or "InvalidAccessKeyId" in str(err.value)
    assert s3_proxy.total_rejected > 0
    assert not spark.catalog.tableExists("fast.db.doomed")


def test_ctas_outlives_many_credential_lifetimes_by_restaging(spark, fast, fast_catalog, s3_proxy):
    s3_proxy.reset_counters()
    fast_catalog.reset_counters()
    started = time.monotonic()
    slow_ctas(spark, "fast.db.long_ctas", rows=12000, tasks=2, ms_per_row=5)  # ~30 s per task
    elapsed = time.monotonic() - started

    assert spark.table("fast.db.long_ctas").count() == 12000
    assert spark.sql("SELECT sum(v) FROM fast.db.long_ctas").first()[0] == 3 * sum(range(12000))
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
    restages = fast_catalog.count(kind="stage-create", table="db.long_ctas") - 1
    cycles = elapsed / (LIFETIME * (1 - FAST_POLICY.lifetime_fraction))
    assert restages >= 2, "the job should have needed several refreshes"
    # One catalog request per refresh, however many tasks and S3 clients asked.
    assert restages <= math.ceil(cycles) + 1, (restages, cycles)
    staged = [s for s in statuses(fast, "fast.db.long_ctas") if s.refreshes_by_strategy.get("re-stage")]
    assert len(staged) == 1 and staged[0].failure_count == 0
    assert staged[0].refreshes_by_strategy["re-stage"] == restages
    assert len(s3_proxy.forwarded_by_key) >= 3  # the writes really used several credentials


def test_long_read_and_dml_on_committed_table_outlive_credentials(spark, fast, fast_catalog, s3_proxy):
    spark.range(0, 12000, 1, 12).selectExpr("id", "id % 7 AS k").writeTo("fast.db.events").create()
    s3_proxy.reset_counters()

    # One task reads 12 files one after another for ~24 s: most are opened after the first
    # credentials died.
    assert spark.table("fast.db.events").where(slow(2)).count() == 12000

    spark.sql("DELETE FROM fast.db.events WHERE k = 0 AND slow_true(1)")
    remaining = 12000 - len([i for i in range(12000) if i % 7 == 0])
    assert spark.table("fast.db.events").count() == remaining

    spark.sql(f"INSERT INTO fast.db.events SELECT id + 100000, 9 FROM range(0, 3000, 1, 1) WHERE {slow(5)}")
    spark.sql(
        """MERGE INTO fast.db.events t
            USING (SELECT id, 8 AS k FROM range(0, 4000, 1, 1) WHERE slow_true(4)) s
            ON t.id = s.id
            WHEN MATCHED THEN UPDATE SET k = s.k
            WHEN NOT MATCHED THEN INSERT (id, k) VALUES (s.id, s.k)"""
    )
    reinserted = len([i for i in range(4000) if i % 7 == 0])  # deleted above, NOT MATCHED now
    assert spark.table("fast.db.events").count() == remaining + 3000 + reinserted
    assert spark.table("fast.db.events").where("k = 8").count() == 4000
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
    refreshed = [s for s in statuses(fast, "fast.db.events") if s.refresh_count > 0]
    assert refreshed, "the committed table's credentials were never refreshed"
    assert {s.strategy.split(" ")[0] for s in refreshed} <= {"reload", "credentials-endpoint"}


def test_refresh_survives_catalog_503_while_credentials_are_valid(spark, fast, fast_catalog, s3_proxy):
    s3_proxy.reset_counters()
    fast_catalog.faults.clear()

    def fail_refreshes_soon():
        time.sleep(3)  # after the initial stage-create: the next two re-stages get a 503
        fast_catalog.faults.add("error", "POST", r"/namespaces/db/tables$", times=2, status=503)

    threading.Thread(target=fail_refreshes_soon, daemon=True).start()
    slow_ctas(spark, "fast.db.flaky", rows=4000, tasks=2, ms_per_row=10)  # ~20 s
    assert spark.table("fast.db.flaky").count() == 4000
    assert s3_proxy.total_rejected == 0
    status = table_status(fast, "fast.db.flaky")
    assert status.failure_count >= 1 or fast_catalog.faults.pending == 0


def test_expiry_with_no_refresh_possible_fails_clearly_and_commits_nothing(spark, fast, fast_catalog, s3_proxy):
    fast_catalog.faults.clear()

    def break_catalog_soon():
        time.sleep(2)
        fast_catalog.faults.add("error", "POST", r"/namespaces/db/tables$", times=1000, status=503)

    threading.Thread(target=break_catalog_soon, daemon=True).start()
    try:
        with pytest.raises(CredentialRefreshError) as err:  # spark_errors: one line, Java error as cause
            slow_ctas(spark, "fast.db.abandoned", rows=3000, tasks=1, ms_per_row=10)  # ~30 s > lifetime
    finally:
        fast_catalog.faults.clear()
    message = str(err.value)
    assert "\n" not in message and isinstance(err.value.__cause__, Py4JJavaError)
    assert not [s for s in fast_catalog.secrets_handed_out if s in message]
    assert "Storage credentials for table fast.db.abandoned expired" in message
    assert "re-stage" in message
    assert not spark.catalog.tableExists("fast.db.abandoned")


def test_executors_in_other_jvms_get_credentials_from_the_driver(lakehouse, fast_catalog, s3_proxy, fast, tmp_path):
    """local-cluster: two executor JVMs under spark.authenticate and network encryption. They ask the
    driver through Spark's plugin RPC, and the catalog sees one request per refresh for the table,
    not one per executor or task. Then a refresh that fails on the driver fails their tasks clearly.
    The same run checks that no secret reaches a log, the Spark UI or the event log."""
    fast_catalog.reset_counters()
    s3_proxy.reset_counters()
    fast_catalog.secrets_handed_out.clear()
    (tmp_path / "events").mkdir()
    args = {"uri": fast_catalog.url, "warehouse": lakehouse.info.warehouse,
            "credential": lakehouse.info.credential, "table": "fast.db.cluster_ctas",
            "rows": 8000, "ms_per_row": 10,  # 4 tasks of 2000 rows: ~20 s each on 2 executors
            "event_log_dir": (tmp_path / "events").as_uri()}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1].joinpath("jobs", "multi_jvm_job.py")), json.dumps(args)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
                               "CATALOG_EXT_TEST_AUTH_SECRET": token_urlsafe(24)})
    elapsed = time.monotonic() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[0][len("RESULT "):])

    assert result["auto_attached"], "configure() alone did not start credential refresh"
    assert result["executors"] == 2
    assert result["count"] == 8000
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
    assert result["rpc_encrypted"] == "true"
    assert result["plugin"]["served"] > 0, "executors never asked the driver"
    assert result["plugin"]["refused"] == 0
    entry = [s for s in result["status"] if s["name"] == "fast.db.cluster_ctas" and s["by_strategy"].get("re-stage")]
    assert len(entry) == 1 and entry[0]["failures"] == 0
    restages = fast_catalog.count(kind="stage-create", table="db.cluster_ctas") - 1
    assert restages == entry[0]["by_strategy"]["re-stage"]
    assert 1 <= restages <= math.ceil(elapsed / (LIFETIME * (1 - FAST_POLICY.lifetime_fraction))) + 1

    # A refresh that fails on the driver fails the executors' tasks with the README's error, which
    # carries the driver's error (never its stale keys taken as new), after bounded waits.
    fails = result["refresh_fails"]
    assert fails["error"] is not None, fails
    assert "Storage credentials for table dead.db.cluster_ctas expired" in fails["error"], fails["error"][-3000:]
    assert "the driver's refresh failed" in fails["error"] and "refuses every request" in fails["error"]
    assert fails["seconds"] < 120, fails["seconds"]

    # Secrets: every key, session token and OAuth token the catalog handed out, and the client secret.
    secrets = set(fast_catalog.secrets_handed_out) | {lakehouse.info.secret_key}
    assert len(secrets) > 5
    places = {"driver and Python logs": proc.stdout + proc.stderr,
              "Spark UI environment page": result["environment_page"]}
    executor_logs = Path(result["work_dir"])  # local-cluster's worker dir, left for this read
    try:
        for path in list((tmp_path / "events").rglob("*")) + list(executor_logs.rglob("std*")):
            if path.is_file():
                places[str(path)] = path.read_text(errors="replace")
    finally:
        shutil.rmtree(executor_logs, ignore_errors=True)
    assert any("catalog-ext: refreshed storage credentials" in text for text in places.values())
    assert any("stderr" in name for name in places), "executor logs were not found"
    for name, text in places.items():
        leaked = [s[:4] + "..." for s in secrets if s in text]
        assert not leaked, f"secrets {leaked} found in {name}"


@pytest.fixture(scope="module")
def token_catalog(spark, lakehouse, s3_proxy, fast):
    """A catalog that implements the storage-refresh-token proposal (spec PR 15280), as spark `tokens`."""
    with expiring_proxies(lakehouse, LIFETIME, s3_proxy=s3_proxy, refresh_tokens=True) as (proxy, _):
        add_spark_catalog(spark, lakehouse, "tokens", proxy.url)
        attach(spark)  # picks up the new catalog
        spark.sql("CREATE NAMESPACE IF NOT EXISTS tokens.db")
        yield proxy


def test_staged_ctas_refreshes_through_storage_refresh_token(spark, token_catalog, s3_proxy, fast):
    token_catalog.reset_counters()
    s3_proxy.reset_counters()
    slow_ctas(spark, "tokens.db.token_ctas", rows=8000, tasks=2, ms_per_row=5)  # ~20 s per task

    assert spark.table("tokens.db.token_ctas").count() == 8000
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
    # Refreshed through GET .../credentials?storageRefreshToken=, never by re-staging.
    assert token_catalog.count(kind="stage-create", table="db.token_ctas") == 1
    refreshes = token_catalog.count(kind="credentials", table="db.token_ctas")
    assert refreshes >= 2
    entry = [s for s in statuses(fast, "tokens.db.token_ctas") if s.refreshes_by_strategy.get("storage-refresh-token")]
    assert len(entry) == 1 and entry[0].refreshes_by_strategy["storage-refresh-token"] == refreshes


def test_expired_refresh_token_falls_back_to_restaging(spark, token_catalog, s3_proxy, fast):
    token_catalog.token_ttl_seconds = 1  # tokens die before the first refresh is due
    try:
        s3_proxy.reset_counters()
        slow_ctas(spark, "tokens.db.fallback_ctas", rows=4000, tasks=1, ms_per_row=5)  # ~20 s
    finally:
        token_catalog.token_ttl_seconds = 3600
    assert spark.table("tokens.db.fallback_ctas").count() == 4000
    assert s3_proxy.total_rejected == 0
    entry = [s for s in statuses(fast, "tokens.db.fallback_ctas") if s.refreshes_by_strategy.get("re-stage")]
    assert entry and entry[0].failure_count == 0


def test_refresh_token_errors_are_one_line_and_secret_free(spark, token_catalog, lakehouse, fast):
    """A bad or expired token gets a one-line error naming the problem; the token never shows."""
    from pyspark_catalog_ext.errors import CatalogAuthError, CatalogError
    from tests.helpers import catalog_client

    client = catalog_client(lakehouse, token_catalog.url)
    client.make_namespace("tokdb") if not client.has_namespace("tokdb") else None
    body = {"name": "tok", "schema": REST_ID_SCHEMA}
    staged = client.create_table_json("tokdb", body, stage_create=True)
    credential = staged["storage-credentials"][0]
    token = credential["storage-refresh-token"]

    answer = client.load_credentials_json(("tokdb", "tok"), storage_refresh_token=token)  # a good token works
    assert answer["storage-credentials"][0]["config"]["s3.access-key-id"]

    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(CatalogAuthError) as bad:
        client.load_credentials_json(("tokdb", "tok"), storage_refresh_token=tampered)
    token_catalog.token_ttl_seconds = 0
    try:
        expiring = client.create_table_json("tokdb", body, stage_create=True)["storage-credentials"][0]
        time.sleep(1.1)
        with pytest.raises(CatalogAuthError) as expired:
            client.load_credentials_json(("tokdb", "tok"), storage_refresh_token=expiring["storage-refresh-token"])
    finally:
        token_catalog.token_ttl_seconds = 3600
    with pytest.raises(CatalogError) as both:
        client.call("GET", "/v1/{prefix}/namespaces/tokdb/tables/tok/credentials",
                    params={"storageRefreshToken": token, "planId": "plan-1"})

    for err, needle in ((bad, "401"), (expired, "expired"), (both, "400")):
        message = str(err.value)
        assert "\n" not in message and needle in message, message
        assert token not in message and tampered not in message and lakehouse.info.secret_key not in message


def test_reprs_and_status_hold_no_secrets(fast, fast_catalog, lakehouse):
    from pyspark_catalog_ext.refresh import StorageCredentials

    creds = StorageCredentials("AKIAEXAMPLEKEY1", "example-secret-key-1", "example-session-token-1")
    text = repr(creds) + repr(fast) + repr(fast.status()) + repr(lakehouse.info)
    for secret in ["AKIAEXAMPLEKEY1", "example-secret-key-1", "example-session-token-1", lakehouse.info.secret_key,
                   *fast_catalog.secrets_handed_out]:
        assert secret not in text


def test_replace_as_select_and_create_or_replace_outlive_credentials(spark, fast, s3_proxy):
    spark.range(0, 100).writeTo("fast.db.replaced").create()
    s3_proxy.reset_counters()
    spark.sql(
        "REPLACE TABLE fast.db.replaced USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1') "
        f"AS SELECT id, id * 5 AS v FROM range(0, 3000, 1, 1) WHERE {slow(5)}"  # ~15 s: over a lifetime
    )
    assert spark.table("fast.db.replaced").count() == 3000
    (spark.range(0, 2500, 1, 1).where(slow(6)).selectExpr("id", "'x' AS tag")
     .writeTo("fast.db.replaced").tableProperty("write.target-file-size-bytes", "1").createOrReplace())
    assert spark.table("fast.db.replaced").columns == ["id", "tag"]
    assert spark.table("fast.db.replaced").count() == 2500
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected


def test_user_python_source_serves_a_catalog_that_vends_nothing(spark, lakehouse, fast):
    """(e): a Python source of the user's supplies the credentials (here the lakehouse's admin keys,
    declared to expire every 6 s) for a catalog asked for no vended credentials."""
    import datetime as dt

    from pyspark_catalog_ext.refresh import FunctionSource, StorageCredentials

    add_spark_catalog(spark, lakehouse, "mine", lakehouse.info.iceberg_uri)
    spark.conf.unset("spark.sql.catalog.mine.header.X-Iceberg-Access-Delegation")
    spark.conf.set("spark.sql.catalog.mine.s3.endpoint", lakehouse.info.s3_endpoint)
    spark.conf.set("spark.sql.catalog.mine.s3.path-style-access", "true")
    calls: list[str] = []

    def admin_keys(table):
        calls.append(table.name)
        expires = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=6)
        return StorageCredentials(lakehouse.info.access_key, lakehouse.info.secret_key, expires_at=expires)

    attach(spark, sources={"mine": FunctionSource(admin_keys)})
    spark.sql("CREATE NAMESPACE IF NOT EXISTS mine.db")
    slow_ctas(spark, "mine.db.user_source", rows=2000, tasks=1, ms_per_row=8)  # ~16 s
    assert spark.table("mine.db.user_source").count() == 2000
    assert calls.count("mine.db.user_source") >= 2
    entry = [s for s in statuses(fast, "mine.db.user_source") if s.refreshes_by_strategy.get("user-source:FunctionSource")]
    assert entry and entry[0].failure_count == 0


def test_hand_outs_of_one_table_share_one_entry(spark, fast, fast_catalog, s3_proxy):
    """A table handed out several times (its CTAS, then loads) has one entry: when it is due, the
    catalog is asked once, whatever the number of hand-outs."""
    lifetime = 30  # long enough that nothing is due while the hand-outs are made, even on a slow machine
    fast.set_policy(RefreshPolicy(check_interval_s=3600, min_ahead_s=0, lifetime_fraction=0.4))  # hold the scheduler
    fast_catalog.short_lifetime_seconds = s3_proxy.max_age_seconds = lifetime
    try:
        fast_catalog.reset_counters()
        spark.range(0, 300, 1, 3).writeTo("fast.db.shared").create()
        assert spark.table("fast.db.shared").count() == 300  # a load: a second hand-out
        spark.catalog.refreshTable("fast.db.shared")
        assert spark.table("fast.db.shared").count() == 300  # and a third
        entries = [e for e in fast._shim.registry_entries() if e.table == "shared"]
        assert len(entries) == 1 and entries[0].refresh_count == 0, entries

        time.sleep(lifetime * (1 - FAST_POLICY.lifetime_fraction) + 1)  # due now
        assert fast.refresh_now("fast.db.shared") == 1
    finally:
        fast.set_policy(FAST_POLICY)
        fast_catalog.short_lifetime_seconds = s3_proxy.max_age_seconds = LIFETIME
    status = table_status(fast, "fast.db.shared")
    assert status.refreshes_by_strategy == {"reload": 1}, status
    # Spark's own loads: the existence check before create() (a 404) and the two hand-outs.
    assert fast_catalog.count(kind="load", table="db.shared") == 3 + 1, status
    # plus, the first time in a catalog, one GET .../credentials that 404s and is remembered
    assert fast_catalog.count(kind="credentials", table="db.shared") <= 1
