"""The quickstart notebook runs top to bottom, so it can't rot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark  # the notebook starts Spark in a subprocess

ROOT = Path(__file__).resolve().parent.parent


def test_quickstart_notebook_executes():
    # A fresh interpreter: the notebook starts its own lakehouse and SparkSession.
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "nbrun.py"), str(ROOT / "notebooks" / "quickstart.ipynb")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "--- notebook ok: 10 code cells" in proc.stdout
    assert "published rows: 2000" in proc.stdout
    assert "strategy:" in proc.stdout
    assert "renewals via reload" in proc.stdout  # the long PyIceberg read renewed its keys
    assert "run: CALL lake.system.rewrite_data_files(table => 'quickstart.daily'" in proc.stdout  # the dry run
    assert "1 table(s): 1 maintained, 0 skipped, 0 failed" in proc.stdout  # the run's summary
    assert ("events: [('python', 'maintenance.action.started', None), ('jvm', 'commit.started', None), "
            "('jvm', 'commit.finished', 'committed'), ('python', 'maintenance.action.finished', 'ok')]") in proc.stdout
    assert "rows via PyIceberg: 5000" in proc.stdout
    assert "lakeadminsecret" not in proc.stdout + proc.stderr
