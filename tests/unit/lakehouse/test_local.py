"""The embedded lakehouse: loopback only, free ports, lifecycle, persistence, crash safety, CLI."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from pyspark_catalog_ext.errors import ConfigError, LakehouseError
from pyspark_catalog_ext.lakehouse import server
from pyspark_catalog_ext.lakehouse.server import Lakehouse, alive, start_lakehouse
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from tests.conftest import assert_one_line_error, run_cli
from tests.helpers import busy_port
from tests.procfs import LISTEN, socket_inodes, tcp_sockets

SEAWEED_DEFAULT_PORTS = {8181, 8333, 8888, 9333, 9340, 23646, 7333, 6060, 9101, 18888, 18333, 19333, 19340, 33646}


def _listening(pid: int) -> set[tuple[str, int]]:
    """(address, port) of TCP sockets the process listens on, read from /proc (no `ss` needed)."""
    inodes = socket_inodes(pid)
    return {("v6:" + sock.local_addr if sock.ipv6 else socket.inet_ntop(socket.AF_INET, bytes.fromhex(sock.local_addr)[::-1]),
             sock.local_port) for sock in tcp_sockets() if sock.state == LISTEN and sock.inode in inodes}


def test_binds_loopback_only_on_free_ports(lakehouse):
    listening = _listening(lakehouse.info.pid)
    assert len(listening) >= 11, listening  # 6 services, 5 with gRPC
    assert {addr for addr, _ in listening} == {"127.0.0.1"}, listening
    assert not {port for _, port in listening} & SEAWEED_DEFAULT_PORTS
    # Vended credentials really come back, with an expiry (the whole point of the setup).
    cat = pyiceberg_catalog(lakehouse)
    cat.create_namespace_if_not_exists("probe")
    import pyarrow as pa

    table = cat.create_table_if_not_exists("probe.t", schema=pa.schema([("x", pa.int64())]))
    props = cat.load_table("probe.t").io.properties
    assert props.get("s3.session-token") and int(props["s3.session-token-expires-at-ms"]) > time.time() * 1000 + 800_000
    assert table is not None


def test_ports_avoid_the_kernels_ephemeral_range(lakehouse):
    """Any process's outgoing connection takes its port from that range, so a port picked there could
    be taken between our check and SeaweedFS's bind (a CI run lost a start that way)."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    listening = {port for _, port in _listening(lakehouse.info.pid)}
    assert len(listening) >= 11, listening
    assert not {port for port in listening if low <= port <= high}, (listening, low, high)


def test_a_start_lost_to_a_taken_port_is_recognised_and_its_reason_shown(tmp_path):
    """SeaweedFS's own words when a port it was given is taken (recorded from weed 'mini'), and the
    Go stack after a fatal line, which used to be all the error showed."""
    refused = ("E1126 13:14:33.219013 mini.go:1244 Port allocation failed: port 21555 for Master (specified by "
               "flag master.port) is not available on 127.0.0.1 and cannot be used")
    fatal = "F1126 13:14:35.000001 grpc.go:80 listen tcp 127.0.0.1:31555: bind: address already in use"
    stack = "github.com/seaweedfs/seaweedfs/weed/glog.Fatalf(...)"
    assert server._lost_a_port(refused) and server._lost_a_port(fatal + "\n" + stack)
    assert not server._lost_a_port("F1126 13:14:35.000001 filer.go:1 cannot open store: disk full\n" + stack)
    log = tmp_path / "weed.out"
    log.write_text("\n".join([refused, fatal, stack]) + "\n")
    lake = Lakehouse()
    lake.info = server.LakehouseInfo(iceberg_uri="", s3_endpoint="", warehouse="", access_key="", secret_key="",
                                     region="", data_dir="", log_file=str(log), pid=0, ports={})
    assert lake._log_tail() == fatal


def test_credential_seconds_below_900_rejected():
    with pytest.raises(ConfigError, match="below SeaweedFS's minimum of 900"):
        Lakehouse(credential_seconds=899)


def test_user_port_in_use_is_one_line_error():
    with busy_port() as port:
        with pytest.raises(LakehouseError) as err:
            Lakehouse(iceberg_port=port).start()
        assert f"port {port} on 127.0.0.1 is already in use" in str(err.value)
        proc = run_cli("local", "up", "--s3-port", str(port), env={"PYSPARK_CATALOG_EXT_CACHE": "/nonexistent-never-written"})
        assert_one_line_error(proc, f"port {port}", "--s3-port")


def test_persistent_data_dir_survives_restart_and_temp_files_are_removed(tmp_path):
    data = tmp_path / "lake-data"
    with start_lakehouse(data_dir=data) as lake:
        pid, root = lake.info.pid, lake._root
        pyiceberg_catalog(lake).create_namespace_if_not_exists("kept")
        assert Path(lake.info.log_file).is_file() and Path(lake.info.log_file).is_relative_to(data)
    assert not alive(pid) and not root.exists()
    assert data.is_dir()
    with start_lakehouse(data_dir=data) as lake:
        assert ("kept",) in pyiceberg_catalog(lake).list_namespaces()
        started = lake.signer.guard.indexed_at_start  # its guard indexes what the catalog held as it started
        assert started is not None and started.wait(60) and lake.signer.guard._indexes.get(("warehouse", ("kept",))) is not None
    temp = Lakehouse().start()
    temp_root, temp_pid = temp._root, temp.info.pid
    temp.stop()
    assert not temp_root.exists() and not alive(temp_pid)


def test_server_dies_with_a_crashed_parent(tmp_path):
    code = (
        "import os, sys\n"
        "from pyspark_catalog_ext.lakehouse.server import Lakehouse\n"
        "lake = Lakehouse().start()\n"
        "print(lake.info.pid, lake.info.iceberg_uri, lake._root, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"  # no atexit, no context manager: only PR_SET_PDEATHSIG is left
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    pid, uri, root = proc.stdout.split()
    deadline = time.monotonic() + 15
    while alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(int(pid))
    with pytest.raises(requests.ConnectionError):
        requests.get(uri + "/v1/config", timeout=2)
    # The crashed caller left its temp dir behind; the next start sweeps it up.
    assert Path(root).is_dir()
    with start_lakehouse():
        assert not Path(root).exists()


def test_cli_local_up_status_down(tmp_path):
    env = {"PYSPARK_CATALOG_EXT_CACHE": str(tmp_path)}
    assert run_cli("local", "status", env=env).returncode == 3
    up = run_cli("local", "up", env=env)
    assert up.returncode == 0, up.stderr
    state = json.loads((tmp_path / "local" / "state.json").read_text())
    try:
        assert state["secret_key"] not in up.stdout  # the random keys are in the state file, readable by this user only
        assert (tmp_path / "local" / "state.json").stat().st_mode & 0o777 == 0o600
        assert alive(state["pid"])
        assert requests.get(state["iceberg_uri"] + "/v1/config", params={"warehouse": "warehouse"}, timeout=5).status_code == 200
        status = run_cli("local", "status", env=env)
        assert status.returncode == 0 and state["iceberg_uri"] in status.stdout
        again = run_cli("local", "up", env=env)  # idempotent
        assert again.returncode == 0 and "already running" in again.stdout
        conf = run_cli("spark-conf", "--profile", "local", "--jars", "none", "--check", env=env)  # uses the state file
        assert conf.returncode == 0, conf.stderr
        assert f"spark.sql.catalog.lake.uri={state['iceberg_uri']}" in conf.stdout
    finally:
        down = run_cli("local", "down", env=env)
    assert down.returncode == 0 and "stopped" in down.stdout
    assert not alive(state["pid"]) and not Path(state["root"]).exists()
    assert run_cli("local", "status", env=env).returncode == 3
