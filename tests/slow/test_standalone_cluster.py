"""A real Spark standalone cluster (tests/standalone_cluster.py): a Master and two Workers, each a
process of its own with its own environment and work directory, one 1-core executor per Worker. Jobs
are submitted in client mode both ways users do, and the catalog's keys live LIFETIME seconds (the
loopback proxies of tests/helpers.py):

- spark-submit with only `spark-conf --jars packages` settings (Spark's Ivy resolves the stack from a
  `maven-repo` directory; the job never imports the package): a CTAS outlives 3 key lifetimes with
  exact rows, at one catalog request per table per renewal, whichever executor asks;
- configure() on a builder whose master is spark://: a Worker is killed mid-CTAS with its executor
  (as when its machine dies); Spark runs the lost task again on the other executor, the refresh goes
  on, and the rows are exact.

Both read /proc while the job runs: no catalog secret (nor any key the catalog vended) is in any
Worker's or executor's command line or environment, and each executor has its Worker's environment,
not the driver's.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from pyspark_catalog_ext.spark.shim_api import ShimStatus
from pyspark_catalog_ext.spark.status import status_by_table
from tests.conftest import ROOT, SECRET, run_cli
from tests.helpers import expiring_proxies
from tests.standalone_cluster import SPARK_HOME, WORKER_MARKER, ProcessWatch, StandaloneCluster

LIFETIME = 8  # seconds the proxies let a vended key live
FRACTION = 0.4  # the refresh policy's lifetime_fraction: renew with 40 % of a key's life left
JOBS = ROOT / "tests" / "jobs"  # where the job scripts live
DRIVER_MARKER = "CATALOG_EXT_TEST_DRIVER"
# Both executors must be up before the first task, so that each takes one of the CTAS's two tasks.
WAIT_FOR_EXECUTORS = {"spark.scheduler.minRegisteredResourcesRatio": "1.0",
                      "spark.scheduler.maxRegisteredResourcesWaitingTime": "180s",
                      "spark.executor.memory": "512m", "spark.executor.cores": "1"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = time.monotonic()
    with StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2, cores=1, memory="1g") as c:
        print(f"\nstandalone cluster (Master + 2 Workers) up in {time.monotonic() - started:.1f} s at {c.url}")
        yield c


@pytest.fixture(scope="module")
def proxies(lakehouse):
    with expiring_proxies(lakehouse, LIFETIME, expire_now=True) as p:
        yield p


def slow_ctas(table: str, rows_per_task: int, ms: int) -> str:
    """Two tasks of rows_per_task rows, `ms` each, that write a file per 1,000 rows (Iceberg checks
    the target size every 1,000 rows), so both ask for keys throughout."""
    return (f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1') "
            f"AS SELECT id, id * 3 AS v FROM range(0, {2 * rows_per_task}, 1, 2) "
            f"WHERE java_method('java.lang.Thread', 'sleep', CAST({ms} AS BIGINT)) IS NOT NULL")


def driver_env(credential: str) -> dict[str, str]:
    """The driver's environment: the test's, plus the catalog secret (as `--credential-env` reads
    it) and a marker; neither may reach a Worker or an executor."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"CATALOG_CREDENTIAL": credential, DRIVER_MARKER: "driver-only", "SPARK_LOCAL_IP": "127.0.0.1",
                "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    return env


def run_job(cmd: list[str], env: dict[str, str], cwd: Path, on_started=None, timeout: float = 600) -> dict:
    """Run a job, call `on_started()` when it prints STARTED, return its RESULT."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    assert proc.stdout is not None
    result = None
    deadline = time.monotonic() + timeout
    try:
        for line in proc.stdout:
            if line.startswith("STARTED") and on_started is not None:
                on_started()
            elif line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
            if time.monotonic() > deadline:
                break
        _, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and result is not None, err[-5000:]
    return result


def assert_no_secret_on_the_cluster(watch: ProcessWatch, secrets: set[str]) -> None:
    """No secret in any Worker's or executor's command line or environment (read from /proc while
    the job ran), and the executors have their Worker's environment, not the driver's."""
    assert len(secrets) > 3, secrets
    executors = watch.executors()
    assert len(executors) >= 2, f"saw {sorted(watch.seen)}"
    for name, (argv, env) in watch.seen.items():
        text = argv + "\n" + "\n".join(f"{k}={v}" for k, v in env.items())
        leaked = [s[:4] + "..." for s in secrets if s in text]
        assert not leaked, f"secrets {leaked} in the command line or environment of {name}"
        assert "CATALOG_CREDENTIAL" not in env and DRIVER_MARKER not in env, f"{name} has the driver's environment"
        assert ".credential=" not in argv, f"{name}'s command line names the catalog credential"
    for name, (_, env) in executors.items():
        assert env.get(WORKER_MARKER) == name.split(" ")[0], f"{name} does not have its Worker's environment"


def refresh_counts(catalog_proxy, table: str, restage_refreshes: int, seconds: float) -> int:
    """Catalog requests for the table beyond its first stage-create, checked to be one per renewal
    the driver made (not one per executor or task), and as many as the keys' lifetimes needed."""
    restages = catalog_proxy.count(kind="stage-create", table=table) - 1
    assert restages == restage_refreshes, (restages, restage_refreshes)
    assert 3 <= restages <= math.ceil(seconds / (LIFETIME * (1 - FRACTION))) + 1, (restages, seconds)
    return restages


def test_spark_submit_with_packages_settings_outlives_three_key_lifetimes(cluster, proxies, lakehouse, tmp_path):
    """spark-submit in client mode to the standalone master with `spark-conf --jars packages
    --format defaults` settings alone: Ivy resolves the stack from the `maven-repo` directory and
    the executors fetch it from the driver; the job never imports the package."""
    cluster.ensure_workers()
    catalog_proxy, s3_proxy = proxies
    repo = tmp_path / "repo"
    made = run_cli("maven-repo", str(repo))
    assert made.returncode == 0, made.stderr
    env = driver_env(lakehouse.info.credential)
    args = ["spark-conf", "--jars", "packages", "--repository", str(repo), "--uri", catalog_proxy.url,
            "--warehouse", lakehouse.info.warehouse, "--credential-env", "CATALOG_CREDENTIAL", "--format", "defaults",
            "--show-secrets", "--conf", "spark.ui.enabled=false"]
    for key, value in {**WAIT_FOR_EXECUTORS, **{f"spark.sql.catalog.lake.catalog-ext.refresh.{k}": v for k, v in
                                                {"check-interval-ms": 1000, "min-ahead-ms": 0, "lifetime-fraction": FRACTION}.items()}}.items():
        args += ["--conf", f"{key}={value}"]
    conf = run_cli(*args, env={"CATALOG_CREDENTIAL": lakehouse.info.credential})
    assert conf.returncode == 0, conf.stderr
    props = tmp_path / "catalog.conf"
    props.write_text(conf.stdout)
    props.chmod(0o600)
    name = f"sub_{uuid.uuid4().hex[:6]}"
    table = f"db.{name}"
    rows_per_task, ms = 6000, 5  # two tasks of ~30 s, a file each ~5 s: past 3 lifetimes
    catalog_proxy.reset_counters()
    s3_proxy.reset_counters()
    catalog_proxy.secrets_handed_out.clear()
    started = time.monotonic()
    with ProcessWatch(cluster) as watch:
        result = run_job([str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url, "--deploy-mode", "client",
                          "--properties-file", str(props), str(JOBS / "cluster_submit_job.py"),
                          json.dumps({"namespace": "lake.db", "table": f"lake.{table}",
                                      "ctas": slow_ctas(f"lake.{table}", rows_per_task, ms)})],
                         env, tmp_path)
    elapsed = time.monotonic() - started
    assert result["imported"] is False
    assert result["executors"] == 2
    assert (result["count"], result["sum"]) == (2 * rows_per_task, 3 * sum(range(2 * rows_per_task)))
    assert result["seconds"] > 3 * LIFETIME, result["seconds"]
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
    status = ShimStatus.from_json(result["status"])  # SQL catalog_ext_status(), read as attach() reads it
    assert status.plugin.served > 0, "the executors never asked the driver"
    entry = {s.name: s for s in status_by_table(status.entries)}[f"lake.{table}"]
    assert entry.failure_count == 0
    restages = refresh_counts(catalog_proxy, table, entry.refreshes_by_strategy.get("re-stage", 0), result["seconds"])
    assert len(s3_proxy.forwarded_by_key) >= 3  # the writes went on with renewed keys, lifetime after lifetime
    assert_no_secret_on_the_cluster(watch, {SECRET, lakehouse.info.credential, *catalog_proxy.secrets_handed_out})
    print(f"\nspark-submit on the standalone cluster: CTAS {result['seconds']:.1f} s ({result['seconds'] / LIFETIME:.1f} key lifetimes), "
          f"{restages} renewals = {restages} catalog requests, job {elapsed:.1f} s")


def test_configure_job_survives_a_worker_killed_mid_ctas(cluster, proxies, lakehouse, tmp_path):
    """configure() on a spark:// builder; after the first renewal a Worker and its executor are
    killed: its task runs again on the other executor, renewals go on, the rows are exact."""
    cluster.ensure_workers()
    catalog_proxy, s3_proxy = proxies
    name = f"kill_{uuid.uuid4().hex[:6]}"
    table = f"db.{name}"
    rows_per_task, ms = 4000, 5  # two tasks of ~20 s; the lost one runs again after the other
    catalog_proxy.reset_counters()
    s3_proxy.reset_counters()
    catalog_proxy.secrets_handed_out.clear()
    killed: dict = {}

    def kill_after_first_renewal() -> None:
        deadline = time.monotonic() + 120
        while catalog_proxy.count(kind="stage-create", table=table) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        killed["restages_before"] = catalog_proxy.count(kind="stage-create", table=table) - 1
        killed["executors"] = cluster.kill_worker(1)
        killed["at"] = time.monotonic()

    args = {"master": cluster.url, "uri": catalog_proxy.url, "warehouse": lakehouse.info.warehouse,
            "namespace": "lake.db", "table": f"lake.{table}", "ctas": slow_ctas(f"lake.{table}", rows_per_task, ms),
            "conf": {**WAIT_FOR_EXECUTORS, "spark.ui.enabled": "true", "spark.ui.port": "0",
                     "spark.ui.showConsoleProgress": "false"}}
    env = driver_env(lakehouse.info.credential)
    env["PYTHONPATH"] = str(ROOT)
    with ProcessWatch(cluster) as watch:
        result = run_job([sys.executable, str(JOBS / "cluster_configure_job.py"), json.dumps(args)], env, tmp_path,
                         on_started=lambda: threading.Thread(target=kill_after_first_renewal, daemon=True).start())
    assert killed.get("executors"), f"no executor of worker2 was running to kill: {killed}"
    assert killed["restages_before"] >= 1
    assert (result["count"], result["sum"]) == (2 * rows_per_task, 3 * sum(range(2 * rows_per_task)))
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
    # Spark rescheduled: a task attempt was lost with its executor, and the same task succeeded on another.
    tasks = result["tasks"]
    lost = [t for t in tasks if t["status"] == "FAILED" and "ExecutorLostFailure" in t["error"]]
    assert lost, tasks
    for t in lost:
        redone = [r for r in tasks if (r["stage"], r["index"]) == (t["stage"], t["index"]) and r["status"] == "SUCCESS"]
        assert redone and redone[0]["executor"] != t["executor"], tasks
    # The refresh went on after the kill, at one catalog request per renewal.
    [entry] = [s for s in result["status"] if s["name"] == f"lake.{table}"]
    restages = refresh_counts(catalog_proxy, table, entry["by_strategy"].get("re-stage", 0), result["seconds"])
    assert restages > killed["restages_before"], (restages, killed)
    assert entry["failures"] == 0 and result["plugin"]["served"] > 0
    assert_no_secret_on_the_cluster(watch, {SECRET, lakehouse.info.credential, *catalog_proxy.secrets_handed_out})
    print(f"\nconfigure() on the standalone cluster, worker2 killed after {killed['restages_before']} renewal(s): CTAS "
          f"{result['seconds']:.1f} s, {len(lost)} task(s) lost and run again, {restages} renewals = {restages} catalog requests")
