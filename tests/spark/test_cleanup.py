"""`staged cleanup` refuses whenever it is unsure: every refusal is one line and
deletes nothing; files of tables it can see from elsewhere, or that commit during the run, stay."""

from __future__ import annotations

import pytest

from pyspark_catalog_ext.errors import CleanupRefused, ConfigError
from pyspark_catalog_ext.staging.cleanup import find_orphans
from pyspark_catalog_ext.staging.staged import stage_create, stage_replace
from tests.conftest import assert_one_line_error, run_cli
from tests.helpers import catalog_client
from tests.servers import CatalogProxy
from tests.spark.test_staging import db, s3_admin, s3_exists, s3_keys, table_files, unique  # noqa: F401

MIN_AGE = 0.001


def client_for(lakehouse, url: str):
    return catalog_client(lakehouse, url)


@pytest.fixture(scope="module")
def proxy(lakehouse):
    with CatalogProxy(lakehouse.info.iceberg_uri) as p:
        yield p


@pytest.fixture
def orphaned(spark, db):
    """A staged table whose driver "died" after one write: files under its location, nothing committed."""
    short = unique("orph")
    staged = stage_create(spark, f"{db}.{short}", "id BIGINT")
    staged.write(spark.range(0, 20))
    return short, staged


def test_child_namespace_listing_error_refuses(lakehouse, proxy, orphaned):
    short, staged = orphaned
    proxy.faults.add("error", "GET", r"/namespaces\?.*parent=", status=503, times=50)
    try:
        with client_for(lakehouse, proxy.url) as client:
            with pytest.raises(CleanupRefused) as err:
                find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True, apply=True)
    finally:
        proxy.faults.clear()
    assert "cannot list the namespaces under" in str(err.value) and "\n" not in str(err.value)
    assert all(s3_exists(s3_admin(lakehouse), f) for f in staged.written_files())


@pytest.mark.parametrize("status", [403, 501])
def test_table_load_error_refuses(spark, lakehouse, proxy, db, orphaned, status):
    # 501 ("unsupported") once counted as "not found", which cleanup reads as "dropped meanwhile":
    # it skipped a table it never saw instead of refusing.
    short, staged = orphaned
    other = unique("other")
    spark.sql(f"CREATE TABLE {db}.{other} USING iceberg AS SELECT id FROM range(3)")
    proxy.faults.add("error", "GET", rf"/tables/{other}$", status=status, times=50)
    try:
        with client_for(lakehouse, proxy.url) as client:
            with pytest.raises(CleanupRefused, match=f"cannot load table stg.{other}"):
                find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True, apply=True)
    finally:
        proxy.faults.clear()
    assert all(s3_exists(s3_admin(lakehouse), f) for f in staged.written_files())


def test_bucket_root_and_bad_min_age_refused(lakehouse):
    info = lakehouse.info
    base = ["staged", "cleanup", "--uri", info.iceberg_uri, "--warehouse", info.warehouse,
            "--credential", info.credential, "--table", "stg.x", "--allow-min-age-under-24h"]
    assert_one_line_error(run_cli(*base, "--location", "s3://warehouse", "--min-age", "10"), "bucket root")
    assert_one_line_error(run_cli(*base, "--location", "s3://warehouse/", "--min-age", "10"), "bucket root")
    for bad in ("0", "-5"):
        assert_one_line_error(run_cli(*base, "--location", "s3://warehouse/stg/x", "--min-age", bad),
                              "--min-age must be positive")


def test_default_scope_is_the_named_tables_location_and_min_age_three_days(spark, lakehouse, db):
    short = unique("scoped")
    spark.sql(f"CREATE TABLE {db}.{short} USING iceberg AS SELECT id FROM range(10)")
    abandoned = stage_replace(spark, f"{db}.{short}", "id BIGINT")  # its driver dies before commit
    abandoned.write(spark.range(0, 7))
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        report = find_orphans(client, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True)
        assert report.location.rstrip("/") == abandoned.location.rstrip("/").replace("s3a://", "s3://")
        assert sorted(u for u, _, _ in report.orphans) == sorted(abandoned.written_files())
        young = find_orphans(client, table=f"stg.{short}")  # default min age: 3 days
        assert young.orphans == [] and young.too_young == len(abandoned.written_files())
        with pytest.raises(ConfigError, match="not committed: pass --location"):
            find_orphans(client, table=f"stg.{unique('never')}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True)


def test_metadata_of_an_unlisted_table_refuses(lakehouse, orphaned):
    """Another catalog (or warehouse) keeps a table in the same place: its metadata file is the sign."""
    short, staged = orphaned
    s3 = s3_admin(lakehouse)
    bucket, prefix = staged.location.replace("s3a://", "s3://")[5:].split("/", 1)
    key = f"{prefix.rstrip('/')}/metadata/00000-foreign.metadata.json"
    s3.put_object(Bucket=bucket, Key=key, Body=b"{}")
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        with pytest.raises(CleanupRefused, match="does not list"):
            find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True, apply=True)
    assert all(s3_exists(s3, f) for f in staged.written_files())
    s3.delete_object(Bucket=bucket, Key=key)


def test_job_that_commits_during_the_run_keeps_its_files(spark, lakehouse, proxy, orphaned):
    """The staged job commits after the orphans were listed, before the delete: the re-read before
    the delete batch sees it and keeps every file."""
    short, staged = orphaned
    with client_for(lakehouse, proxy.url) as client:
        report = find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True)
        assert sorted(u for u, _, _ in report.orphans) == sorted(staged.written_files())
        calls = []

        def commit_on_the_reread() -> None:
            calls.append(1)
            if len(calls) == 2:  # the first listing finds it staged; the re-read after it committed
                staged.commit()

        proxy.faults.add("before", "GET", r"/namespaces/stg/tables(\?|$)", times=2, action=commit_on_the_reread)
        try:
            applied = find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True,
                                   apply=True)
        finally:
            proxy.faults.clear()
    assert applied.deleted == [] and sorted(applied.kept_committed_meanwhile) == sorted(staged.written_files())
    assert spark.table(f"lake.stg.{short}").count() == 20
    assert all(s3_exists(s3_admin(lakehouse), f) for f in table_files(spark, f"lake.stg.{short}"))


def test_dry_run_lists_exactly_what_apply_deletes(lakehouse, orphaned):
    short, staged = orphaned
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        dry = find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True)
        applied = find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True, apply=True)
    assert sorted(u for u, _, _ in dry.orphans) == sorted(applied.deleted)
    assert set(staged.written_files()) <= set(applied.deleted)
    assert s3_keys(s3_admin(lakehouse), staged.location) == []


def test_bad_min_age_in_python(lakehouse):
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        with pytest.raises(ConfigError, match="positive"):
            find_orphans(client, "s3://warehouse/stg/x", table="stg.x", min_age_seconds=-1)


def test_table_located_elsewhere_with_its_data_path_here_keeps_its_files(spark, lakehouse, db, orphaned):
    """A table whose own location is elsewhere but whose `write.data.path` lies under the cleaned
    location: its data files there are referenced, not orphans. (Written through a catalog with the
    admin's S3 keys: vended credentials are scoped to the table's own location.)"""
    from tests.helpers import add_admin_spark_catalog

    short, staged = orphaned
    add_admin_spark_catalog(spark, lakehouse)
    other = unique("datapath")
    target = staged.location.rstrip("/").replace("s3a://", "s3://") + "/data"
    spark.sql(f"CREATE TABLE lakeadmin.stg.{other} (id BIGINT) USING iceberg "
              f"TBLPROPERTIES ('write.data.path'='{target}')")
    spark.sql(f"INSERT INTO lakeadmin.stg.{other} SELECT id FROM range(5)")
    files = table_files(spark, f"lakeadmin.stg.{other}")
    assert any(f.replace("s3a://", "s3://").startswith(target + "/") for f in files), files
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        applied = find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=MIN_AGE, allow_min_age_under_24h=True, apply=True)
    assert f"stg.{other}" in applied.tables
    assert set(staged.written_files()) <= set(applied.deleted)
    assert not {f.replace("s3a://", "s3://") for f in files} & set(applied.deleted)
    s3 = s3_admin(lakehouse)
    assert all(s3_exists(s3, f) for f in files)
    assert spark.table(f"lakeadmin.stg.{other}").count() == 5
