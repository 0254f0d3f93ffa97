"""Child processes that end with us: servers we start (SeaweedFS, the catalog proxy, Trino) die with
their parent and are stopped by process group."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent() -> None:
    """A `preexec_fn`: the child dies with its parent, so a crashed caller leaves no server behind.

    Linux ties this to the *thread* that started the child: start the server from a thread
    that lives as long as you need it (the main thread, as in scripts and notebooks)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not glibc/Linux: atexit and the context manager still apply
        pass


def kill_group(pid: int, proc: subprocess.Popen | None = None, timeout: float = 10.0) -> None:
    """SIGTERM to process group `pid`, then SIGKILL after `timeout` s; returns once it is gone."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if proc is not None:
                if proc.poll() is not None:
                    return
            elif not alive(pid):
                return
            time.sleep(0.1)


def alive(pid: int) -> bool:
    """Is process `pid` running (a zombie is not)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped) counts as dead
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
