"""Install the object-store emulators into the user cache on first use (later calls take milliseconds).

- Azurite (Azure Storage) from npm, with ``npm ci`` from ``tests/stores/azurite/``: its lockfile pins
  every package by version and sha512, which npm checks. 3.35.0 is the newest that runs on Node 20
  (3.36 and later need Node 21).
- fake-gcs-server (Google Cloud Storage) with ``go install module@version``: Go checks every module
  against go.sum and the checksum database. Module and build caches go to a temp dir removed after
  the build, so the ~1.2 GB they take during the build do not stay; only the binary (~35 MB) does.

Each lands in ``<cache>/stores/<name>-<version>`` through a temp dir renamed in place, under a file
lock, so a half-finished install is never taken for a finished one and two test processes starting
at once install once. The first install's duration is printed to stderr and kept in ``.installed``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir, file_lock

HERE = Path(__file__).resolve().parent
AZURITE_VERSION = "3.35.0"
AZURITE_PACKAGE = HERE / "azurite"  # package.json + package-lock.json
FAKE_GCS_MODULE = "github.com/fsouza/fake-gcs-server"
FAKE_GCS_VERSION = "v1.56.1"
NODE_MIN_MAJOR = 20
INSTALL_TIMEOUT_S = 900  # a first install on a slow link; a hung npm or go must not hang the tests


class StoreUnavailable(RuntimeError):
    """A tool an emulator needs (node/npm, go) is missing here: the fixture skips, naming it."""


def _stores_dir() -> Path:
    return cache_dir() / "stores"


def _install_once(name: str, build: Callable[[Path], None]) -> Path:
    """`<cache>/stores/<name>`, made by `build(tmp_dir)` the first time."""
    target = _stores_dir() / name
    done = target / ".installed"
    if done.is_file():
        return target
    with file_lock(_stores_dir() / f".{name}.lock"):
        if done.is_file():  # another process finished it while we waited
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=_stores_dir()))
        started = time.monotonic()
        try:
            print(f"tests/stores: installing {name} into {target} (first use)", file=sys.stderr, flush=True)
            build(tmp)
            seconds = time.monotonic() - started
            (tmp / ".installed").write_text(f"installed in {seconds:.1f} s\n")
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"tests/stores: {name} installed in {seconds:.1f} s", file=sys.stderr, flush=True)
    return target


def install_seconds(target: Path) -> float | None:
    """How long the first install of `target` took (None if it was not installed here)."""
    try:
        match = re.search(r"installed in ([\d.]+) s", (target / ".installed").read_text())
    except OSError:
        return None
    return float(match.group(1)) if match else None


def _run(cmd: list[str], what: str, **kwargs) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, **kwargs)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-12:])
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def node() -> str:
    """A Node.js of at least NODE_MIN_MAJOR on PATH."""
    exe = shutil.which("node")
    if exe is None or shutil.which("npm") is None:
        raise StoreUnavailable(f"Node.js {NODE_MIN_MAJOR}+ with npm is not on PATH: install it to run Azurite")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    match = re.match(r"v(\d+)\.", version)
    if not match or int(match.group(1)) < NODE_MIN_MAJOR:
        raise StoreUnavailable(f"Azurite {AZURITE_VERSION} needs Node.js {NODE_MIN_MAJOR}+, found {version or 'none'}")
    return exe


def azurite_blob_main() -> Path:
    """The Azurite blob service's entry script (run it with `node()`), installed on first use."""
    node()

    def build(tmp: Path) -> None:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(AZURITE_PACKAGE / name, tmp / name)
        # ci: exactly the lockfile's packages; the npm cache under tmp goes with it.
        _run(["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--ignore-scripts",
              "--cache", str(tmp / ".npm-cache")], f"npm ci azurite@{AZURITE_VERSION}", cwd=tmp)
        shutil.rmtree(tmp / ".npm-cache", ignore_errors=True)

    target = _install_once(f"azurite-{AZURITE_VERSION}", build)
    main = target / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
    if not main.is_file():
        raise RuntimeError(f"{target} holds no Azurite blob service ({main}); delete the folder to reinstall")
    return main


def fake_gcs_server() -> Path:
    """The fake-gcs-server binary, built with `go install` on first use."""
    go = shutil.which("go")
    if go is None:
        raise StoreUnavailable("Go is not on PATH: install Go 1.23+ to build fake-gcs-server")

    def build(tmp: Path) -> None:
        work = Path(tempfile.mkdtemp(prefix="pce-gobuild-"))
        try:
            env = {**os.environ, "GOBIN": str(tmp / "bin"), "GOPATH": str(work / "gopath"),
                   "GOCACHE": str(work / "gocache"), "GOFLAGS": "-modcacherw -trimpath", "CGO_ENABLED": "0"}
            _run([go, "install", "-ldflags=-s -w", f"{FAKE_GCS_MODULE}@{FAKE_GCS_VERSION}"],
                 f"go install {FAKE_GCS_MODULE}@{FAKE_GCS_VERSION}", env=env)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    binary = _install_once(f"fake-gcs-server-{FAKE_GCS_VERSION}", build) / "bin" / "fake-gcs-server"
    if not binary.is_file():
        raise RuntimeError(f"{binary} is missing; delete its folder to rebuild")
    return binary
