"""How much of one core a runnable thread gets while a timed run goes on, for budgets set on a quiet machine.

A budget such as "the doctor's local profile in under 3 minutes" is a promise for a machine the run
has to itself. CI runs four test lanes and a Maven matrix on 2 cores, where the same run took 2.6
times as long. `CpuShareMeter` samples, every half second, a 10 ms busy loop and notes the CPU time
its thread got over that wall time: about 1.0 on a quiet machine, about 1/3 when three runnable
tasks share each core. A test scales its budget by the run's mean share, so it still fails when the
run itself gets slower, and not when the machine is shared. The sampling costs 2 % of one core.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType


class CpuShareMeter:
    """A daemon thread between `__enter__` and `__exit__`; `mean` is the share over the samples taken."""

    SPIN_S = 0.01
    EVERY_S = 0.5

    def __init__(self) -> None:
        self._shares: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-share-meter", daemon=True)

    def __enter__(self) -> CpuShareMeter:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.EVERY_S):
            wall0, cpu0 = time.perf_counter(), time.thread_time()
            while time.perf_counter() - wall0 < self.SPIN_S:
                pass
            wall = time.perf_counter() - wall0
            self._shares.append(min(1.0, (time.thread_time() - cpu0) / wall))

    @property
    def mean(self) -> float:
        """The mean share of a core (1.0 with no samples: a run shorter than one period is not scaled)."""
        shares = list(self._shares)
        return sum(shares) / len(shares) if shares else 1.0

    def budget(self, quiet_seconds: float) -> float:
        """`quiet_seconds` stretched by how shared the machine was: what the run may take here."""
        return quiet_seconds / max(self.mean, 0.05)
