"""A server as a child process: started on loopback, waited for, stopped with its process group.
One copy for every child server of the tests (the store emulators and fixture, the real catalog servers).

It dies with its parent (PR_SET_PDEATHSIG) if the test process is killed; its log lives in a private
temp dir removed on `stop()`. Secrets go to it through the environment, never argv.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

READY_TIMEOUT_S = 60.0


def die_with_parent() -> None:
    """A child's preexec_fn/initializer: SIGTERM when the test process dies."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class ChildServer:
    """One child process. `secrets` are masked in `log_tail()` (the log may echo its environment)."""

    def __init__(self, name: str):
        self.name = name
        self._root: Path | None = None  # made by the first use: an object never started leaves nothing
        self.secrets: list[str] = []
        self._proc: subprocess.Popen | None = None

    @property
    def root(self) -> Path:
        """The private temp dir of this server's data and log (removed by `stop()`)."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix=f"pce-{self.name}-"))
        return self._root

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    def spawn(self, cmd: list[str], env: dict[str, str], ready: Callable[[], bool],
              timeout: float = READY_TIMEOUT_S) -> None:
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          cwd=self.root, env=env, preexec_fn=die_with_parent, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = self.log_tail()
                self.stop(keep_logs=True)
                raise RuntimeError(f"{self.name} exited before it answered: {tail}")
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.25)
        tail = self.log_tail()
        self.stop(keep_logs=True)
        raise RuntimeError(f"{self.name} did not answer within {timeout:.0f} s: {tail}")

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        if self._root is None:
            return "(no log)"
        try:
            text = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
        return mask(text, self.secrets)

    def stop(self, keep_logs: bool = False) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if not keep_logs and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


def mask(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def run_until_interrupted() -> None:
    """A `python -m tests.<servers>` command's foreground wait: until Ctrl-C or SIGTERM, also where
    SIGINT came in ignored (a shell's background job)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
