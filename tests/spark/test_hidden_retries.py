"""No hidden re-send of a commit and no redirect in the JVM, end to end.

A Spark CTAS and a `writeTo().create()` on the embedded lakehouse (real SeaweedFS), through the
shim's catalog behind a loopback gateway (`CatalogProxy`) that answers the table's commit:

* `503 + Retry-After` after forwarding it (the catalog applied it), then 401 / 403 / 404 to any
  copy sent again;
* `429 + Retry-After` after forwarding it, then 403;
* a 307 or 303 redirect (never forwarded).

Iceberg 1.10.2's HTTP client alone re-sends the POST on the 503/429 underneath the commit guard;
the guard then sees only the refusal, Iceberg's handler throws and its cleanup deletes the files
of the table the first copy published (the control test shows it). With the shim: the guard sees
every answer, and the user gets success or "commit state unknown", every file the table references
in S3, and a redirect is never followed.
"""

from __future__ import annotations

import uuid as uuidlib

import pytest

from pyspark_catalog_ext.errors import CatalogError, CatalogRedirectError, CommitStateUnknownError
from pyspark_catalog_ext.spark import java_errors
from pyspark_catalog_ext.spark.credentials import attach
from tests.helpers import add_spark_catalog
from tests.servers import CatalogProxy
from tests.spark.test_staging import s3_admin, s3_exists, table_files

ROWS = 200
NS = "hidden"
RETRY_AFTER = [("Retry-After", "1")]
# Only the commit: POST .../namespaces/hidden/tables/{t} (stage-create is POST .../tables).
COMMIT = r"/namespaces/{ns}/tables/{table}$"
ELSEWHERE = "/elsewhere"

# What the gateway answers to the commit's copies, in turn: (fault kind, status, headers).
SEQUENCES = {
    "503ra-then-401": [("after", 503, RETRY_AFTER), ("error", 401, [])],
    "503ra-then-403": [("after", 503, RETRY_AFTER), ("error", 403, [])],
    "503ra-then-404": [("after", 503, RETRY_AFTER), ("error", 404, [])],
    "429ra-then-403": [("after", 429, RETRY_AFTER), ("error", 403, [])],
    "307": [("redirect", 307, [])],
    "303": [("redirect", 303, [])],
}


@pytest.fixture(scope="module")
def gateway(spark, lakehouse):
    with CatalogProxy(lakehouse.info.iceberg_uri) as proxy:
        for name, shim in (("hr", True), ("hrbare", False)):
            add_spark_catalog(spark, lakehouse, name, proxy.url, shim=shim)
            spark.conf.set(f"spark.sql.catalog.{name}.cache-enabled", "false")
        spark.conf.set("spark.sql.catalog.hr.catalog-ext.commit.base-delay-ms", "100")
        attach(spark)
        java_errors.install()
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS hr.{NS}")
        yield proxy


def arm(proxy: CatalogProxy, table: str, sequence: str) -> None:
    path = COMMIT.format(ns=NS, table=table)
    for kind, status, headers in SEQUENCES[sequence]:
        proxy.faults.add(kind, "POST", path, status=status, headers=headers,
                         location=f"{proxy.url}{ELSEWHERE}/{table}" if kind == "redirect" else None)


def create(spark, how: str, name: str) -> None:
    if how == "ctas":
        spark.sql(f"CREATE TABLE {name} USING iceberg AS SELECT id, id * 3 AS v FROM range(0, {ROWS}, 1, 2)")
    else:
        spark.range(0, ROWS, 1, 2).selectExpr("id", "id * 3 AS v").writeTo(name).using("iceberg").create()


def missing_files(spark, lakehouse, name: str) -> list[str]:
    s3 = s3_admin(lakehouse)
    return [f for f in table_files(spark, name) if not s3_exists(s3, f)]


def elsewhere(proxy: CatalogProxy) -> list[str]:
    return [f"{e['method']} {e['path']}" for e in proxy.entries() if e["path"].startswith(ELSEWHERE)]


@pytest.mark.parametrize("how", ["ctas", "writeto"])
@pytest.mark.parametrize("sequence", list(SEQUENCES))
def test_commit_is_never_resent_underneath_the_guard(spark, lakehouse, gateway, sequence, how):
    table = f"{how}_{sequence.replace('-', '_')}_{uuidlib.uuid4().hex[:6]}"
    name = f"hr.{NS}.{table}"
    gateway.reset_counters()
    arm(gateway, table, sequence)
    text = ""
    try:
        create(spark, how, name)
        outcome = "success"
    except CommitStateUnknownError as exc:
        text = str(exc)
        assert "\n" not in text and "nothing was deleted" in text, text
        outcome = "unknown"
    finally:
        gateway.faults.clear()
    commits = gateway.count(kind="commit", table=f"{NS}.{table}")
    assert elsewhere(gateway) == [], "a redirect was followed"
    if sequence.startswith("503"):
        # The guard saw the 503 (maybe applied), loaded the table and found its own commit: one POST.
        assert (outcome, commits) == ("success", 1)
    elif sequence.startswith("429"):
        # The 429 is repeated by the guard, not underneath it; the 403 after it is reconciled.
        assert (outcome, commits) == ("success", 2)
    else:
        # Not followed, never repeated; not visible, so it may have been forwarded: files kept.
        assert (outcome, commits) == ("unknown", 1)
        assert f"redirect to {gateway.url}{ELSEWHERE}/{table}, not followed" in text, text
    if outcome == "success":
        assert spark.table(name).count() == ROWS
        assert spark.sql(f"SELECT count(*) FROM {name}.snapshots").first()[0] == 1
        assert missing_files(spark, lakehouse, name) == []
    else:
        assert not spark.catalog.tableExists(name)


def test_redirect_before_anything_is_written_is_one_line_naming_the_target(spark, gateway):
    """A stage-create answered 307: nothing to reconcile, one line naming where it pointed (not
    the token in its query), and nothing sent there."""
    table = f"stage307_{uuidlib.uuid4().hex[:6]}"
    gateway.faults.add("redirect", "POST", rf"/namespaces/{NS}/tables$", status=307,
                       location=f"{gateway.url}{ELSEWHERE}/{table}?token=s3cr3t")
    gateway.reset_counters()
    try:
        with pytest.raises(CatalogRedirectError) as err:  # the Python client's error for a 3xx too
            create(spark, "ctas", f"hr.{NS}.{table}")
    finally:
        gateway.faults.clear()
    text = str(err.value)
    assert "\n" not in text and "s3cr3t" not in text, text
    assert f"HTTP 307, a redirect to {gateway.url}{ELSEWHERE}/{table};" in text, text
    assert err.value.status == 307
    assert elsewhere(gateway) == []


def test_control_plain_iceberg_resends_and_deletes_the_published_files(spark, lakehouse, gateway):
    """Why: the same `503 + Retry-After`, then 403, through Iceberg alone. Its HTTP client re-sends
    the applied commit, Iceberg's handler throws ForbiddenException at the user and its cleanup
    deletes files the published table references."""
    table = f"bare_{uuidlib.uuid4().hex[:6]}"
    gateway.reset_counters()
    arm(gateway, table, "503ra-then-403")
    try:
        with pytest.raises(Exception) as err:  # noqa: B017 - PySpark's raw error, checked below
            create(spark, "writeto", f"hrbare.{NS}.{table}")
    finally:
        gateway.faults.clear()
    assert not isinstance(err.value, (CommitStateUnknownError, CatalogError))
    assert "ForbiddenException" in str(err.value), str(err.value)[:500]
    assert gateway.count(kind="commit", table=f"{NS}.{table}") == 2  # the hidden re-send
    name = f"hr.{NS}.{table}"
    assert spark.catalog.tableExists(name), "the first copy published the table"
    try:
        lost = missing_files(spark, lakehouse, name)
    except Exception as exc:  # noqa: BLE001 - a manifest itself is gone
        lost = [f"unreadable: {type(exc).__name__}"]
    assert lost, "Iceberg's cleanup should have deleted files of the published table"
