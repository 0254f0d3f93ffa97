"""The Python side on a real pyspark 4.1 (the `.venvs/pyspark-4.1` venv of test_stack_matrix.py:
pyspark 4.1.x + this package editable, made once and shared with it): `demo` fetches the jars of the
installed pyspark's stack, not the Spark 3.5 wheels, and configure()/lakehouse_session() refuse a
Java 11 for Spark 4 in one line before any JVM starts (the old Java is a fake `bin/java` printing
an old banner, found through JAVA_HOME: only Java 17 and 25 exist here).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from pyspark_catalog_ext.spark.jars import select_stack
from tests.slow.test_stack_matrix import _pip_env, spark_venv
from tests.unit.test_java_check import JAVA_11, fake_java_home


@pytest.fixture(scope="module")
def python41():
    return spark_venv("4.1")


def _run(python, code: str, tmp_path, **env: str) -> dict:
    """`code` in the pyspark 4.1 venv, outside this tree's sys.path; its last stdout line as JSON."""
    environ = {k: v for k, v in _pip_env().items() if k not in ("JAVA_HOME", "PYSPARK_GATEWAY_PORT", "SPARK_REMOTE", "SPARK_HOME")}
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**environ, **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


DEMO_JARS = """
import json, pyspark
from pyspark_catalog_ext.cli.demo import prepare_jvm
lines = []
jvm = prepare_jvm(lines.append)
print(json.dumps({"pyspark": pyspark.__version__, "spark": jvm.stack.spark, "iceberg": jvm.stack.iceberg,
                  "jars": [p.name for p in jvm.jars], "exist": all(p.is_file() for p in jvm.jars), "lines": lines}))
"""


def test_demo_fetches_the_jars_of_the_installed_pyspark_4_stack(python41, tmp_path):
    got = _run(python41, DEMO_JARS, tmp_path)
    stack = select_stack("4.1")  # what configure() picks for pyspark 4.1: Iceberg 1.12.0 from Maven Central
    assert got["pyspark"].startswith("4.1.")
    assert (got["spark"], got["iceberg"]) == (stack.spark, stack.iceberg)
    assert got["jars"][:-1] == stack.jar_names() and got["jars"][-1].startswith("catalog-ext-shim"), got["jars"]
    assert got["exist"]
    assert "Spark 4.1 + Iceberg 1.12.0" in got["lines"][0] and "Maven Central" in got["lines"][0], got["lines"]


JAVA_CHECK = """
import json
from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark_catalog_ext import configure, lakehouse_session
from pyspark_catalog_ext.errors import JavaError
errors = {}
try:
    configure(SparkSession.builder, "local", uri="http://127.0.0.1:9/catalog", warehouse="w", credential="a:b", check=False)
except JavaError as exc:
    errors["configure"] = str(exc)
try:
    lakehouse_session(None)  # the Java check comes before the lakehouse is used
except JavaError as exc:
    errors["lakehouse_session"] = str(exc)
print(json.dumps({"errors": errors, "jvm_started": SparkContext._gateway is not None}))
"""


def test_spark_4_refuses_java_11_in_one_line_before_any_jvm(python41, tmp_path):
    home = fake_java_home(tmp_path / "jdk11", JAVA_11)
    got = _run(python41, JAVA_CHECK, tmp_path, JAVA_HOME=str(home))
    assert got["jvm_started"] is False
    assert set(got["errors"]) == {"configure", "lakehouse_session"}, got
    for message in got["errors"].values():
        assert message.startswith(f"Java 11.0.22 at {home / 'bin' / 'java'} is too old for Spark 4.1 + Iceberg 1.12.0 (needs >= 17); "), message
        assert "JAVA_HOME" in message and "\n" not in message


def test_spark_4_accepts_this_machines_java_17(python41, tmp_path):
    code = JAVA_CHECK.replace("lakehouse_session(None)", "pass").replace('check=False)', 'check=False, jars=None)')
    assert _run(python41, code, tmp_path, **({"JAVA_HOME": os.environ["JAVA_HOME"]} if "JAVA_HOME" in os.environ else {})) == \
        {"errors": {}, "jvm_started": False}
