"""No catalog secret in process arguments: `configure()` keeps it off the
spark-submit command line of the driver JVM, and the CLI takes secrets from an environment
variable or a file instead of an argument."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SECRET, assert_one_line_error, run_cli

# A profile with explicit --uri: spark-conf needs no running catalog without --check.
BASE = ["spark-conf", "--profile", "seaweedfs", "--uri", "http://127.0.0.1:9", "--warehouse", "w", "--jars", "none"]


def test_driver_jvm_command_line_has_no_catalog_secret(spark):
    """The session fixture is built by configure() with the lakehouse's OAuth2 credential."""
    jvm = spark.sparkContext._jvm
    pid = jvm.java.lang.ProcessHandle.current().pid()
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert "spark.sql.catalog.lake.uri=" in cmdline, "not the driver JVM launched with our conf"
    assert SECRET not in cmdline and "spark.sql.catalog.lake.credential" not in cmdline
    # ...yet the JVM has it (handed over through Py4J) and the catalog authenticates with it.
    assert SECRET in spark.sparkContext.getConf().get("spark.sql.catalog.lake.credential")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.argv")
    assert spark.sql("SHOW NAMESPACES IN lake").count() >= 1


def test_driver_and_executor_jvms_of_a_cluster_have_no_secret_in_argv(lakehouse):
    """local-cluster: the executor JVMs are launched by the worker with a command line of their own."""
    info = lakehouse.info
    hadoop_secret = "hadoopArgvSecret-7Qx2"
    args = {"uri": info.iceberg_uri, "warehouse": info.warehouse, "credential": info.credential,
            "hadoop_secret": hadoop_secret}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1].joinpath("jobs", "secret_argv_job.py")), json.dumps(args)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[0][len("RESULT "):])
    assert result["namespaces"] >= 0 and result["executors"], "no executor JVM found"
    assert "spark.sql.catalog.lake.uri=" in result["driver"]
    for cmdline in [result["driver"], *result["executors"]]:
        assert SECRET not in cmdline and ".credential" not in cmdline
        # fs.s3a.access.key, fs.azure.account.key.<account>, fs.gs...private.key: secret-shaped too.
        assert hadoop_secret not in cmdline and "fs.azure.account.key" not in cmdline
    # The executors' copies of the jars (~110 MB each) are gone with the job (tests/jobs/local_cluster.py).
    assert result["work_dir_used"] and not Path(result["work_dir"]).exists(), result["work_dir"]


@pytest.mark.parametrize("name", ["credential", "token"])
def test_cli_reads_secrets_from_env_and_file(tmp_path, name):
    value = "client-id:" + SECRET if name == "credential" else SECRET
    from_env = run_cli(*BASE, f"--{name}-env", "PCE_TEST_SECRET", "--show-secrets", "--format", "defaults",
                       env={"PCE_TEST_SECRET": value})
    assert from_env.returncode == 0, from_env.stderr
    assert f"spark.sql.catalog.lake.{name} {value}" in from_env.stdout.splitlines()
    secret_file = tmp_path / "secret"
    secret_file.write_text(value + "\n")
    from_file = run_cli(*BASE, f"--{name}-file", str(secret_file), "--format", "defaults", "--show-secrets")
    assert from_file.returncode == 0, from_file.stderr
    assert f"spark.sql.catalog.lake.{name} {value}" in from_file.stdout.splitlines()


def test_cli_secret_sources_fail_in_one_line(tmp_path):
    missing_var = run_cli(*BASE, "--credential-env", "PCE_TEST_NO_SUCH_VAR", env={"PCE_TEST_NO_SUCH_VAR": ""})
    assert_one_line_error(missing_var, "--credential-env PCE_TEST_NO_SUCH_VAR", "not set")
    missing_file = run_cli(*BASE, "--token-file", str(tmp_path / "absent"))
    assert_one_line_error(missing_file, "--token-file", "absent", "cannot read it")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert_one_line_error(run_cli(*BASE, "--token-file", str(empty)), "is empty")
    both = run_cli(*BASE, "--credential", "a:b", "--credential-env", "X")
    assert_one_line_error(both, "only one of --credential, --credential-env and --credential-file")
