"""The meter that scales quiet-machine time budgets sees a machine shared with busy processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.cpu_share import CpuShareMeter

SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def measured_share(seconds: float) -> float:
    with CpuShareMeter() as share:
        time.sleep(seconds)
    return share.mean


def test_the_share_drops_when_busy_processes_take_the_cores() -> None:
    alone = measured_share(2.5)
    busy = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(4 * (os.cpu_count() or 1))]
    try:
        shared = measured_share(2.5)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert 0 < shared < 0.8 * alone <= 0.8, (alone, shared)
    assert CpuShareMeter().budget(180) == 180  # no samples: not scaled
