"""`pyspark-catalog-ext demo`: 1M-row CTAS with vended credentials on Spark 4.1 + Iceberg 1.12, end to end, under 2 minutes."""

from __future__ import annotations

import re
import time

from tests.conftest import SECRET, run_cli
from tests.cpu_share import CpuShareMeter


def test_demo_end_to_end():
    with CpuShareMeter() as share:
        started = time.monotonic()
        proc = run_cli("demo", timeout=900)
        elapsed = time.monotonic() - started
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "rows                  1,000,000" in out
    assert re.search(r"data files\s+[1-9]\d*", out)
    assert re.search(r"snapshot id\s+-?\d+", out)
    assert re.search(r"vended creds expire\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 \(in 1[45] min", out), out
    assert "[" in out and "starting the embedded lakehouse" in out  # progress lines as it goes
    # This venv's pyspark 4.1 on its default stack, Apache's jars from Maven Central.
    assert "jars ready (Spark 4.1 + Iceberg 1.12.0, Apache Iceberg from Maven Central)" in out, out
    assert "starting Spark (local[2]) on Spark 4.1 + Iceberg 1.12.0" in out
    for secret in (SECRET, "s3.secret-access-key", "s3.session-token="):
        assert secret not in out + proc.stderr
    # 2 minutes on a machine of its own; on a shared one, as much longer as it was shared
    assert elapsed < share.budget(120), f"demo took {elapsed:.0f} s at {share.mean:.2f} of a core"
