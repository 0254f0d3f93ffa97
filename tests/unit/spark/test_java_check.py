"""The Java check per stack: Spark 4 and Iceberg >= 1.11 need Java 17 (their class files), Spark 3.5
with Iceberg 1.10 (>= 1.7) and the shim Java 11; on Java 11 Spark 3.5's default falls back to
Iceberg 1.10.2. Only Java 17 and 25 exist here, so an old Java is a tiny `bin/java` script printing
an old `-version` banner, found through JAVA_HOME as Spark's launcher would find it (the environment
is faked, not our code). configure() runs here on this venv's pyspark 4.1; the same on a real pyspark
3.5 (the Java 11 fallback end to end) is in tests/slow/test_spark35_python.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyspark_catalog_ext.errors import ConfigError, JavaError
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import JvmStack, select_stack
from pyspark_catalog_ext.spark.jvm_deps.shim_build import check_java, min_java_for_stack
from tests.helpers import fake_java_home

JAVA_11 = 'openjdk version "11.0.22" 2024-01-16'
JAVA_17 = 'openjdk version "17.0.13" 2024-10-15'
JAVA_21 = 'openjdk version "21.0.5" 2024-10-15'
JAVA_25 = 'openjdk version "25.0.3" 2026-04-21'
JAVA_8 = 'openjdk version "1.8.0_392"'


@pytest.mark.parametrize("version", ["4.0", "4.1", "4.1.3"])
def test_java_11_is_too_old_for_spark_4_in_one_line(monkeypatch, tmp_path, version):
    home = fake_java_home(tmp_path, JAVA_11)
    monkeypatch.setenv("JAVA_HOME", str(home))
    with pytest.raises(JavaError) as err:
        check_java(spark=version)
    msg = str(err.value)
    line = ".".join(version.split(".")[:2])
    assert msg.startswith(f"Java 11.0.22 at {home / 'bin' / 'java'} is too old for Spark {line} (needs >= 17); "), msg
    assert "JDK >= 17" in msg and "JAVA_HOME" in msg and "\n" not in msg


def test_java_11_is_too_old_for_iceberg_1_11_and_later_on_spark_3_5(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(fake_java_home(tmp_path, JAVA_11)))
    for iceberg in ("1.11.0", "1.12.0"):
        with pytest.raises(JavaError, match=rf"too old for Spark 3\.5 \+ Iceberg {iceberg} \(needs >= 17\); install a JDK >= 17"):
            check_java(spark="3.5", iceberg=iceberg)


def test_java_11_is_enough_for_spark_3_5_with_iceberg_1_10(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(fake_java_home(tmp_path, JAVA_11)))
    assert check_java(spark="3.5", iceberg="1.10.2").major == 11
    assert check_java(spark="3.5").major == 11
    assert check_java().major == 11  # without a stack: the package's floor only


def test_java_8_is_too_old_for_spark_3_5(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(fake_java_home(tmp_path, JAVA_8)))
    with pytest.raises(JavaError, match=r"^Java 1\.8\.0_392 at \S+ is too old for Spark 3\.5 \+ Iceberg 1\.10\.2 \(needs >= 11\); "):
        check_java(spark="3.5.9", iceberg="1.10.2")


def test_min_java_per_stack():
    assert [min_java_for_stack(v) for v in ("3.5", "3.5.9", "4.0", "4.1.1", "5.0")] == [11, 11, 17, 17, 17]
    assert [min_java_for_stack("3.5", v) for v in ("1.10.2", "1.11.0", "1.12")] == [11, 17, 17]
    assert min_java_for_stack("4.1", "1.10.2") == 17
    with pytest.raises(ConfigError, match="not a version"):
        min_java_for_stack("latest")


def test_java_11_takes_spark_3_5_to_iceberg_1_10_in_one_line():
    """Iceberg 1.11+ cannot run on Java 11: Spark 3.5's default (1.12.0) falls back to the newest
    1.10 release there, and says so once; an Iceberg release the user picked is never swapped."""
    lines: list[str] = []
    assert select_stack("3.5", java=11, progress=lines.append) == JvmStack("3.5", "1.10.2", "2.12")
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "Java 11 cannot run Iceberg 1.12.0" in lines[0] and "Spark 3.5 takes Iceberg 1.10.2" in lines[0] and "JDK >= 17" in lines[0]
    lines.clear()
    assert select_stack("3.5", java=17, progress=lines.append).iceberg == "1.12.0" and lines == []
    assert select_stack("3.5", "1.12", java=11, progress=lines.append).iceberg == "1.12.0" and lines == []  # check_java refuses it then
    assert select_stack("4.1", java=11, progress=lines.append).iceberg == "1.12.0" and lines == []  # nothing on 4.1 runs on 11


def test_the_real_java_passes_for_every_spark_line():
    for line in ("3.5", "4.0", "4.1"):
        assert check_java(spark=line, iceberg="1.12.0").major >= 17  # Java 17 is this machine's default


# configure() in a fresh interpreter (no JVM of another test in the way), with this venv's pyspark 4.1.
CONFIGURE = """
import json, os
from pyspark.sql import SparkSession
from pyspark import SparkContext
from pyspark_catalog_ext import configure
from pyspark_catalog_ext.errors import JavaError
try:
    configure(SparkSession.builder, "local", uri="http://127.0.0.1:9/catalog", warehouse="w", credential="a:b", jars=None, check=False,
              iceberg=os.environ.get("TEST_ICEBERG"))
    error = None
except JavaError as exc:
    error = str(exc)
print(json.dumps({"error": error, "jvm_started": SparkContext._gateway is not None}))
"""


def _configure_with_java(home: Path, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT", "SPARK_REMOTE")}
    proc = subprocess.run([sys.executable, "-c", CONFIGURE], capture_output=True, text=True, timeout=120,
                          env={**environ, "JAVA_HOME": str(home), **env})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_configure_checks_java_for_the_installed_spark_before_any_jvm(tmp_path):
    import pyspark

    assert pyspark.__version__.startswith("4.1.")  # the dev venv; pyspark 3.5 runs in the slow test
    java8, java11 = fake_java_home(tmp_path / "8", JAVA_8), fake_java_home(tmp_path / "11", JAVA_11)
    old = _configure_with_java(java8)
    assert old["jvm_started"] is False
    assert old["error"] and "too old for Spark 4.1 + Iceberg 1.12.0 (needs >= 17)" in old["error"] and "\n" not in old["error"]
    eleven = _configure_with_java(java11, TEST_ICEBERG="1.11")
    assert eleven["jvm_started"] is False and "too old for Spark 4.1 + Iceberg 1.11.0 (needs >= 17)" in eleven["error"], eleven
    # A Python that spark-submit started talks to its parent JVM: the Java here is not the one that runs.
    assert _configure_with_java(java8, PYSPARK_GATEWAY_PORT="1")["error"] is None
    # A Spark Connect server at an sc:// URL runs on its own Java; remote "local" starts one here.
    assert _configure_with_java(java8, SPARK_REMOTE="sc://127.0.0.1:15002")["error"] is None
    assert "too old for Spark 4.1" in _configure_with_java(java8, SPARK_REMOTE="local")["error"]
    assert _configure_with_java(Path(os.environ.get("JAVA_HOME") or check_java().java.resolve().parent.parent)) == \
        {"error": None, "jvm_started": False}


@pytest.mark.parametrize("line", ["3.5", "4.0", "4.1"])
def test_java_25_is_too_new_for_spark_up_to_4_1_in_one_line(monkeypatch, tmp_path, line):
    home = fake_java_home(tmp_path, JAVA_25)
    monkeypatch.setenv("JAVA_HOME", str(home))
    with pytest.raises(JavaError) as err:
        check_java(spark=line, iceberg="1.12.0")
    msg = str(err.value)
    assert msg.startswith(f"Java 25.0.3 at {home / 'bin' / 'java'} is too new for Spark {line} + Iceberg 1.12.0: "), msg
    assert "Subject.getSubject" in msg and "JAVA_HOME" in msg and "\n" not in msg
    assert check_java().major == 25  # without a stack (building the shim, the doctor's catalog probes): no limit


def test_java_21_runs_every_spark_line(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(fake_java_home(tmp_path, JAVA_21)))
    assert {check_java(spark=line, iceberg="1.12.0").major for line in ("3.5", "4.0", "4.1", "4.2")} == {21}



class _Builder:
    """A SparkSession.Builder as configure() uses one, without pyspark's shared state."""

    def __init__(self) -> None:
        self._options: dict[str, str] = {}

    def config(self, key: str, value: str) -> _Builder:
        self._options[key] = value
        return self

    def getOrCreate(self) -> None:
        raise AssertionError("no session in a unit test")


@pytest.mark.parametrize("java, pyspark, iceberg", [(JAVA_17, None, "1.12"), (JAVA_17, None, None), (JAVA_11, "3.5.9", None)])
def test_one_configure_call_chooses_the_stack_once(monkeypatch, tmp_path, capsys, java, pyspark, iceberg):
    """configure() checks the Java for the stack a local driver JVM will run, then sets the jars of
    that same stack: one select_stack call for both, its one line (Java 11 takes Spark 3.5 to
    Iceberg 1.10.2) said once, where the jars are set."""
    from pyspark_catalog_ext import configure
    from pyspark_catalog_ext.spark.jvm_deps import jvm_stacks

    for name in ("PYSPARK_GATEWAY_PORT", "SPARK_REMOTE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JAVA_HOME", str(fake_java_home(tmp_path, java)))
    if pyspark is not None:
        monkeypatch.setattr(jvm_stacks, "installed_spark_version", lambda: pyspark)
    calls = []
    select = jvm_stacks.select_stack

    def counted(*args, **kwargs):
        calls.append((args, kwargs.get("java")))
        return select(*args, **kwargs)

    monkeypatch.setattr(jvm_stacks, "select_stack", counted)
    builder = configure(_Builder(), "local", uri="http://127.0.0.1:9/catalog", warehouse="w", credential="a:b", jars="maven", shim=False,
                        check=False, iceberg=iceberg)
    assert len(calls) == 1, calls
    stack = select(pyspark, iceberg, java=11 if java == JAVA_11 else 17, progress=lambda line: None)
    assert builder._options["spark.jars.packages"] == stack.maven_packages
    said = [line for line in capsys.readouterr().err.splitlines() if "cannot run Iceberg" in line]
    assert len(said) == (1 if java == JAVA_11 else 0), said
