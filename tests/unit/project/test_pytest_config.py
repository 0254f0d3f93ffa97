"""The suite's own pytest settings do what the run's disk budget counts on."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

INNER = '''
def test_passes(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 1024)
    print("PATH", tmp_path)


def test_fails(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 1024)
    print("PATH", tmp_path)
    assert False
'''


def test_a_passing_tests_tmp_path_goes_and_a_failing_ones_stays(tmp_path: Path) -> None:
    """tmp_path_retention_policy = "failed": the stack matrix's Maven repos (~3 GB a run) leave with
    their tests, while a failure keeps what it wrote for whoever reads it."""
    (tmp_path / "test_inner.py").write_text(INNER)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
                           "-p", "no:cacheprovider", "-s", "-q", "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_inner.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    paths = [Path(p) for p in re.findall(r"PATH (\S+)", proc.stdout)]  # -q's progress dots share the lines
    assert len(paths) == 2 and "1 failed, 1 passed" in proc.stdout, proc.stdout[-2000:]
    passed, failed = sorted(paths, key=lambda p: "fails" in p.name)
    assert not passed.exists(), passed
    assert (failed / "big").is_file(), failed


def test_a_hanging_test_fails_with_its_stack_instead_of_holding_the_run(tmp_path: Path) -> None:
    """pytest-timeout is installed and on: the run ends, naming the test and where it hung."""
    (tmp_path / "test_hang.py").write_text("import time\n\n\ndef test_hangs():\n    time.sleep(120)\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
                           "-p", "no:cacheprovider", "-q", "-o", "timeout=2", str(tmp_path / "test_hang.py")],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "1 failed" in proc.stdout and "Timeout" in proc.stdout and "time.sleep(120)" in proc.stdout, proc.stdout[-2000:]
