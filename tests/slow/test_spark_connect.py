"""Spark Connect (Spark 4.1, Iceberg 1.12): a real Connect server started with `pyspark-catalog-ext
spark-conf` settings alone, a client venv with `pyspark-client` (no Py4J) and this package. A CTAS
from the client outlives its credentials (the loopback proxies make them live LIFETIME seconds);
status and commit outcomes come back through SQL `catalog_ext_status()`, and what needs Py4J is
refused in one line.

The venvs are cached under the worktree (.venvs/pyspark-4.1, shared with test_stack_matrix.py: full
pyspark for the server's Spark; .venvs/connect-4.1: pyspark-client + this package's dependencies
without pyspark, the package itself by a .pth path entry, as an editable install would add). The
Iceberg jars are what users get: `resolve_jars(stack=select_stack("4.1", ICEBERG))`, sha-pinned, from
Maven Central into the package's cache (copied from ~/.m2 when it holds the pinned file).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.helpers import free_port
from tests.slow.test_stack_matrix import spark_venv

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".venvs"
SPARK_VERSION = "4.1.*"
ICEBERG = "1.12.0"
LIFETIME = 8  # seconds the proxies let a credential live
CLIENT_JOB = ROOT / "tests" / "jobs" / "connect_client_job.py"
TWO_SESSIONS_JOB = ROOT / "tests" / "jobs" / "connect_two_sessions_job.py"


def _venv(name: str, *requirements: str, pth: Path | None = None) -> Path:
    """A cached venv under .venvs/ with `requirements` installed (once: a stamp records them)."""
    venv = VENVS / name
    python = venv / "bin" / "python"
    stamp = venv / ".pce-installed"
    wanted = "\n".join(requirements)
    if not stamp.is_file() or stamp.read_text() != wanted:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
                       check=True, timeout=900)
        stamp.write_text(wanted)
    if pth is not None:
        site = next((venv / "lib").glob("python3*/site-packages"))
        (site / "pyspark_catalog_ext_worktree.pth").write_text(f"{pth}\n")
    return python


@pytest.fixture(scope="module")
def spark_home() -> Path:
    python = spark_venv("4.1")
    out = subprocess.run([str(python), "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def client_python() -> Path:
    """pyspark-client and this package's dependencies, never the full pyspark (no Py4J in the venv)."""
    deps = [d for d in importlib.metadata.requires("pyspark-catalog-ext") or ()
            if "extra ==" not in d and not d.replace(" ", "").lower().startswith("pyspark")]
    python = _venv("connect-4.1", f"pyspark-client=={SPARK_VERSION}", *deps, pth=ROOT)
    check = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('py4j') is None)"],
                           capture_output=True, text=True, check=True)
    assert check.stdout.strip() == "True", "the client venv has py4j: the full pyspark got in"
    return python


@pytest.fixture(scope="module")
def expiring(lakehouse):
    from tests.servers import CatalogProxy, S3ExpiryProxy

    with S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)) as s3_proxy:
        with CatalogProxy(lakehouse.info.iceberg_uri, short_lifetime_seconds=LIFETIME,
                          s3_endpoint=s3_proxy.url, s3_proxy=s3_proxy) as catalog_proxy:
            s3_proxy.max_age_seconds = LIFETIME
            yield catalog_proxy, s3_proxy


@pytest.fixture(scope="module")
def connect_server(lakehouse, expiring, spark_home, tmp_path_factory):
    """spark-submit SparkConnectServer with the settings `spark-conf --format defaults` prints (in a
    properties file: secrets stay off the command line), plus the Spark 4.1 jars and the shim jar."""
    from pyspark_catalog_ext.spark.jars import resolve_jars, select_stack
    from pyspark_catalog_ext.spark.shim_build import shim_jar

    catalog_proxy, _ = expiring
    tmp = tmp_path_factory.mktemp("connect")
    port = free_port()
    args = ["spark-conf", "--profile", "local", "--uri", catalog_proxy.url, "--warehouse", lakehouse.info.warehouse,
            "--credential", lakehouse.info.credential, "--format", "defaults", "--show-secrets", "--jars", "none",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", "spark.connect.grpc.port.maxRetries=20"]
    for key, value in {"check-interval-ms": 1000, "min-ahead-ms": 0, "lifetime-fraction": 0.4}.items():
        args += ["--conf", f"spark.sql.catalog.lake.catalog-ext.refresh.{key}={value}"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    stack = select_stack("4.1", ICEBERG)
    jars = [str(p) for p in resolve_jars(stack=stack)] + [str(shim_jar())]
    assert [Path(j).name for j in jars[:2]] == [f"iceberg-spark-runtime-4.1_2.13-{ICEBERG}.jar", f"iceberg-aws-bundle-{ICEBERG}.jar"]
    props = tmp / "connect-defaults.conf"
    props.write_text(proc.stdout + f"\nspark.jars {','.join(jars)}\n")
    props.chmod(0o600)
    log = tmp / "connect-server.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    env["SPARK_HOME"] = str(spark_home)
    started = time.monotonic()
    with log.open("wb") as out:
        server = subprocess.Popen([str(spark_home / "bin" / "spark-submit"), "--master", "local[2]",
                                   "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                                   "--properties-file", str(props)],
                                  stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        # Ready when the server logs where it listens: a connectable port alone may be someone else's
        # (the port can be taken between free_port() and the bind; maxRetries then moves on from it).
        while (found := re.search(r"Spark Connect server started at: \S*?:(\d+)", log.read_text(errors="replace"))) is None:
            if server.poll() is not None:
                pytest.fail(f"the Connect server exited ({server.returncode}): {log.read_text()[-3000:]}")
            if time.monotonic() - started > 180:
                pytest.fail(f"the Connect server did not start within 180 s: {log.read_text()[-3000:]}")
            time.sleep(0.5)
        port = int(found.group(1))
        print(f"\nConnect server up in {time.monotonic() - started:.1f} s")
        yield {"remote": f"sc://127.0.0.1:{port}", "log": log, "conf": props}
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


def _slow_ctas(table: str) -> str:
    # 2 tasks of 1000 rows, 8 ms each: ~8 s per task, a file per row: past a credential lifetime.
    return (f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1') "
            "AS SELECT id, id * 3 AS v FROM range(0, 2000, 1, 2) "
            "WHERE java_method('java.lang.Thread', 'sleep', CAST(8 AS BIGINT)) IS NOT NULL")


def test_connect_client_ctas_outlives_credentials_and_reads_status_through_sql(connect_server, client_python, expiring):
    catalog_proxy, s3_proxy = expiring
    s3_proxy.reset_counters()
    catalog_proxy.reset_counters()
    table = f"lake.db.connect_{uuid.uuid4().hex[:6]}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    proc = subprocess.run([str(client_python), str(CLIENT_JOB),
                           json.dumps({"remote": connect_server["remote"], "table": table, "ctas": _slow_ctas(table)})],
                          capture_output=True, text=True, timeout=300, env=env)
    lines = [line[len("RESULT "):] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:] + connect_server["log"].read_text()[-3000:]
    result = json.loads(lines[0])

    assert result["count"] == 2000
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected  # no write ever used a dead key
    assert catalog_proxy.count(kind="stage-create", table=table.removeprefix("lake.")) >= 2, "no refresh was needed"
    assert result["py4j_imported"] is False
    assert result["manager"] == "ConnectCredentialManager" and result["catalogs"] == ["lake"]
    [status] = result["status"]
    assert status["refresh_count"] >= 1 and status["failure_count"] == 0 and status["expires_at"]
    assert [c["outcome"] for c in result["commits"] if c["kind"] == "commit"] == ["committed"]
    for name, message in result["refusals"].items():
        assert message and "\n" not in message and "Spark Connect" in message, (name, message)
    assert "catalog-ext.refresh" in result["refusals"]["policy"]


def _catalog_props(conf: Path, catalog: str) -> dict[str, str]:
    """The properties of Spark catalog `catalog` in a spark-defaults file (`key value` lines)."""
    prefix = f"spark.sql.catalog.{catalog}."
    props = {}
    for line in conf.read_text().splitlines():
        key, _, value = line.partition(" ")
        if key.startswith(prefix):
            props[key[len(prefix):]] = value.strip()
    return props


class _NoVendingCatalog:
    """A catalog in front of the real one that hands out its tables without storage keys: what a
    catalog defined at run time by another user of the server (SET spark.sql.catalog.*) may be."""

    def __init__(self, upstream: str):
        from tests.servers.base import BufferedProxy

        class Proxy(BufferedProxy):
            def process(self, req):
                resp = self.forward(req)
                try:
                    body = json.loads(resp.body or b"null")
                except ValueError:
                    return resp
                if isinstance(body, dict) and "metadata" in body:
                    body["config"] = {k: v for k, v in (body.get("config") or {}).items()
                                      if k not in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")}
                    body.pop("storage-credentials", None)
                    return resp.with_json(body)
                return resp

        self.proxy = Proxy(upstream)


def test_two_connect_sessions_share_no_status_and_no_keys(connect_server, client_python, expiring):
    """Two client sessions of one Connect server: B's status shows nothing of A's, and catalogs B
    defines at run time that name A's table (by its identity, or with A's own handle) get no keys:
    B's reads of A's data are refused in one line. A keeps reading its table."""
    catalog_proxy, _ = expiring
    rogue = _NoVendingCatalog(catalog_proxy.url).proxy
    with rogue:
        props = {k: v.replace(catalog_proxy.url, rogue.url) for k, v in _catalog_props(connect_server["conf"], "lake").items()}
        assert props["uri"] == rogue.url and props["catalog-impl"] == "io.catalogext.shim.ExtRESTCatalog"
        name = f"iso_{uuid.uuid4().hex[:6]}"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
        proc = subprocess.run([str(client_python), str(TWO_SESSIONS_JOB),
                               json.dumps({"remote": connect_server["remote"], "namespace": "db", "table": name,
                                           "catalog_props": props})],
                              capture_output=True, text=True, timeout=300, env=env)
    lines = [line[len("RESULT "):] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:] + connect_server["log"].read_text()[-3000:]
    result = json.loads(lines[0])

    expected = sum(i * 3 for i in range(100))
    assert result["a_sum"] == expected and result["a_sum_after"] == expected
    mine = [t for t in result["status_a"]["tables"] if t["table"] == name]
    assert len(mine) == 1 and mine[0]["handle"] == result["handle"]
    for status in (result["status_b"], result["status_b_after"]):
        assert [t for t in status["tables"] if t["table"] == name] == [], status["tables"]
        assert [c for c in status["commits"] if name in c.get("table", "")] == [], status["commits"]
        assert status["tables"] == [] and status["commits"] == []
    assert result["handle"] not in result["status_b_raw"] and name not in result["status_b_raw"]
    for attack, outcome in result["attacks"].items():
        assert "sum" not in outcome, f"session B read A's table through {attack}: {outcome}"
        assert "catalog-ext.table-handle" in outcome["error"], (attack, outcome["error"][:1500])
