"""A Trino server as a child process on loopback, with one Iceberg catalog from a connection.

`with TrinoServer(lakehouse.connection()) as trino: trino.connect().cursor().execute(...)`.

The catalog file is `--format trino`'s (clients/trino.py); its secret is only in the server's
environment (`${ENV:...}`), never in the file or the process's arguments. A small server (2 GB
heap) on 127.0.0.1 only, dying with its parent (PR_SET_PDEATHSIG) and at interpreter exit, its
temp dir with it. Queries go through Trino's own Python client (`trino`, DB-API).

Why: docs/clients.md, section 'Running Trino from Python'.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.cache import write_private
from pyspark_catalog_ext.catalog.connection import CatalogConnection
from pyspark_catalog_ext.clients.trino import render_properties, trino_properties
from pyspark_catalog_ext.clients.trino_install import TrinoUnavailable, find_trino_java, trino_home
from pyspark_catalog_ext.errors import CatalogError, redact
from pyspark_catalog_ext.ports import free_port
from pyspark_catalog_ext.processes import die_with_parent, kill_group

__all__ = ["TrinoServer", "CLIENT_HINT", "run_query"]

HOST = "127.0.0.1"
CLIENT_HINT = "pip install 'pyspark-catalog-ext[trino]'"
_SECRET_ENV = "PCE_TRINO_CATALOG_SECRET"  # the catalog's OAuth2 credential or token, in the server's environment only
_SECRET_KEYS = ("iceberg.rest-catalog.oauth2.credential", "iceberg.rest-catalog.oauth2.token")
_START_ATTEMPTS = 3
NO_NODES_WAIT_SECONDS = 60.0  # how long run_query asks again while Trino has no node for the query's catalog
# Small settings for a 2-core machine shared with Spark: one node, 2 GB heap, queries capped below it.
# The JIT's first tier only (C1): this server lives for one probe or test module, and C2's compiling
# cost a start plus a few small queries about 40 % more CPU (41 CPU-s against 25, measured twice).
_JVM_CONFIG = """-server
-Xmx2G
-XX:+UseG1GC
-XX:TieredStopAtLevel=1
-XX:+ExitOnOutOfMemoryError
-XX:-OmitStackTraceInFastThrow
-XX:ReservedCodeCacheSize=256M
-XX:+EnableDynamicAgentLoading
-Djdk.attach.allowAttachSelf=true
-Dfile.encoding=UTF-8
"""


def run_query(cursor: Any, sql: str, *, wait_seconds: float = NO_NODES_WAIT_SECONDS) -> list[list[Any]]:
    """`sql`'s rows through a DB-API cursor of Trino's client. A query Trino refuses with
    NO_NODES_AVAILABLE is asked again, once a second for up to `wait_seconds`. Trino raises it while it
    schedules the query, before any task ran (a write commits nothing), as long as its node manager
    has not read that this node serves the query's catalog: it polls every few seconds, so a query
    on a just-started server met it on a busy machine, after `/v1/info` said the server had started
    and a query of the system catalog had run."""
    from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_fixed

    def no_nodes(exc: BaseException) -> bool:
        return getattr(exc, "error_name", None) == "NO_NODES_AVAILABLE"

    def once() -> list[list[Any]]:
        cursor.execute(sql)
        return cursor.fetchall()

    retrying = Retrying(retry=retry_if_exception(no_nodes), stop=stop_after_delay(wait_seconds), wait=wait_fixed(1.0),
                        reraise=True)
    return retrying(once)


class TrinoServer:
    """One Trino coordinator (that also runs the work) with `conn` as catalog `catalog`."""

    def __init__(self, conn: CatalogConnection, catalog: str = "lake", *, ready_timeout: float = 240.0) -> None:
        self.conn = conn
        self.catalog = catalog
        self.ready_timeout = ready_timeout
        self.port: int | None = None
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen | None = None
        self._root: Path | None = None

    @property
    def log_file(self) -> Path | None:
        return self._root / "server.log" if self._root else None

    @property
    def pid(self) -> int | None:
        """The server's process id (the leader of its own process group)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def catalog_file(self) -> Path | None:
        return self._root / "etc" / "catalog" / f"{self.catalog}.properties" if self._root else None

    def start(self) -> TrinoServer:
        home = trino_home()
        java = find_trino_java()
        self._root = Path(tempfile.mkdtemp(prefix="pce-trino-"))  # 0700: the config and the data are ours only
        atexit.register(self.stop)
        props = trino_properties(self.conn, show_secrets=True)
        env = {k: v for k, v in os.environ.items() if k != _SECRET_ENV}
        for key in _SECRET_KEYS:
            if key in props:
                env[_SECRET_ENV] = props[key]
                props[key] = "${ENV:" + _SECRET_ENV + "}"
        began = time.monotonic()
        try:
            for attempt in range(_START_ATTEMPTS):
                self.port = free_port()  # Trino's discovery URI names its port: it cannot bind port 0
                etc = self._write_config(home, props, self.port)
                self._launch(home, java, etc, env)
                try:
                    self._wait_ready()
                    break
                except CatalogError:
                    in_use = "Address already in use" in self._log_text()
                    if self._proc is not None:
                        kill_group(self._proc.pid, self._proc)
                    if not in_use or attempt == _START_ATTEMPTS - 1:
                        raise
        except BaseException:
            self.stop(keep_logs=True)
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _write_config(self, home: Path, props: dict[str, str], port: int) -> Path:
        assert self._root is not None
        etc, data, plugins = self._root / "etc", self._root / "data", self._root / "plugin"
        for d in (etc / "catalog", data, plugins):
            d.mkdir(parents=True, exist_ok=True)
        # Only the Iceberg connector is loaded (a dir of links into the install): the other 50 plugins cost start-up time
        if not (plugins / "iceberg").exists():
            (plugins / "iceberg").symlink_to(home / "plugin" / "iceberg")
        (etc / "node.properties").write_text(
            f"node.environment=pce\nnode.id={uuid.uuid4()}\nnode.data-dir={data}\nnode.internal-address={HOST}\n")
        (etc / "config.properties").write_text("\n".join([
            "coordinator=true", "node-scheduler.include-coordinator=true",
            f"http-server.http.port={port}", f"discovery.uri=http://{HOST}:{port}", f"plugin.dir={plugins}",
            "query.max-memory=1GB", "query.max-memory-per-node=1GB", ""]))
        (etc / "jvm.config").write_text(_JVM_CONFIG)
        (etc / "log.properties").write_text("io.trino=INFO\n")
        write_private(etc / "catalog" / f"{self.catalog}.properties", render_properties(props) + "\n")
        return etc

    def _launch(self, home: Path, java: Path, etc: Path, env: dict[str, str]) -> None:
        assert self._root is not None
        args = [str(home / "bin" / "launcher"), "run", f"--etc-dir={etc}", f"--data-dir={self._root / 'data'}",
                f"--launcher-config={home / 'bin' / 'launcher.properties'}"]
        env = {**env, "JAVA_HOME": str(java), "PATH": f"{java / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
        with open(self._root / "server.log", "ab") as out:
            self._proc = subprocess.Popen(args, cwd=self._root, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent)

    def _wait_ready(self) -> None:
        """Ready = `/v1/info` says the server is no longer starting (its catalogs are loaded)."""
        import requests

        assert self._proc is not None
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise CatalogError(f"Trino exited with code {self._proc.returncode} during start-up: {self._log_tail()} "
                                   f"(log: {self.log_file})")
            try:
                info = requests.get(f"http://{HOST}:{self.port}/v1/info", timeout=2).json()
                if info.get("starting") is False:
                    return
                last = "starting"
            except (requests.RequestException, ValueError) as exc:
                last = type(exc).__name__
            time.sleep(0.5)
        raise CatalogError(f"Trino not ready after {self.ready_timeout:.0f}s ({last}); see {self.log_file}")

    def _log_text(self) -> str:
        try:
            return self.log_file.read_text(errors="replace") if self.log_file else ""
        except OSError:
            return ""

    def _log_tail(self) -> str:
        lines = [line.strip() for line in self._log_text().splitlines() if line.strip()]
        errors = [line for line in lines if "ERROR" in line or "Exception" in line or "rror:" in line]
        return redact((errors or lines or ["no log output"])[-1])[:400]

    def connect(self, **kwargs: Any) -> Any:
        """A DB-API connection (`trino.dbapi.Connection`) to this server, catalog `catalog`."""
        try:
            import trino
        except ImportError:
            raise TrinoUnavailable(f"Trino's Python client is not installed: {CLIENT_HINT}") from None
        if self.port is None:
            raise CatalogError("the Trino server is not running; call .start() first")
        return trino.dbapi.connect(host=HOST, port=self.port, user="pyspark-catalog-ext", catalog=self.catalog, **kwargs)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, keep_logs: bool = False) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after 20 s) and remove its temp dir."""
        proc, self._proc = self._proc, None
        if proc is not None:
            kill_group(proc.pid, proc, timeout=20.0)
        try:
            atexit.unregister(self.stop)
        except Exception:
            pass
        if self._root is not None and not keep_logs:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def __enter__(self) -> TrinoServer:
        return self.start() if self._proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
