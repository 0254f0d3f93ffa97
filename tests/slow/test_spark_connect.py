"""Spark Connect (Spark 4.1, Iceberg 1.12): a real Connect server started by the documented recipe
(`pyspark-catalog-ext connect-server`: client token, loopback, the catalog's credential on stdin),
a client venv with `pyspark-client` (no Py4J) and this package. A CTAS from the client outlives its
credentials (the loopback proxies make them live LIFETIME seconds); status and commit outcomes come
back through SQL `catalog_ext_status()`, and what needs Py4J is refused in one line. The server is
one trust domain: a client without the token is refused, nothing listens beyond loopback, and a
client's UDF finds the catalog's secret in no file, environment or command line it can read.

The venvs are cached under the worktree (.venvs/pyspark-4.1, shared with test_stack_matrix.py: full
pyspark for the server's Spark; .venvs/connect-4.1: pyspark-client + this package's dependencies
without pyspark, the package itself by a .pth path entry, as an editable install would add). The
Iceberg jars are what users get: `resolve_jars(stack=select_stack("4.1", ICEBERG))`, sha-pinned, from
Maven Central into the package's cache (copied from ~/.m2 when it holds the pinned file).
"""

from __future__ import annotations

import importlib.metadata
import ipaddress
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pyspark_catalog_ext.ports import free_port
from tests.slow.test_stack_matrix import spark_venv

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".venvs"
SPARK_VERSION = "4.1.*"
ICEBERG = "1.12.0"
LIFETIME = 8  # seconds the proxies let a credential live
CLIENT_JOB = ROOT / "tests" / "jobs" / "connect_client_job.py"
TWO_SESSIONS_JOB = ROOT / "tests" / "jobs" / "connect_two_sessions_job.py"
UDF_WALK_JOB = ROOT / "tests" / "jobs" / "connect_udf_walk_job.py"


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
def connect_server(lakehouse, expiring, tmp_path_factory):
    """The documented recipe: `pyspark-catalog-ext connect-server` with the catalog's credential on
    stdin and a client token in a private file, on loopback (the default). Its working directory
    holds its log: the UDF walk reads both. The Iceberg jars are what users get (`--jars offline`)."""
    from pyspark_catalog_ext.spark.conf import spark_conf

    catalog_proxy, _ = expiring
    tmp = tmp_path_factory.mktemp("connect")
    workdir = tmp / "server-cwd"
    workdir.mkdir()
    token = secrets.token_urlsafe(24)
    token_file = tmp / "connect-token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    port = free_port()
    args = ["connect-server", "--profile", "local", "--uri", catalog_proxy.url, "--warehouse", lakehouse.info.warehouse,
            "--credential-stdin", "--connect-token-file", str(token_file), "--port", str(port),
            "--spark", "4.1", "--iceberg", ICEBERG, "--conf", "spark.master=local[2]",
            "--conf", "spark.connect.grpc.port.maxRetries=20",
            # A setting whose name does not look secret, given on stdin: it must stay off command lines too.
            "--conf-stdin", "spark.pce.test.stdin-marker"]
    marker = "stdin-marker-" + secrets.token_hex(8)
    refresh = {f"spark.sql.catalog.lake.catalog-ext.refresh.{k}": str(v)
               for k, v in {"check-interval-ms": 1000, "min-ahead-ms": 0, "lifetime-fraction": 0.4}.items()}
    for key, value in refresh.items():
        args += ["--conf", f"{key}={value}"]
    log = workdir / "connect-server.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    started = time.monotonic()
    with log.open("wb") as out:
        server = subprocess.Popen([str(spark_venv("4.1")), "-m", "pyspark_catalog_ext.cli", *args], stdin=subprocess.PIPE,
                                  stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    assert server.stdin is not None
    server.stdin.write(f"{lakehouse.info.credential}\n{marker}\n".encode())
    server.stdin.close()
    try:
        # Ready when the server says where it listens: a connectable port alone may be someone else's
        # (the port can be taken between free_port() and the bind; maxRetries then moves on from it).
        while (found := re.search(r"Spark Connect server started at: \S*?:(\d+)", log.read_text(errors="replace"))) is None:
            if server.poll() is not None:
                pytest.fail(f"the Connect server exited ({server.returncode}): {log.read_text()[-3000:]}")
            if time.monotonic() - started > 180:
                pytest.fail(f"the Connect server did not start within 180 s: {log.read_text()[-3000:]}")
            time.sleep(0.5)
        port = int(found.group(1))
        print(f"\nConnect server up in {time.monotonic() - started:.1f} s")
        # What a second session's run-time catalogs copy: the server's catalog, credential included.
        catalog = spark_conf("local", "lake", jars=None, uri=catalog_proxy.url, warehouse=lakehouse.info.warehouse,
                             credential=lakehouse.info.credential, extra_conf=refresh).catalog("lake")
        yield {"remote": f"sc://localhost:{port}", "port": port, "token": token, "token_file": token_file, "log": log, "pid": server.pid,
               "catalog_props": catalog, "secret": lakehouse.info.credential, "marker": marker}
    finally:
        below = _descendants(server.pid) - {server.pid}  # the JVM and its Python daemon
        server.terminate()
        try:
            stopped = server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
            stopped = None
        deadline = time.monotonic() + 30
        while (left := {p for p in below if Path(f"/proc/{p}").exists()}) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert stopped == 0 and not left, f"connect-server on SIGTERM: exit {stopped}, processes left {left}: {log.read_text()[-2000:]}"


def _client_env(connect_server, token: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME", "SPARK_CONNECT_AUTHENTICATE_TOKEN")}
    if token:  # pyspark-client sends it as a bearer token (plain text only to sc://localhost)
        env["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = connect_server["token"]
    return env


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
    env = _client_env(connect_server)
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


class _NoVendingCatalog:
    """A catalog in front of the real one that hands out its tables without storage keys: what a
    catalog defined at run time by another user of the server (SET spark.sql.catalog.*) may be.
    It names no S3 endpoint either (that user sets it): an endpoint named beside no keys is refused
    on its own, before the table-handle check the test is about."""

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
                                      if k not in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token",
                                                   "s3.endpoint")}
                    body.pop("storage-credentials", None)
                    return resp.with_json(body)
                return resp

        self.proxy = Proxy(upstream)


def test_two_connect_sessions_share_no_status_and_no_keys(connect_server, client_python, expiring):
    """Two client sessions of one Connect server: B's status shows nothing of A's, and catalogs B
    defines at run time that name A's table (by its identity, or with A's own handle) get no keys:
    B's reads of A's data are refused in one line. A keeps reading its table."""
    catalog_proxy, s3_proxy = expiring
    rogue = _NoVendingCatalog(catalog_proxy.url).proxy
    with rogue:
        props = {k: v.replace(catalog_proxy.url, rogue.url) for k, v in connect_server["catalog_props"].items()}
        props["s3.endpoint"] = s3_proxy.url
        assert props["uri"] == rogue.url and props["catalog-impl"] == "io.catalogext.shim.ExtRESTCatalog"
        name = f"iso_{uuid.uuid4().hex[:6]}"
        env = _client_env(connect_server)
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


_NO_TOKEN_PROBE = """
import json, sys
from pyspark.sql import SparkSession
try:
    SparkSession.builder.remote(sys.argv[1]).create().range(1).collect()
    print("RESULT " + json.dumps({"ok": True}))
except Exception as exc:
    print("RESULT " + json.dumps({"ok": False, "error": str(exc)[:2000]}))
"""


@pytest.mark.parametrize("token", [None, "not-the-token"])
def test_connect_client_without_the_token_is_refused(connect_server, client_python, token):
    env = _client_env(connect_server, token=False)
    remote = connect_server["remote"] + (f"/;token={token}" if token else "")
    proc = subprocess.run([str(client_python), "-c", _NO_TOKEN_PROBE, remote], capture_output=True, text=True, timeout=120, env=env)
    lines = [line[len("RESULT "):] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    result = json.loads(lines[0])
    assert result["ok"] is False, "a client without the server's token ran a query"
    assert "UNAUTHENTICATED" in result["error"] or "authentication token" in result["error"], result["error"]


def _descendants(pid: int) -> set[int]:
    """`pid` and every process below it (from /proc/<pid>/stat's parent field)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return found


def _non_loopback_addresses() -> list[str]:
    """This machine's own addresses other than loopback, from `ip -o addr` (link-local IPv6 left out:
    it needs a scope to connect to)."""
    out = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    addresses = []
    for match in re.finditer(r"\binet6?\s+([0-9a-fA-F:.]+)/\d+", out):
        address = ipaddress.ip_address(match.group(1))
        if not (address.is_loopback or address.is_link_local):
            addresses.append(str(address))
    return addresses


def test_connect_server_listens_on_loopback_only(connect_server):
    """Every TCP port the server's processes listen on (gRPC, the driver's RPC and block manager)
    is on loopback (ss), and its Connect port refuses connections on this machine's other addresses."""
    pids = _descendants(connect_server["pid"])
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    listening = [line.split()[3] for line in out.splitlines() if any(f"pid={p}," in line for p in pids)]
    assert any(local.endswith(f":{connect_server['port']}") for local in listening), (listening, out)
    for local in listening:
        host = local.rsplit(":", 1)[0].strip("[]").split("%")[0]
        assert host != "*", f"the server listens on every address: {local}"
        address = ipaddress.ip_address(host)
        address = getattr(address, "ipv4_mapped", None) or address  # Java's IPv6 sockets show 127.0.0.1 as ::ffff:127.0.0.1
        assert address.is_loopback, f"the server listens on {local}: {listening}"
    addresses = _non_loopback_addresses()
    if not addresses:
        pytest.skip("this machine has no non-loopback address to connect to; only the listening addresses were checked (ss)")
    for address in addresses:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
            s.settimeout(5)
            assert s.connect_ex((address, connect_server["port"])) != 0, f"the Connect port answers on {address}"


def test_connect_udf_finds_no_catalog_secret_it_can_read(connect_server, client_python):
    """A client's Python UDF runs as the server's user: it reads its own and its ancestors' environ
    and cmdline, the files those command lines name and the server's working directory (its log
    included). The catalog's credential (and its secret half) is in none of them, nor a setting given
    with --conf-stdin; the client token
    is, in its file, as it may be (whoever runs a UDF has it)."""
    secret = connect_server["secret"]
    # The client token is a control: its file is named on the launcher's command line, so the walk must find it.
    needles = [secret, secret.rpartition(":")[2], connect_server["token"], connect_server["marker"]]
    proc = subprocess.run([str(client_python), str(UDF_WALK_JOB), json.dumps({"remote": connect_server["remote"]})],
                          input=json.dumps(needles), capture_output=True, text=True, timeout=300, env=_client_env(connect_server))
    lines = [line[len("RESULT "):] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:] + connect_server["log"].read_text()[-3000:]
    result = json.loads(lines[0])
    # The walk reached the launcher (and the JVM below it) and read the server's log in its working directory.
    server = connect_server["pid"]
    assert {f"/proc/{server}/environ", f"/proc/{server}/cmdline", str(connect_server["log"])} <= set(result["sources"]), result
    assert sum(s.endswith("/environ") for s in result["sources"]) >= 4, result["sources"]  # worker, daemon, JVM, launcher
    assert result["hits"] == {str(connect_server["token_file"]): [2]}, f"what the UDF read: {result['hits']}"
