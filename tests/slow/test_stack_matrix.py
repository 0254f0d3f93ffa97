"""The user path on every supported Spark x Iceberg combination but the default (which the whole
suite runs on), with jars from Maven Central, and on the PyPI route's (Spark 3.5 + Iceberg 1.10.2
from PyPI wheels): configure(iceberg=..., jars=...), a CTAS past its credentials' expiry, a staged
create, a lost commit answer, a PyIceberg scan, `maintain --dry-run` and `--packages` from `maven-repo`.

Spark 4.1 stacks run in this venv (other jars); Spark 3.5 and 4.0 ones in a venv per pyspark line
under .venvs/ (made on first use, kept while pyproject.toml/setup.py are unchanged), with this
package installed editable, so the job runs today's code. The job (tests/jobs/stack_matrix_job.py) runs in
that venv's Python; the lakehouse and the loopback proxies that make keys live LIFETIME seconds run here.

`./dev test` runs this file in a lane of its own (it mostly waits for keys to expire).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pyspark_catalog_ext.cache import file_lock
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import DEFAULT_STACK, PYPI_STACK, JvmStack, installed_spark_version, supported_stacks
from tests.conftest import ROOT
from tests.helpers import expiring_proxies

LIFETIME = 8  # seconds the proxies let a vended key live
JOB = ROOT / "tests" / "jobs" / "stack_matrix_job.py"
VENVS = ROOT / ".venvs"
PIP = ["-m", "pip", "install", "--disable-pip-version-check", "-q"]


def _pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return env


def spark_venv(line: str) -> Path:
    """The Python of .venvs/pyspark-<line>: pyspark <line>.* and this package (editable), rebuilt
    when the package metadata changes; this venv's own for its pyspark's line. A lock keeps two test
    processes from building it at once."""
    if installed_spark_version().startswith(line + "."):
        return Path(sys.executable)
    venv = VENVS / f"pyspark-{line}"
    stamp_text = hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in ("pyproject.toml", "setup.py"))).hexdigest()
    stamp = venv / ".pyspark-catalog-ext-installed"
    with file_lock(VENVS / f".pyspark-{line}.lock"):
        if not stamp.is_file() or stamp.read_text() != stamp_text:
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "python"), *PIP, "-e", str(ROOT), f"pyspark=={line}.*"],
                           check=True, env=_pip_env(), timeout=1800)
            stamp.write_text(stamp_text)
            print(f"\nmade {venv} in {time.monotonic() - started:.0f} s")
    return venv / "bin" / "python"


@pytest.fixture(scope="module")
def fast_catalog(lakehouse):
    with expiring_proxies(lakehouse, LIFETIME, expire_now=True) as proxies:
        yield proxies.catalog


@pytest.fixture(scope="module")
def s3_proxy(fast_catalog):
    return fast_catalog.s3_proxy


def _conn(lakehouse, fast_catalog, s3_proxy) -> dict[str, str]:
    """configure()'s connection arguments but the credential (the job reads it from $MATRIX_CREDENTIAL)."""
    info = lakehouse.info
    return {"uri": fast_catalog.url, "warehouse": info.warehouse, "s3_endpoint": s3_proxy.url}


def run_job(python: Path | str, args: dict, credential: str, timeout: float = 900) -> dict[str, dict]:
    """Run the job with `python` (outside this source tree's sys.path); its STEP lines by name. The
    credential goes by environment, never on the command line."""
    proc = subprocess.run([str(python), str(JOB), json.dumps(args)], capture_output=True, text=True,
                          timeout=timeout, env={**_pip_env(), "MATRIX_CREDENTIAL": credential}, cwd=args["cwd"])
    steps = {}
    for line in proc.stdout.splitlines():
        if line.startswith("STEP "):
            _, name, facts = line.split(" ", 2)
            steps[name] = json.loads(facts)
    assert proc.returncode == 0, proc.stderr[-4000:]
    print("".join(f"\n  {line}" for line in proc.stderr.splitlines() if line.startswith("at ")))
    return steps


def _assert_outlived(steps: dict, s3_proxy, rows: int) -> None:
    ctas = steps["ctas"]
    assert (ctas["rows"], ctas["sum"]) == (rows, 3 * sum(range(rows)))
    assert ctas["seconds"] > LIFETIME * 1.5, ctas  # the task really outlived its first keys
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
    assert len(s3_proxy.forwarded_by_key) >= 2  # the writes used refreshed keys


OTHER_STACKS = [(s, "offline") for s in supported_stacks() if s != DEFAULT_STACK] + [(PYPI_STACK, "pypi")]


@pytest.mark.parametrize("stack, jars", OTHER_STACKS, ids=lambda p: f"spark{p.spark}-iceberg{p.iceberg}" if isinstance(p, JvmStack) else p)
def test_user_path_on_stack(stack: JvmStack, jars: str, lakehouse, fast_catalog, s3_proxy, tmp_path):
    python = spark_venv(stack.spark)
    ns = f"m{stack.spark.replace('.', '')}_{stack.iceberg.replace('.', '')}_{jars}_{uuid.uuid4().hex[:6]}"
    fault = fast_catalog.faults.add("after", "POST", rf"/namespaces/{ns}/tables/lost$", status=500)
    s3_proxy.reset_counters()
    rows = 60  # a file per row, 250 ms each: one task of ~15 s (two LIFETIMEs), little CPU
    steps = run_job(python, {"conn": _conn(lakehouse, fast_catalog, s3_proxy), "iceberg": stack.iceberg, "jars": jars, "ns": ns,
                             "rows": rows, "ms": 250, "repo": str(tmp_path / "repo"), "cwd": str(tmp_path)}, lakehouse.info.credential)
    conf = steps["configure"]
    assert conf["spark"].startswith(stack.spark + ".") and conf["iceberg"].startswith(stack.iceberg), conf
    _assert_outlived(steps, s3_proxy, rows)
    assert steps["staged"] == {"visible_before": False, "rows": 50}
    assert fault.fired == 1 and steps["lost"] == {"rows": 10, "distinct": 10}
    assert steps["pyiceberg"] == {"rows": rows}
    assert steps["maintain"]["exit"] == 0, steps["maintain"]
    packages = steps["packages"]
    assert packages["exit"] == 0, packages
    # The PyPI route's jars under jvm-shim/pom.xml's plain coordinate; each Maven stack under its own.
    suffix = "" if jars == "pypi" else f"-spark{stack.spark}-iceberg{stack.iceberg}"
    assert packages["packages"] == f"io.catalogext:catalog-ext-shim:0.1.0{suffix}", packages
    assert packages["submitted"] and packages["submitted"][0] == "100" and packages["submitted"][1].startswith(stack.iceberg)
