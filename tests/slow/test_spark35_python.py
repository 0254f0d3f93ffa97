"""The Python side on a real pyspark 3.5 (the `.venvs/pyspark-3.5` venv of test_stack_matrix.py:
pyspark 3.5.x + this package editable, made once and shared with it), now that the dev venv runs
pyspark 4.1: `demo` fetches Spark 3.5's default stack (Iceberg 1.12.0) from Maven Central, and on a
Java 11 (a fake `bin/java` printing an old banner, found through JAVA_HOME: only Java 17 and 25 exist
here) configure() and spark-conf take Iceberg 1.10.2 instead, saying so in one line, before any JVM
starts; Java 8 is refused in one line.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import PYPI_STACK, select_stack
from tests.helpers import fake_java_home
from tests.slow.test_stack_matrix import _pip_env, spark_venv
from tests.unit.spark.test_java_check import JAVA_8, JAVA_11

FALLBACK = ("pyspark-catalog-ext: Java 11 cannot run Iceberg 1.12.0 (1.11+ needs Java 17): Spark 3.5 takes Iceberg 1.10.2 instead; "
            "a JDK >= 17 (JAVA_HOME) gets 1.12.0")


@pytest.fixture(scope="module")
def python35():
    return spark_venv("3.5")


def _run(python, code: str, tmp_path, **env: str) -> tuple[dict, str]:
    """`code` in the pyspark 3.5 venv, outside this tree's sys.path: (its last stdout line as JSON, its stderr)."""
    environ = {k: v for k, v in _pip_env().items() if k not in ("JAVA_HOME", "PYSPARK_GATEWAY_PORT", "SPARK_REMOTE", "SPARK_HOME")}
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**environ, **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


DEMO_JARS = """
import json, pyspark
from pyspark_catalog_ext.cli.demo import prepare_jvm
lines = []
jvm = prepare_jvm(lines.append)
print(json.dumps({"pyspark": pyspark.__version__, "spark": jvm.stack.spark, "iceberg": jvm.stack.iceberg, "route": jvm.route,
                  "jars": [p.name for p in jvm.jars], "exist": all(p.is_file() for p in jvm.jars), "lines": lines}))
"""


def test_demo_fetches_spark_3_5s_default_stack_from_maven_central(python35, tmp_path):
    got, _ = _run(python35, DEMO_JARS, tmp_path)
    stack = select_stack("3.5")  # Spark 3.5's default: Iceberg 1.12.0, Apache's jars from Central
    assert got["pyspark"].startswith("3.5.")
    assert (got["spark"], got["iceberg"], got["route"]) == (stack.spark, stack.iceberg, "maven") == ("3.5", "1.12.0", "maven")
    assert got["jars"][:-1] == stack.jar_names() and got["jars"][-1].startswith("catalog-ext-shim"), got["jars"]
    assert got["exist"]
    assert "Spark 3.5 + Iceberg 1.12.0" in got["lines"][0] and "Maven Central" in got["lines"][0], got["lines"]


JAVA_CHECK = """
import json
from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark_catalog_ext import configure
from pyspark_catalog_ext.errors import JavaError
conn = dict(uri="http://127.0.0.1:9/catalog", warehouse="w", credential="a:b")
packages = None
try:
    builder = configure(SparkSession.builder, "local", check=False, jars="maven", shim=False, **conn)
    packages = builder._options["spark.jars.packages"]
    error = None
except JavaError as exc:
    error = str(exc)
print(json.dumps({"error": error, "packages": packages, "jvm_started": SparkContext._gateway is not None}))
"""


def test_java_11_takes_iceberg_1_10_in_one_line_and_java_8_is_refused(python35, tmp_path):
    eleven, stderr = _run(python35, JAVA_CHECK, tmp_path, JAVA_HOME=str(fake_java_home(tmp_path / "jdk11", JAVA_11)))
    assert eleven == {"error": None, "packages": PYPI_STACK.maven_packages, "jvm_started": False}, eleven
    # One line, though configure() picks the stack twice (its Java check, then its settings).
    assert [line for line in stderr.splitlines() if "cannot run" in line] == [FALLBACK], stderr
    eight, _ = _run(python35, JAVA_CHECK, tmp_path, JAVA_HOME=str(fake_java_home(tmp_path / "jdk8", JAVA_8)))
    assert eight["jvm_started"] is False
    assert eight["error"] and "Java 1.8.0_392" in eight["error"] and "too old for Spark 3.5" in eight["error"], eight
    assert "\n" not in eight["error"]


def test_spark_conf_cli_on_java_11_prints_the_1_10_stack(python35, tmp_path):
    cli = [str(python35), "-m", "pyspark_catalog_ext.cli", "spark-conf", "--uri", "http://127.0.0.1:9/c", "--warehouse", "w",
           "--credential-env", "TEST_CREDENTIAL", "--jars", "maven", "--no-shim", "--format", "defaults"]
    environ = {k: v for k, v in _pip_env().items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    proc = subprocess.run(cli, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**environ, "TEST_CREDENTIAL": "a:b", "JAVA_HOME": str(fake_java_home(tmp_path / "jdk11", JAVA_11))})
    assert proc.returncode == 0, proc.stderr
    conf = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert conf["spark.jars.packages"] == PYPI_STACK.maven_packages
    assert FALLBACK in proc.stderr.splitlines()
