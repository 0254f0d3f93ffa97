"""`staged cleanup` deletes exactly what it listed, only where the catalog keeps tables, only files
older than 24 h unless told otherwise, and takes its S3 secret from the environment or a file.
Every refusal is checked to leave the files in S3."""

from __future__ import annotations

import json
import time

import pytest

from pyspark_catalog_ext.errors import CleanupRefused, ConfigError
from pyspark_catalog_ext.staging.cleanup import find_orphans
from tests.conftest import SECRET, assert_one_line_error, run_cli
from tests.spark.test_cleanup import client_for, orphaned  # noqa: F401
from tests.spark.test_staging import db, s3_admin, s3_exists, unique  # noqa: F401


def _cli(lakehouse, *args: str, env: dict | None = None):
    info = lakehouse.info
    return run_cli("staged", "cleanup", "--uri", info.iceberg_uri, "--warehouse", info.warehouse,
                   "--credential-env", "PCE_TEST_CREDENTIAL", *args,
                   env={"PCE_TEST_CREDENTIAL": info.credential, **(env or {})})


def _split(uri: str) -> tuple[str, str]:
    bucket, key = uri.replace("s3a://", "s3://")[5:].split("/", 1)
    return bucket, key


def test_keys_with_hash_question_mark_percent_and_spaces_are_deleted_exactly(lakehouse, orphaned):
    """An orphan `a#1.parquet` is deleted, a live `a` beside it is kept: the listed key goes to
    DeleteObjects unchanged (a URI re-parse cut it at `#` or `?`)."""
    short, staged = orphaned
    s3 = s3_admin(lakehouse)
    bucket, prefix = _split(staged.location.rstrip("/") + "/data")
    odd = [f"{prefix}/a#1.parquet", f"{prefix}/a?x=1.parquet", f"{prefix}/b%20c%2F.parquet",
           f"{prefix}/with space.parquet"]
    for key in odd:
        s3.put_object(Bucket=bucket, Key=key, Body=b"orphan")
    time.sleep(3)
    started = time.time()
    s3.put_object(Bucket=bucket, Key=f"{prefix}/a", Body=b"live")  # a running job's file: too young
    now = started - 1.5  # LastModified has 1 s resolution: `a` is under 1 s old, the odd keys over 1.5 s
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        kw = dict(table=f"stg.{short}", min_age_seconds=1, allow_min_age_under_24h=True, now=now)
        dry = find_orphans(client, staged.location, **kw)
        odd_uris = {f"s3://{bucket}/{k}" for k in odd}
        assert odd_uris <= {u for u, _, _ in dry.orphans}
        assert f"s3://{bucket}/{prefix}/a" not in {u for u, _, _ in dry.orphans}
        applied = find_orphans(client, staged.location, apply=True, **kw)
    assert sorted(applied.deleted) == sorted(u for u, _, _ in dry.orphans), "dry run and --apply disagree"
    assert s3.get_object(Bucket=bucket, Key=f"{prefix}/a")["Body"].read() == b"live", "the live object was deleted"
    assert [k for k in odd if s3_exists(s3, f"s3://{bucket}/{k}")] == [], "an orphan with an odd name stayed"


def test_a_prefix_the_catalog_has_no_table_or_namespace_at_is_refused(lakehouse, orphaned):
    """Raw data in a plain bucket, and a sub-folder of a table: refused (one line), kept; the
    flag that names the risk lets it through."""
    short, staged = orphaned
    s3 = s3_admin(lakehouse)
    raw = unique("raw").replace("_", "-")
    s3.create_bucket(Bucket=raw)
    s3.put_object(Bucket=raw, Key="hive/t/part-0.parquet", Body=b"hive data")
    admin = ["--s3-endpoint", lakehouse.info.s3_endpoint, "--s3-access-key", lakehouse.info.access_key,
             "--s3-secret-key-env", "PCE_TEST_S3_SECRET", "--min-age", "86400"]
    env = {"PCE_TEST_S3_SECRET": lakehouse.info.secret_key}
    for location in (f"s3://{raw}/hive/t", staged.location.rstrip("/") + "/data"):
        proc = _cli(lakehouse, "--location", location, "--apply", *admin, env=env)
        assert_one_line_error(proc, "not the location of a table or namespace", "--allow-non-table-prefix",
                              "nothing was deleted")
    assert s3_exists(s3, f"s3://{raw}/hive/t/part-0.parquet")
    assert all(s3_exists(s3, f) for f in staged.written_files())
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        with pytest.raises(CleanupRefused, match="not the location of a table"):
            find_orphans(client, f"s3://{raw}/hive/t", s3=s3, apply=True)
        # The flag that names the risk: listed (a dry run; the raw file is younger than the 3-day default).
        report = find_orphans(client, f"s3://{raw}/hive/t", s3=s3, allow_non_table_prefix=True)
        assert report.listed == 1 and report.too_young == 1
        # The staged table's own location (where the catalog stages it) stays allowed.
        assert find_orphans(client, staged.location, table=f"stg.{short}").too_young >= 1
    assert s3_exists(s3, f"s3://{raw}/hive/t/part-0.parquet")


def test_min_age_under_24h_needs_its_own_flag(lakehouse, orphaned):
    short, staged = orphaned
    proc = _cli(lakehouse, "--location", staged.location, "--table", f"stg.{short}", "--apply", "--min-age", "3600")
    assert_one_line_error(proc, "--min-age 3600 is under 24 h", "--allow-min-age-under-24h")
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        with pytest.raises(ConfigError, match="under 24 h"):
            find_orphans(client, staged.location, table=f"stg.{short}", min_age_seconds=86399, apply=True)
    assert all(s3_exists(s3_admin(lakehouse), f) for f in staged.written_files())
    proc = _cli(lakehouse, "--location", staged.location, "--table", f"stg.{short}", "--apply", "--min-age", "0.001",
                "--allow-min-age-under-24h")
    assert proc.returncode == 0, proc.stderr
    assert not any(s3_exists(s3_admin(lakehouse), f) for f in staged.written_files())


@pytest.mark.parametrize("location_tail", ["/../..", "/%2e%2e/%2E%2E", "/%252e%252e", "/./data"])
def test_dot_segments_in_the_location_are_refused(lakehouse, orphaned, location_tail):
    short, staged = orphaned
    location = staged.location.rstrip("/") + location_tail
    with client_for(lakehouse, lakehouse.info.iceberg_uri) as client:
        with pytest.raises(CleanupRefused, match="'..' path segment") as err:
            find_orphans(client, location, table=f"stg.{short}", min_age_seconds=1, allow_min_age_under_24h=True,
                         allow_non_table_prefix=True, apply=True)
    assert "\n" not in str(err.value)
    assert all(s3_exists(s3_admin(lakehouse), f) for f in staged.written_files())


def test_s3_secret_from_an_environment_variable_or_a_file(lakehouse, orphaned, tmp_path):
    """The secret never needs to be an argument (visible in `ps`); the argument form still works."""
    short, staged = orphaned
    info = lakehouse.info
    base = ["--location", staged.location, "--table", f"stg.{short}", "--s3-endpoint", info.s3_endpoint,
            "--s3-access-key", info.access_key,
            "--min-age", "0.001", "--allow-min-age-under-24h", "--json"]
    secret_file = tmp_path / "s3-secret"
    secret_file.write_text(info.secret_key + "\n")
    expected = sorted(staged.written_files())
    for extra, env in ((["--s3-secret-key-env", "PCE_TEST_S3_SECRET"], {"PCE_TEST_S3_SECRET": info.secret_key}),
                       (["--s3-secret-key-file", str(secret_file)], None),
                       (["--s3-secret-key", info.secret_key], None)):
        proc = _cli(lakehouse, *base, *extra, env=env)
        assert proc.returncode == 0, proc.stderr
        assert sorted(o["uri"] for o in json.loads(proc.stdout)["orphans"]) == expected
        assert SECRET not in proc.stderr
    missing = _cli(lakehouse, *base, "--s3-secret-key-env", "PCE_TEST_UNSET_VAR")
    assert_one_line_error(missing, "--s3-secret-key-env PCE_TEST_UNSET_VAR", "not set")
    both = _cli(lakehouse, *base, "--s3-secret-key-file", str(secret_file), "--s3-secret-key", "x")
    assert_one_line_error(both, "only one of --s3-secret-key, --s3-secret-key-env and --s3-secret-key-file")
    assert all(s3_exists(s3_admin(lakehouse), f) for f in staged.written_files())
