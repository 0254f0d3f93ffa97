"""Server inventory: what Iceberg users do every day in Spark, each answered pass / fail /
unsupported with the statement's result or error as evidence.

Rename, views, namespace properties, partitioning by the first column, row-level DELETE/MERGE in
merge-on-read and copy-on-write mode, and the maintenance procedures rewrite_data_files,
expire_snapshots, remove_orphan_files (dry run: the doctor never deletes files it did not write)
and rewrite_manifests. Everything runs in the run's scratch namespace on the Spark session of the
`spark-ctas` probe; `unsupported` means the catalog refused the operation itself
(`CatalogUnsupportedError`, see `spark_errors`), anything else that goes wrong is a `fail`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyspark_catalog_ext.doctor.context import ProbeContext
from pyspark_catalog_ext.doctor.engines import SPARK_CATALOG, catalog_refusal, spark_error, statements
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed
from pyspark_catalog_ext.errors import CatalogUnsupportedError

__all__ = ["INVENTORY_PROBES"]

INVENTORY_PROBES = (
    "namespace-properties", "rename-table", "views", "partition-first-column", "dml-merge-on-read",
    "dml-copy-on-write", "rewrite-data-files", "expire-snapshots", "remove-orphan-files", "rewrite-manifests",
)
_NEEDS = ("spark-ctas",)


def _name(ctx: ProbeContext, table: str) -> str:
    return f"{SPARK_CATALOG}.`{ctx.namespace}`.{table}"


def _rename_target(ctx: ProbeContext, table: str) -> str:
    """A RENAME TO target as users write it: Spark renames within the table's catalog and reads the
    target's every part as namespace and name, so a leading catalog name would become a namespace."""
    return f"`{ctx.namespace}`.{table}"


def _run(ctx: ProbeContext, body: Callable[[Any], Outcome], what: str) -> Outcome:
    """Run `body(spark)`; the catalog refusing the operation is `unsupported`, other errors `fail`."""
    from pyspark_catalog_ext.spark import java_errors as spark_errors

    spark_errors.install()  # also under --no-shim, where no attach() installed it
    t0 = time.perf_counter()
    try:
        with statements(ctx):
            outcome = body(ctx.spark)
    except CatalogUnsupportedError as exc:
        return catalog_refusal(ctx, exc)
    except Exception as exc:
        return failed(f"{what}: {spark_error(ctx, exc)}", error=spark_error(ctx, exc))
    outcome.evidence.setdefault("elapsed_s", round(time.perf_counter() - t0, 2))
    return outcome


@probe("namespace-properties", "ALTER NAMESPACE ... SET PROPERTIES", "inventory", needs=_NEEDS)
def probe_namespace_properties(ctx: ProbeContext) -> Outcome:
    def body(spark: Any) -> Outcome:
        ns = f"{SPARK_CATALOG}.`{ctx.namespace}`"
        spark.sql(f"ALTER NAMESPACE {ns} SET PROPERTIES ('catalog-ext.doctor' = 'probe')")
        props = {r[0]: r[1] for r in spark.sql(f"DESCRIBE NAMESPACE EXTENDED {ns}").collect()}
        text = str(props.get("Properties", ""))
        if "catalog-ext.doctor" not in text:
            return failed("the property was accepted but is not in DESCRIBE NAMESPACE", properties=text[:300])
        return passed("set and read back a namespace property", properties=text[:300])

    return _run(ctx, body, "ALTER NAMESPACE SET PROPERTIES")


@probe("rename-table", "ALTER TABLE ... RENAME TO", "inventory", needs=_NEEDS)
def probe_rename_table(ctx: ProbeContext) -> Outcome:
    def body(spark: Any) -> Outcome:
        spark.sql(f"CREATE TABLE {_name(ctx, 'inv_rename')} USING iceberg AS SELECT id FROM range(3)")
        spark.sql(f"ALTER TABLE {_name(ctx, 'inv_rename')} RENAME TO {_rename_target(ctx, 'inv_renamed')}")
        rows = spark.table(_name(ctx, "inv_renamed")).count()
        if rows != 3:
            return failed(f"the renamed table has {rows} rows, expected 3", rows=rows)
        return passed("renamed a table and read it under the new name", rows=rows)

    return _run(ctx, body, "ALTER TABLE RENAME TO")


@probe("views", "CREATE VIEW / SELECT / DROP VIEW", "inventory", needs=_NEEDS)
def probe_views(ctx: ProbeContext) -> Outcome:
    def body(spark: Any) -> Outcome:
        view = _name(ctx, "inv_view")
        spark.sql(f"CREATE VIEW {view} AS SELECT id FROM {_name(ctx, 'spark')} WHERE id < 10")
        try:
            rows = spark.sql(f"SELECT count(*) FROM {view}").collect()[0][0]
        finally:
            spark.sql(f"DROP VIEW IF EXISTS {view}")
        if rows != 10:
            return failed(f"the view returned {rows} rows, expected 10", rows=rows)
        return passed("created, queried and dropped a view", rows=rows)

    return _run(ctx, body, "CREATE VIEW")


@probe("partition-first-column", "PARTITIONED BY (bucket(4, <first column>))", "inventory", needs=_NEEDS)
def probe_partition_first_column(ctx: ProbeContext) -> Outcome:
    def body(spark: Any) -> Outcome:
        table = _name(ctx, "inv_partitioned")
        spark.sql(f"CREATE TABLE {table} (id bigint, note string) USING iceberg PARTITIONED BY (bucket(4, id))")
        spark.sql(f"INSERT INTO {table} SELECT id, CAST(id AS string) FROM range(100)")
        partitions = spark.sql(f"SELECT count(*) FROM {table}.partitions").collect()[0][0]
        rows = spark.table(table).count()
        if rows != 100 or partitions < 2:
            return failed(f"{rows} rows in {partitions} partitions, expected 100 rows in 2-4", rows=rows, partitions=partitions)
        return passed(f"100 rows in {partitions} partitions", rows=rows, partitions=partitions)

    return _run(ctx, body, "CREATE TABLE PARTITIONED BY the first column")


def _row_level(ctx: ProbeContext, mode: str) -> Outcome:
    table = _name(ctx, f"inv_{mode.replace('-', '_')}")

    def body(spark: Any) -> Outcome:
        spark.sql(f"""CREATE TABLE {table} (id bigint, v string) USING iceberg TBLPROPERTIES (
                      'format-version' = '2', 'write.delete.mode' = '{mode}', 'write.update.mode' = '{mode}',
                      'write.merge.mode' = '{mode}')""")
        spark.sql(f"INSERT INTO {table} SELECT id, 'old' FROM range(10)")
        spark.sql(f"DELETE FROM {table} WHERE id < 3")
        spark.sql(f"""MERGE INTO {table} t USING (SELECT id, 'new' AS v FROM range(8, 12)) s ON t.id = s.id
                      WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT *""")
        got = {(r.id, r.v) for r in spark.table(table).collect()}
        expected = {(i, "old") for i in range(3, 8)} | {(i, "new") for i in range(8, 12)}
        delete_files = spark.sql(f"SELECT count(*) FROM {table}.delete_files").collect()[0][0]
        evidence = {"rows": len(got), "delete_files": delete_files}
        if got != expected:
            return failed(f"after DELETE and MERGE: {len(got)} rows, not the expected {len(expected)}", **evidence)
        if (delete_files > 0) != (mode == "merge-on-read"):
            return failed(f"{mode} wrote {delete_files} delete files", **evidence)
        return passed(f"DELETE and MERGE correct; {delete_files} delete files", **evidence)

    return _run(ctx, body, f"DELETE/MERGE ({mode})")


@probe("dml-merge-on-read", "DELETE and MERGE, merge-on-read", "inventory", needs=_NEEDS)
def probe_dml_merge_on_read(ctx: ProbeContext) -> Outcome:
    return _row_level(ctx, "merge-on-read")


@probe("dml-copy-on-write", "DELETE and MERGE, copy-on-write", "inventory", needs=_NEEDS)
def probe_dml_copy_on_write(ctx: ProbeContext) -> Outcome:
    return _row_level(ctx, "copy-on-write")


def _maintenance_table(ctx: ProbeContext, spark: Any) -> str:
    """A table with three small appends (three snapshots, three data files), made once per run."""
    table = "inv_maintenance"
    if not ctx.shared.get("inventory_maintenance_table"):
        spark.sql(f"CREATE TABLE {_name(ctx, table)} (id bigint) USING iceberg")
        for start in (0, 10, 20):
            spark.sql(f"INSERT INTO {_name(ctx, table)} SELECT id FROM range({start}, {start + 10}, 1, 1)")
        ctx.shared["inventory_maintenance_table"] = True
    return f"`{ctx.namespace}`.{table}"


def _procedure(ctx: ProbeContext, name: str, args: str, check: Callable[[Any, list], Outcome]) -> Outcome:
    def body(spark: Any) -> Outcome:
        table = _maintenance_table(ctx, spark)
        result = spark.sql(f"CALL {SPARK_CATALOG}.system.{name}(table => '{table}'{args})").collect()
        rows = spark.sql(f"SELECT count(*) FROM {_name(ctx, 'inv_maintenance')}").collect()[0][0]
        if rows != 30:
            return failed(f"{name} left {rows} rows, expected 30", rows=rows)
        return check(spark, result)

    return _run(ctx, body, f"CALL system.{name}")


@probe("rewrite-data-files", "CALL system.rewrite_data_files", "inventory", needs=_NEEDS)
def probe_rewrite_data_files(ctx: ProbeContext) -> Outcome:
    def check(spark: Any, result: list) -> Outcome:
        rewritten = result[0]["rewritten_data_files_count"]
        if rewritten < 2:
            return failed(f"rewrote {rewritten} data files, expected the 3 small ones", rewritten=rewritten)
        return passed(f"compacted {rewritten} data files into {result[0]['added_data_files_count']}",
                      rewritten=rewritten, added=result[0]["added_data_files_count"])

    return _procedure(ctx, "rewrite_data_files", ", options => map('min-input-files', '2')", check)


@probe("expire-snapshots", "CALL system.expire_snapshots", "inventory", needs=_NEEDS)
def probe_expire_snapshots(ctx: ProbeContext) -> Outcome:
    def check(spark: Any, result: list) -> Outcome:
        left = spark.sql(f"SELECT count(*) FROM {_name(ctx, 'inv_maintenance')}.snapshots").collect()[0][0]
        if left != 1:
            return failed(f"{left} snapshots left, expected 1", snapshots_left=left)
        deleted = result[0]["deleted_data_files_count"]
        return passed(f"expired all but the current snapshot; {deleted} data files deleted",
                      snapshots_left=left, deleted_data_files=deleted)

    return _procedure(ctx, "expire_snapshots", ", older_than => TIMESTAMP '2999-12-31 00:00:00', retain_last => 1", check)


@probe("remove-orphan-files", "CALL system.remove_orphan_files (dry run)", "inventory", needs=_NEEDS)
def probe_remove_orphan_files(ctx: ProbeContext) -> Outcome:
    def check(spark: Any, result: list) -> Outcome:
        return passed(f"listed the table location; {len(result)} orphan candidates (dry run, nothing deleted)",
                      orphan_candidates=len(result))

    # prefix_listing: list through the table's S3FileIO; the default lists through a Hadoop
    # FileSystem, and pip pyspark has none for s3:// (No FileSystem for scheme "s3").
    return _procedure(ctx, "remove_orphan_files", ", dry_run => true, prefix_listing => true", check)


@probe("rewrite-manifests", "CALL system.rewrite_manifests", "inventory", needs=_NEEDS)
def probe_rewrite_manifests(ctx: ProbeContext) -> Outcome:
    def check(spark: Any, result: list) -> Outcome:
        row = result[0]
        return passed(f"rewrote {row['rewritten_manifests_count']} manifests into {row['added_manifests_count']}",
                      rewritten=row["rewritten_manifests_count"], added=row["added_manifests_count"])

    return _procedure(ctx, "rewrite_manifests", "", check)
