"""The embedded lakehouse's location rule seen from Spark (vended credentials): a CTAS or CREATE
TABLE at another table's location is refused with the rule's one-line reason; Spark's ordinary CTAS
(stage-create, re-stage at the staged location, commit) still works."""

from __future__ import annotations

import uuid

import pytest


def test_spark_ctas_at_another_tables_location_is_refused_and_plain_ctas_works(spark):
    ns = "sloc" + uuid.uuid4().hex[:6]
    spark.sql(f"CREATE NAMESPACE lake.{ns}")
    spark.sql(f"CREATE TABLE lake.{ns}.a AS SELECT id FROM range(10)")  # plain CTAS: stage, re-stage, commit
    assert spark.table(f"lake.{ns}.a").count() == 10
    location = spark.sql(f"DESCRIBE TABLE EXTENDED lake.{ns}.a").where("col_name = 'Location'").collect()[0]["data_type"]
    for sql in (f"CREATE TABLE lake.{ns}.b USING iceberg LOCATION '{location}' AS SELECT 1 AS id",
                f"CREATE TABLE lake.{ns}.b (id BIGINT) USING iceberg LOCATION '{location}/data/b'",
                f"CREATE TABLE lake.{ns}.b (id BIGINT) USING iceberg LOCATION 's3://warehouse/{ns}'"):
        with pytest.raises(Exception) as err:
            spark.sql(sql)
        java = getattr(err.value, "java_exception", None)  # Iceberg's ForbiddenException: "Forbidden: <our line>"
        message = java.getMessage() if java is not None else str(err.value)
        assert "\n" not in message and ("overlaps table" in message or "not under its namespace" in message), message
    assert [r["tableName"] for r in spark.sql(f"SHOW TABLES IN lake.{ns}").collect()] == ["a"]
    assert spark.table(f"lake.{ns}.a").count() == 10
