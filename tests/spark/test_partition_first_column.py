"""Partitioning by the first column on SeaweedFS: Spark numbers fields from 0 and
SeaweedFS 4.48 rejects a partition field whose source-id is 0; the shim renumbers create and
stage-create requests (FieldIdRenumbering). Real Spark, real Iceberg, real SeaweedFS."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def ns(spark):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.firstcol")
    yield "lake.firstcol"
    for table in ("bucketed", "ctas"):
        spark.sql(f"DROP TABLE IF EXISTS lake.firstcol.{table} PURGE")


def _partition_values(spark, table: str) -> list:
    return [tuple(row.partition) for row in spark.sql(f"SELECT partition FROM {table}.partitions").collect()]


def test_create_table_partitioned_by_bucket_of_the_first_column(spark, ns):
    table = f"{ns}.bucketed"
    spark.sql(f"""CREATE TABLE {table} (id bigint, name string, ts timestamp)
                  USING iceberg PARTITIONED BY (bucket(16, id), days(ts))""")
    spark.sql(f"INSERT INTO {table} SELECT id, CAST(id AS string), TIMESTAMP '2026-01-01 00:00:00' FROM range(100)")

    fields = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    partitioning = [r for r in fields if r.col_name.startswith("Part ")]
    assert [r.data_type for r in partitioning] == ["bucket(16, id)", "days(ts)"], partitioning
    assert spark.sql(f"SELECT count(*), sum(id) FROM {table}").first() == (100, 4950)
    buckets = {value[0] for value in _partition_values(spark, table)}
    assert len(buckets) > 1 and buckets <= set(range(16)), buckets


def test_ctas_partitioned_by_the_first_column(spark, ns):
    table = f"{ns}.ctas"
    spark.sql(f"CREATE TABLE {table} USING iceberg PARTITIONED BY (k) AS SELECT id % 4 AS k, id FROM range(1000)")

    assert sorted(_partition_values(spark, table)) == [(0,), (1,), (2,), (3,)]
    rows = spark.sql(f"SELECT k, count(*) AS n, sum(id) AS s FROM {table} GROUP BY k ORDER BY k").collect()
    assert [(r.k, r.n) for r in rows] == [(k, 250) for k in range(4)]
    assert sum(r.s for r in rows) == sum(range(1000))
    # Each data file holds one partition's rows only.
    files = spark.sql(f"SELECT partition.k AS k, readable_metrics.k.lower_bound AS lo, readable_metrics.k.upper_bound AS hi FROM {table}.files").collect()
    assert files and all(f.k == f.lo == f.hi for f in files), files
