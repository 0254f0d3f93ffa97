"""A failure's native traceback (the suite's style where CPython's AST race forces it, and CI's) starts
at the test's own frames, not at pytest's and pluggy's (tests/conftest.py, pytest_runtest_makereport)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.helpers import ROOT

FAILING = '''
def helper(x):
    assert x == 2, f"x was {x}"


def test_fails():
    helper(1)
'''


def test_a_native_traceback_shows_the_tests_frames_only():
    # Under tests/ (the suite's conftest refuses a test elsewhere), in a dot-folder no collection walks into.
    folder = Path(tempfile.mkdtemp(prefix=".native-tb-", dir=Path(__file__).parent))
    try:
        (folder / "test_fails.py").write_text(FAILING)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=native",
                               str(folder / "test_fails.py")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    start = out.index("Traceback (most recent call last)")
    end = out.index("AssertionError: x was 1", start)  # the traceback only: warnings and summaries follow it
    trace = out[start:end]
    assert "in test_fails" in trace and "in helper" in trace, trace
    assert "_pytest" not in trace and "pluggy" not in trace, trace
