"""spark-submit of a plain PySpark job with the extension's settings in a properties file: the
driver JVM exits right after the job's last statement, and the extension opens no listening socket
of its own in it (executors reach the driver over Spark's plugin RPC)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyspark
import pytest

from pyspark_catalog_ext.spark.conf import spark_conf
from tests.helpers import expiring_proxies

SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
JOB = Path(__file__).resolve().parents[1].joinpath("jobs", "submit_job.py")


def submit(tmp_path: Path, conf: dict[str, str], args: dict) -> tuple[subprocess.CompletedProcess, float]:
    """Runs the job; the secret-bearing settings go in a properties file, not on the command line."""
    props = tmp_path / f"spark-{uuid.uuid4().hex[:8]}.conf"
    props.write_text("".join(f"{k} {v}\n" for k, v in conf.items()))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run([str(SPARK_SUBMIT), "--master", "local[2]", "--properties-file", str(props),
                           str(JOB), json.dumps(args)], capture_output=True, text=True, timeout=300, env=env)
    return proc, time.time()


def parsed(proc: subprocess.CompletedProcess, key: str) -> str:
    lines = [line[len(key) + 1:] for line in proc.stdout.splitlines() if line.startswith(key + " ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return lines[0]


@pytest.fixture(scope="module")
def runs(lakehouse, tmp_path_factory):
    """The same CTAS job with the extension (and attach()) and with plain Iceberg."""
    tmp = tmp_path_factory.mktemp("submit")
    base = {"spark.ui.enabled": "false"}
    ext_conf = {**spark_conf("local", lakehouse=lakehouse), **base}
    plain_conf = {**spark_conf("local", lakehouse=lakehouse, shim=False), **base}
    suffix = uuid.uuid4().hex[:6]
    ext = submit(tmp, ext_conf, {"attach": True, "table": f"lake.db.submit_ext_{suffix}", "rows": 20000})
    plain = submit(tmp, plain_conf, {"attach": False, "table": f"lake.db.submit_plain_{suffix}", "rows": 20000})
    return {"ext": ext, "plain": plain}


def test_spark_submit_job_exits_right_after_its_last_statement(runs):
    proc, ended = runs["ext"]
    assert parsed(proc, "COUNT") == "20000"
    exit_delay = ended - float(parsed(proc, "LAST"))
    print(f"\nlast statement (spark.stop()) to process exit: {exit_delay:.1f} s")
    assert exit_delay < 15, f"the driver JVM lingered {exit_delay:.0f} s after the job's last statement"


def test_extension_opens_no_listening_socket_in_the_driver(runs):
    with_ext = json.loads(parsed(runs["ext"][0], "LISTENING"))
    without = json.loads(parsed(runs["plain"][0], "LISTENING"))
    # Ports are random; what must match is how many: Spark's RPC, block manager and Py4J gateway.
    assert len(with_ext) == len(without), (with_ext, without)


# ---- configuration alone: no Python call, no package import -------------------------------------

LIFETIME = 6  # seconds the proxies let a credential live


@pytest.fixture(scope="module")
def expiring(lakehouse):
    """Loopback proxies that make SeaweedFS's vended credentials die after LIFETIME seconds."""
    with expiring_proxies(lakehouse, LIFETIME, expire_now=True) as proxies:
        yield proxies


def cli_properties(tmp_path: Path, lakehouse, catalog_uri: str) -> Path:
    """`pyspark-catalog-ext spark-conf --format defaults`, refresh knobs as plain --conf: the file
    a cluster admin would put in spark-defaults.conf."""
    from tests.conftest import run_cli

    knobs = {"check-interval-ms": 1000, "min-ahead-ms": 0, "lifetime-fraction": 0.4}
    args = ["spark-conf", "--profile", "local", "--uri", catalog_uri, "--warehouse", lakehouse.info.warehouse,
            "--credential", lakehouse.info.credential, "--format", "defaults", "--show-secrets",
            "--conf", "spark.ui.enabled=false"]
    for key, value in knobs.items():
        args += ["--conf", f"spark.sql.catalog.lake.catalog-ext.refresh.{key}={value}"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / f"defaults-{uuid.uuid4().hex[:6]}.conf"
    path.write_text(proc.stdout)
    return path


def slow_ctas(table: str) -> str:
    # 2 tasks of 1500 rows, 6 ms each: ~9 s per task, writing a file per row: past a lifetime.
    return (f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1') "
            "AS SELECT id, id * 3 AS v FROM range(0, 3000, 1, 2) "
            "WHERE java_method('java.lang.Thread', 'sleep', CAST(6 AS BIGINT)) IS NOT NULL")


def assert_outlived(catalog_proxy, s3_proxy, table: str) -> None:
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
    restages = catalog_proxy.count(kind="stage-create", table=table) - 1
    assert restages >= 1, "the CTAS never needed a refresh: make it slower"


def test_spark_sql_cli_with_only_spark_conf_outlives_credentials(lakehouse, expiring, tmp_path):
    catalog_proxy, s3_proxy = expiring
    s3_proxy.reset_counters()
    catalog_proxy.reset_counters()
    props = cli_properties(tmp_path, lakehouse, catalog_proxy.url)
    table = f"db.sql_cli_{uuid.uuid4().hex[:6]}"
    proc = subprocess.run([str(SPARK_SUBMIT.with_name("spark-sql")), "--master", "local[2]", "--properties-file",
                           str(props), "-e", f"CREATE NAMESPACE IF NOT EXISTS lake.db; {slow_ctas('lake.' + table)};"
                           f" SELECT count(*) FROM lake.{table};"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "3000", proc.stdout
    assert_outlived(catalog_proxy, s3_proxy, table)


def test_python_job_that_never_imports_the_package_outlives_credentials(lakehouse, expiring, pyiceberg_catalog,
                                                                        tmp_path):
    catalog_proxy, s3_proxy = expiring
    s3_proxy.reset_counters()
    catalog_proxy.reset_counters()
    # Its own namespace: run alone, on a fresh lakehouse, no earlier test has made lake.db.
    pyiceberg_catalog.create_namespace_if_not_exists("db")
    props = cli_properties(tmp_path, lakehouse, catalog_proxy.url)
    table = f"db.no_import_{uuid.uuid4().hex[:6]}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    proc = subprocess.run([str(SPARK_SUBMIT), "--master", "local[2]", "--properties-file", str(props),
                           str(Path(__file__).resolve().parents[1].joinpath("jobs", "config_only_job.py")),
                           json.dumps({"ctas": slow_ctas("lake." + table), "table": "lake." + table})],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert parsed(proc, "COUNT") == "3000"
    assert parsed(proc, "IMPORTED") == "False"
    assert_outlived(catalog_proxy, s3_proxy, table)
