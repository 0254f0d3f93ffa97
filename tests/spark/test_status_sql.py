"""SQL function catalog_ext_status() (the shim's spark.sql.extensions entry) on the default Spark 4.1
session: it answers what attach() reads through Py4J, so a client without Py4J (Spark Connect,
tests/slow/test_spark_connect.py) sees the same refresh state and commit outcomes."""

from __future__ import annotations

import json
import uuid

import pytest

from pyspark_catalog_ext.spark.credentials import attach, status_by_table
from pyspark_catalog_ext.spark.shim_api import ShimStatus


def _sql_status(spark) -> ShimStatus:
    return ShimStatus.from_json(json.loads(spark.sql("SELECT catalog_ext_status() AS s").collect()[0]["s"]))


def test_status_sql_reports_the_tables_and_commit_outcomes_attach_sees(spark):
    table = f"lake.db.status_{uuid.uuid4().hex[:8]}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
    spark.sql(f"CREATE TABLE {table} USING iceberg AS SELECT id FROM range(10)")
    manager = attach(spark)

    status = _sql_status(spark)  # analysed again per query: the CTAS just now is in it
    assert "lake" in status.catalogs
    by_sql = {s.name: s for s in status_by_table(status.entries)}
    by_py4j = {s.name: s for s in manager.status()}
    assert table in by_sql and by_sql[table].expires_at is not None
    assert by_sql[table].refresh_count == by_py4j[table].refresh_count
    mine = [c for c in status.commits if c.table == table]
    assert [c.outcome for c in mine if c.kind == "commit"] == ["committed"]
    assert [c.outcome for c in mine if c.kind == "stage_create"] == ["staged"]
    assert [(c.kind, c.outcome) for c in manager.commits() if c.table == table] == [(c.kind, c.outcome) for c in mine]

    raw = spark.sql("SELECT catalog_ext_status()").collect()[0][0]
    assert "secret" not in raw.lower() and "session-token\"" not in raw


def test_status_sql_refuses_arguments_in_one_line(spark):
    with pytest.raises(Exception, match="takes no arguments"):
        spark.sql("SELECT catalog_ext_status(1)").collect()
