"""Installing from source, as a new user or a packager does, each into a fresh venv and with pip's
build isolation (the build sees setuptools and nothing of this venv): `pip install <clone>`,
`python -m build` (an sdist, then a wheel built from it), `pip install <sdist>`, and the wheel with
`[spark,lakehouse]` running the README's builder example on pyspark 4.1 with a CTAS that outlives its
credentials. Without a JDK or Maven the build stops in one line saying what to install.

The clone is of this worktree's HEAD (what CI checks out), so uncommitted edits are not in it.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from pyspark_catalog_ext.spark.jvm_deps import shim_build
from tests.conftest import ROOT
from tests.slow.test_stack_matrix import PIP, _assert_outlived, _conn, _pip_env, fast_catalog, run_job, s3_proxy  # noqa: F401 (fixtures)

SHIM_IN_WHEEL = "pyspark_catalog_ext/_jars/catalog-ext-shim.jar"
# What a fresh venv's install checks: the package imports without pyspark, carries the shim built
# from the clone's sources, and its CLI prints a Spark 4.1 conf (Apache's coordinates).
CHECK = """
import json, sys
import pyspark_catalog_ext as pce
from pyspark_catalog_ext.spark.jvm_deps import shim_build
from pyspark_catalog_ext.spark.conf import spark_conf
conf = spark_conf("local", uri="http://127.0.0.1:9/c", warehouse="w", credential="a:b", jars="maven", spark="4.1")
print(json.dumps({"file": pce.__file__, "shim": str(shim_build.shim_jar()), "hash": shim_build._embedded_hash(shim_build.shim_jar()),
                  "packages": conf["spark.jars.packages"], "pyspark": "pyspark" in sys.modules}))
"""


def _timed(cmd: list[str], what: str, timings: dict[str, float], **kwargs) -> subprocess.CompletedProcess:
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    timings[what] = round(time.monotonic() - started, 1)
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A clone of HEAD and `python -m build` of it: (clone, sdist, wheel, timings)."""
    tmp = tmp_path_factory.mktemp("from-source")
    clone = tmp / "clone"
    timings: dict[str, float] = {}
    _timed(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], "git clone", timings)
    _timed([sys.executable, "-m", "build", "--outdir", str(tmp / "dist"), str(clone)], "python -m build (sdist, then its wheel)",
           timings, env=_pip_env(), timeout=1800, cwd=tmp)
    [sdist] = (tmp / "dist").glob("pyspark_catalog_ext-*.tar.gz")
    [wheel] = (tmp / "dist").glob("pyspark_catalog_ext-*.whl")
    return clone, sdist, wheel, timings


def _fresh_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def _check(python: Path, venv: Path, clone: Path, tmp_path: Path) -> dict:
    import json

    proc = subprocess.run([str(python), "-c", CHECK], capture_output=True, text=True, cwd=tmp_path, env=_pip_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["file"].startswith(str(venv)), got  # installed, not this source tree
    assert got["shim"].startswith(str(venv)) and got["shim"].endswith(SHIM_IN_WHEEL.rsplit("/", 1)[1]), got  # the packaged jar
    assert got["hash"] == shim_build.source_hash(clone / "jvm-shim" / "src" / "main" / "java"), got
    assert got["packages"] == "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0,org.apache.iceberg:iceberg-aws-bundle:1.12.0"
    assert got["pyspark"] is False
    return got


def test_pip_install_from_a_clone_and_from_its_sdist_into_fresh_venvs(built, tmp_path):
    clone, sdist, wheel, timings = built
    with zipfile.ZipFile(wheel) as zf:
        assert SHIM_IN_WHEEL in zf.namelist(), "python -m build's wheel carries no shim"
    for what, target in (("clone", clone), ("sdist", sdist)):
        venv = tmp_path / f"venv-{what}"
        python = _fresh_venv(venv)
        _timed([str(python), *PIP, str(target)], f"pip install <{what}>", timings, env=_pip_env(), timeout=1800, cwd=tmp_path)
        _check(python, venv, clone, tmp_path)
    print("\ninstall from source:", timings)


def test_without_a_jdk_or_maven_the_source_build_stops_in_one_line(built, tmp_path):
    """pip's isolated build of the clone with no java, javac or mvn to be found: one line of ours
    naming what to install, and no traceback of ours."""
    clone, *_ = built
    env = {k: v for k, v in _pip_env().items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "empty-bin")  # pip and the build backend run by absolute paths
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path / "out"), str(clone)],
                          capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    ours = [line.strip() for line in output.splitlines() if "pyspark-catalog-ext:" in line]
    assert len(ours) == 1, output[-3000:]
    assert ours[0] == ("error: pyspark-catalog-ext: building the Java shim needs a JDK (no javac on PATH) and Maven (no mvn on PATH): "
                       "install a JDK >= 11 and Maven >= 3.8 (e.g. apt-get install openjdk-17-jdk-headless maven)"), ours
    assert "Traceback" not in output and "cachetools" not in output
    assert not list(tmp_path.rglob("*.whl"))


def test_the_built_wheel_with_spark_extra_runs_the_readme_example(built, lakehouse, fast_catalog, s3_proxy, tmp_path):  # noqa: F811
    """What a new user does: a fresh venv, `pip install 'pyspark-catalog-ext[spark,lakehouse]'` (the
    wheel python -m build made; `[spark]` brings pyspark 4.1), then configure() and a CTAS past the
    keys' expiry, on Iceberg 1.12 from Maven Central."""
    _, _, wheel, timings = built
    started = time.monotonic()
    venv = tmp_path / "venv-wheel"
    python = _fresh_venv(venv)
    _timed([str(python), *PIP, f"{wheel}[spark,lakehouse]"], "pip install <wheel>[spark,lakehouse]", timings,
           env=_pip_env(), timeout=1800, cwd=tmp_path)
    where = subprocess.run([str(python), "-c", "import pyspark, pyspark_catalog_ext as p; print(pyspark.__version__, p.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout.split()
    assert where[0].startswith("4.1.") and where[1].startswith(str(venv)), where
    s3_proxy.reset_counters()
    rows = 60  # a file per row, 250 ms each: one task of ~15 s (two LIFETIMEs), little CPU
    steps = run_job(python, {"conn": _conn(lakehouse, fast_catalog, s3_proxy),
                             "iceberg": None, "ns": f"fresh_{uuid.uuid4().hex[:6]}", "rows": rows, "ms": 250,
                             "repo": str(tmp_path / "repo"), "cwd": str(tmp_path), "only": "ctas"}, lakehouse.info.credential)
    print(f"\nfresh venv from the built wheel: {timings}, all {time.monotonic() - started:.0f} s")
    assert steps["configure"]["spark"].startswith("4.1.") and steps["configure"]["iceberg"].startswith("1.12.0")
    _assert_outlived(steps, s3_proxy, rows)
