"""Staged-table helpers on the real stack (Spark + Iceberg runtime + shim + SeaweedFS): stage,
write several times, commit atomically or abort; replace guarded by the table UUID; the context
manager; `staged cleanup` of files a dead driver left behind."""

from __future__ import annotations

import uuid as uuidlib

import pytest

from pyspark_catalog_ext.errors import CatalogConflictError, CommitFailedError, ConfigError, StaleTableError
from pyspark_catalog_ext.staging.staged import stage_create, stage_replace
from tests.conftest import SECRET, assert_one_line_error, run_cli


def s3_admin(lakehouse):
    import boto3
    from botocore.config import Config

    info = lakehouse.info
    return boto3.client("s3", endpoint_url=info.s3_endpoint, aws_access_key_id=info.access_key,
                        aws_secret_access_key=info.secret_key, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


def s3_exists(s3, uri: str) -> bool:
    bucket, key = uri.replace("s3a://", "s3://")[5:].split("/", 1)
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except s3.exceptions.ClientError:
        return False


def s3_keys(s3, location: str) -> list[str]:
    bucket, prefix = location[5:].split("/", 1)
    out = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        out += [f"s3://{bucket}/{o['Key']}" for o in page.get("Contents") or []]
    return out


def table_files(spark, table: str) -> list[str]:
    """Every file the table's metadata references (all snapshots)."""
    files = [r[0] for r in spark.sql(f"SELECT file_path FROM {table}.all_data_files").collect()]
    files += [r[0] for r in spark.sql(f"SELECT path FROM {table}.all_manifests").collect()]
    files += [r[0] for r in spark.sql(f"SELECT manifest_list FROM {table}.snapshots").collect()]
    return files


@pytest.fixture(scope="module")
def db(spark):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.stg")
    return "lake.stg"


def unique(prefix: str) -> str:
    return f"{prefix}_{uuidlib.uuid4().hex[:8]}"


def test_stage_write_many_times_commit_once(spark, db, lakehouse):
    name = f"{db}.{unique('multi')}"
    df = spark.range(0, 500).selectExpr("id", "cast(id % 7 AS string) AS k", "current_timestamp() AS ts")
    staged = stage_create(spark, name, df, partition_by=["days(ts)", "bucket(4, id)"], sort_by=["id DESC NULLS LAST"],
                          properties={"write.format.default": "parquet", "catalog-ext.test": "yes"})
    w1 = staged.write(df)
    w2 = staged.write(df.where("id < 100"))
    assert (w1.added_records, w2.added_records) == (500, 100)
    assert not spark.catalog.tableExists(name), "a staged table must stay invisible until commit"
    result = staged.commit()
    assert result.uuid == staged.uuid and result.snapshot_ids == (w1.snapshot_id, w2.snapshot_id)
    assert spark.table(name).count() == 600
    assert spark.sql(f"SELECT count(*) FROM {name}.snapshots").first()[0] == 2
    props = dict(spark.sql(f"SHOW TBLPROPERTIES {name}").collect())
    assert props["catalog-ext.test"] == "yes"
    spec = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    assert any("bucket(4, id)" in str(r) for r in spec) and any("days(ts)" in str(r) for r in spec)
    s3 = s3_admin(lakehouse)
    assert all(s3_exists(s3, f) for f in table_files(spark, name))
    assert staged.state == "committed"
    with pytest.raises(ConfigError):
        staged.write(df)


def test_abort_deletes_written_files_and_leaves_nothing(spark, db, lakehouse):
    name = f"{db}.{unique('aborted')}"
    df = spark.range(0, 300).selectExpr("id", "id * 2 AS v")
    staged = stage_create(spark, name, df)
    staged.write(df)
    staged.write(df)
    files = staged.written_files()
    s3 = s3_admin(lakehouse)
    assert files and all(s3_exists(s3, f) for f in files)
    assert staged.abort() == len(files)
    assert not any(s3_exists(s3, f) for f in files)
    assert s3_keys(s3, staged.location) == []
    assert not spark.catalog.tableExists(name)
    assert staged.abort() == 0  # idempotent


def test_context_manager_commits_on_success(spark, db):
    name = f"{db}.{unique('ctx_ok')}"
    df = spark.range(0, 50).selectExpr("id")
    with stage_create(spark, name, "id BIGINT") as staged:
        staged.write(df)
        staged.write(df)
    assert spark.table(name).count() == 100


def test_context_manager_aborts_on_exception(spark, db, lakehouse):
    name = f"{db}.{unique('ctx_fail')}"
    df = spark.range(0, 50).selectExpr("id")
    with pytest.raises(RuntimeError, match="boom"):
        with stage_create(spark, name, df) as staged:
            staged.write(df)
            files = staged.written_files()
            raise RuntimeError("boom")
    assert staged.state == "aborted"
    assert not spark.catalog.tableExists(name)
    s3 = s3_admin(lakehouse)
    assert files and not any(s3_exists(s3, f) for f in files)


def test_stage_create_of_existing_table_is_a_conflict(spark, db):
    name = f"{db}.{unique('exists')}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg")
    with pytest.raises(CatalogConflictError, match="already exists"):
        stage_create(spark, name, "id BIGINT")


def test_replace_guarded_by_uuid(spark, db, pyiceberg_catalog):
    short = unique('repl')
    name = f"{db}.{short}"
    spark.sql(f"CREATE TABLE {name} USING iceberg AS SELECT id FROM range(10)")
    old_uuid = str(pyiceberg_catalog.load_table(f"stg.{short}").metadata.table_uuid)
    new = spark.range(0, 42).selectExpr("id", "'x' AS tag")
    with stage_replace(spark, name, new, expected_uuid=old_uuid) as staged:
        assert staged.uuid == old_uuid
        staged.write(new)
        assert spark.table(name).count() == 10  # still the old data
    assert spark.table(name).count() == 42
    assert spark.table(name).columns == ["id", "tag"]


def test_replace_with_stale_uuid_is_a_clear_conflict(spark, db):
    name = f"{db}.{unique('stale')}"
    spark.sql(f"CREATE TABLE {name} USING iceberg AS SELECT id FROM range(5)")
    with pytest.raises(StaleTableError) as err:
        stage_replace(spark, name, "id BIGINT", expected_uuid=str(uuidlib.uuid4()))
    text = str(err.value)
    assert "\n" not in text and "UUID" in text and "dropped and recreated" in text
    assert spark.table(name).count() == 5


def test_replace_fails_cleanly_when_table_is_recreated_before_commit(spark, db):
    name = f"{db}.{unique('race')}"
    spark.sql(f"CREATE TABLE {name} USING iceberg AS SELECT id FROM range(5)")
    staged = stage_replace(spark, name, "id BIGINT")
    staged.write(spark.range(0, 99))
    spark.sql(f"DROP TABLE {name}")
    spark.sql(f"CREATE TABLE {name} USING iceberg AS SELECT id FROM range(3)")  # a new table, new UUID
    with pytest.raises((StaleTableError, CommitFailedError)) as err:
        staged.commit()
    text = str(err.value)
    assert "\n" not in text and "nothing was published" in text
    assert spark.table(name).count() == 3


@pytest.mark.parametrize("bad, needle", [
    ({"partition_by": ["bucket(id)"]}, "bucket needs"),
    ({"partition_by": ["weeks(ts)"]}, "unknown partition field transform"),
    ({"sort_by": ["id sideways"]}, "invalid"),
])
def test_bad_arguments_are_one_line_config_errors(spark, db, bad, needle):
    with pytest.raises(ConfigError) as err:
        stage_create(spark, f"{db}.never", "id BIGINT, ts TIMESTAMP", **bad)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_invalid_table_name(spark):
    with pytest.raises(ConfigError, match="catalog.namespace.table"):
        stage_create(spark, "justaname", "id BIGINT")


# --------------------------------------------------------------------------- staged cleanup


def _cleanup(lakehouse, location, *extra):
    info = lakehouse.info
    return run_cli("staged", "cleanup", "--location", location, "--uri", info.iceberg_uri, "--warehouse",
                   info.warehouse, "--credential", info.credential, "--min-age", "0.001", "--allow-min-age-under-24h", *extra)


def test_staged_cleanup_dry_run_then_apply(spark, db, lakehouse):
    """A driver that dies mid-staging leaves data files and nothing visible; cleanup finds them."""
    short = unique("orphan")
    name = f"{db}.{short}"
    df = spark.range(0, 200).selectExpr("id")
    staged = stage_create(spark, name, df)
    staged.write(df)
    files = staged.written_files()  # ... and the driver "dies" here: no commit, no abort
    s3 = s3_admin(lakehouse)
    assert files and all(s3_exists(s3, f) for f in files)
    assert not spark.catalog.tableExists(name)

    dry = _cleanup(lakehouse, staged.location, "--table", f"stg.{short}")
    assert dry.returncode == 0, dry.stderr
    assert f"{len(files)} orphaned file(s)" in dry.stdout
    assert sorted(line.split("\t")[1] for line in dry.stdout.splitlines() if line.startswith("orphan\t")) == sorted(files)
    assert "--apply" in dry.stderr and SECRET not in dry.stdout + dry.stderr
    assert all(s3_exists(s3, f) for f in files), "a dry run deletes nothing"

    applied = _cleanup(lakehouse, staged.location, "--table", f"stg.{short}", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.count("deleted\t") == len(files)
    assert not any(s3_exists(s3, f) for f in files)
    assert s3_keys(s3, staged.location) == []
    assert not spark.catalog.tableExists(name)


def test_staged_cleanup_never_touches_committed_files(spark, db, lakehouse):
    short = unique("kept")
    name = f"{db}.{short}"
    spark.sql(f"CREATE TABLE {name} USING iceberg AS SELECT id FROM range(100)")
    spark.sql(f"INSERT INTO {name} SELECT id FROM range(5)")
    committed = table_files(spark, name)
    # An abandoned replace wrote under the same location (its driver died before commit).
    abandoned = stage_replace(spark, name, "id BIGINT")
    abandoned.write(spark.range(0, 7))
    orphans = abandoned.written_files()
    location = abandoned.location

    # Explicit admin keys this time (the other S3 access path).
    info = lakehouse.info
    dry = _cleanup(lakehouse, location, "--s3-endpoint", info.s3_endpoint, "--s3-access-key", info.access_key,
                   "--s3-secret-key", info.secret_key, "--json")
    assert dry.returncode == 0, dry.stderr
    import json

    report = json.loads(dry.stdout)
    assert f"stg.{short}" in report["tables"]
    assert sorted(o["uri"] for o in report["orphans"]) == sorted(orphans)
    assert not set(committed) & {o["uri"] for o in report["orphans"]}

    applied = _cleanup(lakehouse, location, "--table", f"stg.{short}", "--apply")
    assert applied.returncode == 0, applied.stderr
    s3 = s3_admin(lakehouse)
    assert all(s3_exists(s3, f) for f in committed), "files of committed snapshots must survive"
    assert not any(s3_exists(s3, f) for f in orphans)
    assert spark.table(name).count() == 105


def test_staged_cleanup_min_age_keeps_young_files(spark, db, lakehouse):
    short = unique("young")
    staged = stage_create(spark, f"{db}.{short}", "id BIGINT")
    staged.write(spark.range(0, 3))
    info = lakehouse.info
    proc = run_cli("staged", "cleanup", "--location", staged.location, "--table", f"stg.{short}", "--apply",
                   "--uri", info.iceberg_uri, "--warehouse", info.warehouse, "--credential", info.credential)
    assert proc.returncode == 0, proc.stderr
    assert "0 orphaned file(s)" in proc.stdout and "younger than 259200s kept" in proc.stdout
    s3 = s3_admin(lakehouse)
    assert all(s3_exists(s3, f) for f in staged.written_files())
    staged.abort()


def test_staged_cleanup_needs_s3_access(lakehouse):
    proc = _cleanup(lakehouse, "s3://warehouse/stg/nothing")
    assert_one_line_error(proc, "--table", "--s3-access-key")


def test_staged_cleanup_rejects_bad_location(lakehouse):
    proc = _cleanup(lakehouse, "/tmp/not-s3", "--table", "stg.x")
    assert_one_line_error(proc, "s3://bucket/path")
