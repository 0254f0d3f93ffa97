"""Iceberg's documented Spark statements on the embedded lakehouse.

The statements of Iceberg's Spark pages (DDL, writes, queries, procedures), as a new user would
type them, run in order on `lakehouse_session()` with the shim: real Spark, the real Iceberg
runtime and real SeaweedFS. SERVER_LIMITS lists what SeaweedFS 4.48 does not support and the
one-line error the user gets instead (docs/lakehouse.md "What the embedded lakehouse runs, and what it cannot do").
The project's closing notes quote STATEMENTS.
"""

from __future__ import annotations

import pytest

from pyspark_catalog_ext.errors import CatalogExtError

NS = "lake.docs"
T = f"{NS}.sample"  # the docs' prod.db.sample
P = f"{NS}.logs"  # a partitioned table for the partition/overwrite pages
# {snap} / {snap_ts} are the first snapshot of T, filled in after the first write.
STATEMENTS: list[tuple[str, str]] = [
    # -- spark-ddl -------------------------------------------------------------------------------
    ("ddl", f"CREATE NAMESPACE IF NOT EXISTS {NS}"),
    ("ddl", f"ALTER NAMESPACE {NS} SET PROPERTIES ('team' = 'docs')"),
    ("ddl", f"CREATE TABLE {T} (id bigint NOT NULL COMMENT 'unique id', data string) USING iceberg"),
    ("ddl", f"CREATE TABLE {P} (id bigint, level string, ts timestamp, category string) USING iceberg "
            "PARTITIONED BY (bucket(16, id), days(ts), category)"),
    ("ddl", f"CREATE TABLE {NS}.ctas USING iceberg AS SELECT id, CAST(id AS string) AS data FROM range(10)"),
    ("ddl", f"REPLACE TABLE {NS}.ctas USING iceberg AS SELECT id, id * 2 AS doubled FROM range(5)"),
    ("ddl", f"CREATE OR REPLACE TABLE {NS}.ctas USING iceberg PARTITIONED BY (id) AS SELECT id FROM range(3)"),
    # The docs write the target as prod.db.new_name; Spark renames within the table's catalog and reads every
    # part of the target as namespace and name, so the target leaves the catalog out.
    ("ddl", f"ALTER TABLE {NS}.ctas RENAME TO docs.ctas_renamed"),
    ("ddl", f"ALTER TABLE {NS}.ctas_renamed RENAME TO docs.ctas"),
    ("ddl", f"ALTER TABLE {T} SET TBLPROPERTIES ('read.split.target-size' = '268435456')"),
    ("ddl", f"ALTER TABLE {T} UNSET TBLPROPERTIES ('read.split.target-size')"),
    ("ddl", f"ALTER TABLE {T} ADD COLUMNS (new_column string COMMENT 'new_column docs')"),
    ("ddl", f"ALTER TABLE {T} ADD COLUMN point struct<x: double, y: double>"),
    ("ddl", f"ALTER TABLE {T} ADD COLUMN measurement int AFTER id"),
    ("ddl", f"ALTER TABLE {T} RENAME COLUMN new_column TO note"),
    ("ddl", f"ALTER TABLE {T} ALTER COLUMN measurement TYPE bigint"),
    ("ddl", f"ALTER TABLE {T} ALTER COLUMN measurement COMMENT 'unit is bytes per second'"),
    ("ddl", f"ALTER TABLE {T} ALTER COLUMN note FIRST"),
    ("ddl", f"ALTER TABLE {T} ALTER COLUMN note AFTER id"),
    ("ddl", f"ALTER TABLE {T} DROP COLUMN point"),
    ("ddl", f"ALTER TABLE {P} ADD PARTITION FIELD truncate(4, level)"),
    ("ddl", f"ALTER TABLE {P} DROP PARTITION FIELD truncate(4, level)"),
    ("ddl", f"ALTER TABLE {P} REPLACE PARTITION FIELD days(ts) WITH hours(ts)"),
    ("ddl", f"ALTER TABLE {P} WRITE ORDERED BY category ASC, id DESC"),
    ("ddl", f"ALTER TABLE {P} WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY id"),
    ("ddl", f"ALTER TABLE {P} WRITE UNORDERED"),
    ("ddl", f"ALTER TABLE {T} SET IDENTIFIER FIELDS id"),
    ("ddl", f"ALTER TABLE {T} DROP IDENTIFIER FIELDS id"),
    # -- spark-writes ----------------------------------------------------------------------------
    ("write", f"INSERT INTO {T} (id, note, measurement, data) VALUES (1, 'a', 10, 'x'), (2, 'b', 20, 'y')"),
    ("write", f"INSERT INTO {T} SELECT id, CAST(id AS string), id * 10, 'z' FROM range(3, 10)"),
    ("write", f"INSERT INTO {P} SELECT id, IF(id % 2 = 0, 'INFO', 'WARN'), TIMESTAMP '2026-01-01 00:00:00' + "
              "make_interval(0, 0, 0, 0, CAST(id AS int), 0, 0), IF(id % 3 = 0, 'a', 'b') FROM range(20)"),
    ("write", f"MERGE INTO {T} t USING (SELECT 1 AS id, 'merged' AS data UNION ALL SELECT 42, 'new') s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET t.data = s.data WHEN NOT MATCHED THEN INSERT (id, data) VALUES (s.id, s.data)"),
    ("write", f"MERGE INTO {T} t USING (SELECT 2 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE"),
    ("write", f"INSERT OVERWRITE {P} SELECT id, 'ERROR', TIMESTAMP '2026-01-01 00:00:00', 'a' FROM range(3)"),
    ("write", f"INSERT OVERWRITE {P} PARTITION (category = 'b') SELECT id, 'INFO', TIMESTAMP '2026-01-02 00:00:00' "
              "FROM range(5)"),
    ("write", f"DELETE FROM {T} WHERE id = 9"),
    ("write", f"UPDATE {T} SET data = 'updated' WHERE id = 3"),
    ("write", f"ALTER TABLE {T} SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', "
              "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"),
    ("write", f"DELETE FROM {T} WHERE id = 8"),
    ("write", f"UPDATE {T} SET data = 'mor' WHERE id = 4"),
    ("write", f"MERGE INTO {T} t USING (SELECT 5 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET data = 'mor-merge'"),
    ("ddl", f"ALTER TABLE {T} CREATE BRANCH audit"),
    ("ddl", f"ALTER TABLE {T} CREATE TAG v1 RETAIN 7 DAYS"),
    ("write", f"INSERT INTO {T}.branch_audit (id, note, measurement, data) VALUES (100, 'n', 1, 'on the branch')"),
    ("ddl", f"ALTER TABLE {T} CREATE OR REPLACE BRANCH staging"),
    ("ddl", f"ALTER TABLE {T} DROP BRANCH staging"),
    # -- spark-queries ---------------------------------------------------------------------------
    ("query", f"SELECT count(*) FROM {T}"),
    ("query", f"SELECT * FROM {T} VERSION AS OF {{snap}}"),
    ("query", f"SELECT * FROM {T} TIMESTAMP AS OF '{{snap_ts}}'"),
    ("query", f"SELECT * FROM {T} VERSION AS OF 'v1'"),
    ("query", f"SELECT * FROM {T} VERSION AS OF 'audit'"),
    ("query", f"SELECT * FROM {T}.branch_audit"),
    ("query", f"SELECT * FROM {T}.tag_v1"),
    ("query", f"SELECT * FROM {T}.history"),
    ("query", f"SELECT * FROM {T}.metadata_log_entries"),
    ("query", f"SELECT * FROM {T}.snapshots"),
    ("query", f"SELECT * FROM {T}.entries"),
    ("query", f"SELECT * FROM {T}.files"),
    ("query", f"SELECT * FROM {T}.manifests"),
    ("query", f"SELECT * FROM {P}.partitions"),
    ("query", f"SELECT * FROM {T}.position_deletes"),
    ("query", f"SELECT * FROM {T}.all_data_files"),
    ("query", f"SELECT * FROM {T}.all_manifests"),
    ("query", f"SELECT * FROM {T}.refs"),
    ("query", f"DESCRIBE TABLE EXTENDED {T}"),
    ("query", f"SHOW TBLPROPERTIES {T}"),
    ("query", f"SHOW TABLES IN {NS}"),
    # -- spark-procedures ------------------------------------------------------------------------
    ("procedure", f"CALL lake.system.ancestors_of('{T[5:]}')"),
    ("procedure", f"CALL lake.system.rollback_to_snapshot('{T[5:]}', {{snap}})"),
    ("procedure", f"CALL lake.system.set_current_snapshot('{T[5:]}', {{last}})"),
    ("procedure", f"CALL lake.system.rollback_to_timestamp('{T[5:]}', TIMESTAMP '{{last_ts}}')"),
    ("procedure", f"CALL lake.system.fast_forward('{T[5:]}', 'main', 'audit')"),
    ("procedure", f"CALL lake.system.rewrite_data_files(table => '{P[5:]}', options => map('min-input-files', '2'))"),
    ("procedure", f"CALL lake.system.rewrite_data_files(table => '{T[5:]}', strategy => 'sort', sort_order => 'id DESC')"),
    ("procedure", f"CALL lake.system.rewrite_position_delete_files('{T[5:]}')"),
    ("procedure", f"CALL lake.system.rewrite_manifests('{T[5:]}')"),
    ("procedure", f"CALL lake.system.expire_snapshots(table => '{P[5:]}', older_than => TIMESTAMP '{{now}}', retain_last => 1)"),
    # prefix_listing: list through the table's S3FileIO; the default lists through a Hadoop FileSystem and
    # pip's pyspark has none for s3:// (docs/lakehouse.md "What the embedded lakehouse runs, and what it cannot do").
    ("procedure", f"CALL lake.system.remove_orphan_files(table => '{T[5:]}', dry_run => true, prefix_listing => true)"),
    ("procedure", f"CALL lake.system.create_changelog_view(table => '{P[5:]}', changelog_view => 'docs_changes')"),
    ("query", "SELECT * FROM docs_changes"),
    ("procedure", f"CALL lake.system.compute_table_stats('{T[5:]}')"),
    # -- back to spark-ddl -----------------------------------------------------------------------
    ("ddl", f"ALTER TABLE {T} DROP TAG v1"),
    ("ddl", f"DROP TABLE {NS}.ctas"),
    ("ddl", f"DROP TABLE {P} PURGE"),
    ("ddl", f"DROP TABLE {T} PURGE"),
]
# Documented statements SeaweedFS 4.48 does not support, and what the user sees instead.
SERVER_LIMITS: list[tuple[str, str]] = [
    (f"CREATE VIEW {NS}.limits_view AS SELECT 1 AS one", "does not support views"),
]


def _snapshots(spark, table: str) -> list:
    return spark.sql(f"SELECT snapshot_id, committed_at FROM {table}.snapshots ORDER BY committed_at").collect()


def test_documented_spark_statements_run_on_the_embedded_lakehouse(spark) -> None:
    values: dict[str, str] = {}
    failures: list[str] = []
    for kind, template in STATEMENTS:
        if "{snap" in template or "{last" in template or "{now}" in template:
            snaps = _snapshots(spark, T)
            first, last = snaps[0], snaps[-1]
            values.update(snap=str(first.snapshot_id), snap_ts=str(first.committed_at), last=str(last.snapshot_id),
                          last_ts=str(last.committed_at), now=str(spark.sql("SELECT current_timestamp()").first()[0]))
        statement = template.format(**values)
        try:
            spark.sql(statement).collect()
        except Exception as exc:  # noqa: BLE001 - collect them all: one run shows every failing statement
            failures.append(f"[{kind}] {statement}\n    -> {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    assert not failures, "documented statements failed:\n" + "\n".join(failures)


def test_results_of_the_documented_writes(spark) -> None:
    """The writes above did what the docs say (checked on a fresh table, same statements)."""
    t = f"{NS}.check"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    spark.sql(f"CREATE TABLE {t} (id bigint, data string) USING iceberg")
    try:
        spark.sql(f"INSERT INTO {t} SELECT id, 'x' FROM range(5)")
        spark.sql(f"MERGE INTO {t} t USING (SELECT 1 AS id, 'm' AS data UNION ALL SELECT 7, 'n') s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET t.data = s.data WHEN NOT MATCHED THEN INSERT (id, data) VALUES (s.id, s.data)")
        spark.sql(f"DELETE FROM {t} WHERE id = 0")
        spark.sql(f"UPDATE {t} SET data = 'u' WHERE id = 2")
        rows = [tuple(r) for r in spark.sql(f"SELECT id, data FROM {t} ORDER BY id").collect()]
        assert rows == [(1, "m"), (2, "u"), (3, "x"), (4, "x"), (7, "n")]
        first = _snapshots(spark, t)[0].snapshot_id
        assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF {first}").first()[0] == 5
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {t} PURGE")


@pytest.mark.parametrize("statement,says", SERVER_LIMITS)
def test_server_limits_give_one_line_errors(spark, statement: str, says: str) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {NS}.limits USING iceberg AS SELECT 1 AS id")
    try:
        with pytest.raises(CatalogExtError) as err:
            spark.sql(statement)
        assert says in str(err.value) and "\n" not in str(err.value), str(err.value)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {NS}.limits PURGE")
