"""The CLI as a user meets it: one-line errors (exit 2, no traceback, no secret) and spark-conf output."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from pyspark_catalog_ext.ports import free_port
from pyspark_catalog_ext.secret_keys import REDACTION_REGEX
from pyspark_catalog_ext.spark.jvm_deps.jars import MAVEN_PACKAGES
from tests.conftest import assert_one_line_error, run_cli
from tests.helpers import busy_port

SECRET = "cs-not-a-lakehouse-key-3f9"  # a client secret the CLI must never print


def _lake_args(lakehouse, **over) -> list[str]:
    args = {"--uri": lakehouse.info.iceberg_uri, "--warehouse": "warehouse", "--credential": lakehouse.info.credential, **over}
    return ["spark-conf", "--profile", "seaweedfs", "--jars", "none", "--check", *[x for kv in args.items() for x in kv]]


def test_unknown_profile():
    assert_one_line_error(run_cli("spark-conf", "--profile", "nimbus"), "unknown profile 'nimbus'", "polaris")


def test_bad_uri():
    assert_one_line_error(run_cli("spark-conf", "--profile", "polaris", "--uri", "ftp://x", "--credential", "a:b"), "not an http(s) URL")


def test_catalog_unreachable():
    port = free_port()
    proc = run_cli("spark-conf", "--profile", "seaweedfs", "--uri", f"http://127.0.0.1:{port}", "--credential", "a:b", "--jars", "none", "--check")
    assert_one_line_error(proc, "cannot reach the catalog")


def test_wrong_credentials(lakehouse):
    proc = run_cli(*_lake_args(lakehouse, **{"--credential": "lakeadmin:not-the-secret"}))
    line = assert_one_line_error(proc, "rejected the credentials", "HTTP 401")
    assert "not-the-secret" not in line


def test_wrong_warehouse(lakehouse):
    assert_one_line_error(run_cli(*_lake_args(lakehouse, **{"--warehouse": "nope"})), "warehouse 'nope' not found", "HTTP 404")


def test_java_missing_and_too_old(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # the interpreter is run by absolute path; no java anywhere
    proc = subprocess.run([sys.executable, "-m", "pyspark_catalog_ext.cli", "demo"], capture_output=True, text=True, env=env, timeout=60)
    assert_one_line_error(proc, "java not found", "JAVA_HOME")
    old = tmp_path / "jdk8" / "bin"
    old.mkdir(parents=True)
    (old / "java").write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    (old / "java").chmod(0o755)
    assert_one_line_error(run_cli("demo", env={"JAVA_HOME": str(old.parent)}), "Java 1.8.0_392", "too old")


def test_port_in_use():
    with busy_port() as port:
        assert_one_line_error(run_cli("local", "up", "--iceberg-port", str(port)), f"port {port} on 127.0.0.1 is already in use")


def test_credential_seconds_too_low():
    assert_one_line_error(run_cli("local", "up", "--credential-seconds", "60"), "minimum of 900")


def test_spark_conf_submit_masks_secrets_unless_asked():
    base = ["spark-conf", "--profile", "polaris", "--uri", "https://polaris.example.com/api/catalog", "--warehouse", "prod",
            "--credential", f"client:{SECRET}", "--jars", "maven"]
    proc = run_cli(*base)
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout and "spark.sql.catalog.lake.credential=***" in proc.stdout
    assert "--show-secrets" in proc.stderr
    tokens = shlex.split(proc.stdout.replace("\\\n", " "))
    assert tokens[tokens.index("--packages") + 1] == MAVEN_PACKAGES
    assert tokens[tokens.index("--jars") + 1].endswith(".jar")  # the shim rides in --jars
    confs = dict(tokens[i + 1].split("=", 1) for i, t in enumerate(tokens) if t == "--conf")
    assert confs["spark.redaction.regex"] == REDACTION_REGEX
    assert confs["spark.sql.catalog.lake.catalog-impl"] == "io.catalogext.shim.ExtRESTCatalog"
    shown = run_cli(*base, "--show-secrets")
    assert shown.returncode == 0 and f"spark.sql.catalog.lake.credential=client:{SECRET}" in shown.stdout


def test_spark_conf_store_adds_the_sdk_bundle_and_names_the_stores():
    base = ["spark-conf", "--profile", "polaris", "--uri", "https://polaris.example.com/api/catalog", "--warehouse", "prod",
            "--credential", "client:x", "--jars", "maven", "--spark", "3.5", "--iceberg", "1.11", "--format", "defaults"]
    proc = run_cli(*base, "--store", "adls")
    assert proc.returncode == 0, proc.stderr
    assert "spark.sql.catalog.lake.io-impl io.catalogext.shim.RefreshingResolvingFileIO" in " ".join(proc.stdout.split())
    assert "spark.sql.catalog.lake.catalog-ext.stores adls" in " ".join(proc.stdout.split())
    assert "org.apache.iceberg:iceberg-azure-bundle:1.10.0" in proc.stdout
    bad = run_cli(*base, "--store", "hdfs")
    assert bad.returncode == 2 and "invalid choice: 'hdfs'" in bad.stderr


def test_spark_conf_takes_a_secret_setting_from_the_environment():
    # A header-carried key (header.X-Api-Key) is a secret: --conf-env KEY=VAR keeps it out of argv,
    # and the output masks it like the catalog credential.
    base = ["spark-conf", "--profile", "polaris", "--uri", "https://polaris.example.com/api/catalog", "--warehouse", "prod",
            "--token-env", "API_KEY_VAR", "--jars", "none", "--conf-env", "spark.sql.catalog.lake.header.X-Api-Key=API_KEY_VAR"]
    proc = run_cli(*base, env={"API_KEY_VAR": SECRET})
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout and "spark.sql.catalog.lake.header.X-Api-Key=***" in proc.stdout
    shown = run_cli(*base, "--show-secrets", env={"API_KEY_VAR": SECRET})
    assert f"spark.sql.catalog.lake.header.X-Api-Key={SECRET}" in shown.stdout
    assert_one_line_error(run_cli(*base, env={"API_KEY_VAR": ""}), "--conf-env", "API_KEY_VAR", "not set")
    assert_one_line_error(run_cli(*base[:-1], "no-equals-sign"), "--conf-env", "KEY=VAR")


def test_spark_conf_defaults_file_offline_jars():
    proc = run_cli("spark-conf", "--profile", "r2", "--uri", "https://catalog.cloudflarestorage.com/a/b", "--warehouse", "a_b", "--token", "tok-123", "--format", "defaults")
    assert proc.returncode == 0, proc.stderr
    assert "tok-123" not in proc.stdout
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    jars = lines["spark.jars"].split(",")
    # Apache's runtime and bundle for this venv's pyspark 4.1, from Maven Central, and the shim.
    assert [os.path.basename(j) for j in jars[:2]] == ["iceberg-spark-runtime-4.1_2.13-1.12.0.jar", "iceberg-aws-bundle-1.12.0.jar"]
    assert len(jars) == 3 and "shim" in os.path.basename(jars[2])
    assert all(os.path.isfile(j) for j in jars)
    assert lines["spark.sql.catalog.lake.token"] == "***"


@pytest.mark.parametrize("argv", [[], ["--version"]])
def test_help_and_version(argv):
    proc = run_cli(*argv)
    assert ("usage:" in proc.stdout) if not argv else ("pyspark-catalog-ext 0.1.0" in proc.stdout)
