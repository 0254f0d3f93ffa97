"""The shim's Java unit tests (jvm-shim/src/test/java), compiled with the real javac against the
real jars and run in one JVM by `UnitTestRunner`; one pytest result per test class."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from pyspark_catalog_ext.spark import shim_build as jvm

TEST_SRC = Path(__file__).resolve().parents[2] / "jvm-shim" / "src" / "test" / "java"
TEST_CLASSES = sorted(p.stem for p in TEST_SRC.rglob("*Test.java"))


@pytest.fixture(scope="module")
def java_unit_results(tmp_path_factory, jar_paths) -> dict[str, list[str]]:
    """Compile main + test sources, run every test class once; {class: [result lines]}."""
    java = jvm.check_java()
    out = tmp_path_factory.mktemp("java-units")
    classpath = os.pathsep.join([str(jvm.shim_jar()), *map(str, jar_paths), str(jvm._pyspark_jars_dir() / "*")])
    sources = sorted(str(p) for p in TEST_SRC.rglob("*.java"))
    build = subprocess.run([str(java.javac), *jvm.JAVAC_FLAGS, "-cp", classpath,
                            "-d", str(out), *sources], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    names = [f"io.catalogext.shim.{name}" for name in TEST_CLASSES]
    run = subprocess.run([str(java.java), "-cp", os.pathsep.join([str(out), classpath]),
                          "io.catalogext.shim.UnitTestRunner", *names],
                         capture_output=True, text=True, timeout=600)
    results: dict[str, list[str]] = {name: [] for name in TEST_CLASSES}
    for line in run.stdout.splitlines():
        match = re.match(r"(PASS|FAIL) (\w+)", line)
        if match:
            results.setdefault(match.group(2).split(".")[0], []).append(line)
    results["__stderr__"] = run.stderr.splitlines()[-60:]
    return results


@pytest.mark.parametrize("test_class", TEST_CLASSES)
def test_java_unit_class(java_unit_results, test_class):
    lines = java_unit_results[test_class]
    assert lines, f"{test_class} ran no test\n" + "\n".join(java_unit_results["__stderr__"])
    failures = [line for line in lines if line.startswith("FAIL")]
    assert not failures, "\n".join(failures + java_unit_results["__stderr__"])
