"""The test side of tests/jobs/sweep_job.py: a Spark session in a process of its own, driven over its
stdin (nothing in its arguments), one catalog per run."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

JOB = Path(__file__).resolve().parent / "jobs" / "sweep_job.py"
_ENDED = "\0"  # the job's stdout closed


class SweepJob:
    """The Spark process: one run per `run(...)`, answered on its stdout."""

    def __init__(self, env: dict[str, str], session: dict[str, str], log: Path) -> None:
        self._log = log.open("w")
        self.proc = subprocess.Popen([sys.executable, str(JOB)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, env=env)
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._send(session)
        self._wait_for("READY", timeout=900)  # the first start may fetch the stores' bundles

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(_ENDED)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def _wait_for(self, word: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"the sweep's Spark job said no {word} in {timeout:.0f}s (its log: {self._log.name})") from None
            if line == _ENDED:
                raise RuntimeError(f"the sweep's Spark job ended before its {word} (exit {self.proc.wait()}): "
                                   f"{Path(self._log.name).read_text()[-2000:]}")
            if line.startswith(word):
                return line[len(word):].strip()

    def run(self, catalog: dict[str, str], table: tuple[str, str], statements: tuple[str, ...] = ()) -> None:
        """The scenario (`statements`, or the job's read and append): raises the job's first failure, as an
        in-process scenario would."""
        self._send({"catalog": catalog, "table": list(table), "statements": list(statements)})
        error = json.loads(self._wait_for("DONE", timeout=300))["error"]
        if error:
            raise RuntimeError(error)

    def marker(self, name: str) -> dict[str, Any]:
        """What the JVM's marker class `name` recorded (its `Log`)."""
        self._send({"marker": name})
        return json.loads(self._wait_for("MARKER", timeout=60))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
