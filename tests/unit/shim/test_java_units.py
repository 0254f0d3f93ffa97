"""The shim's Java unit tests (jvm-shim/src/test/java, JUnit 5), run by Maven's surefire for the
default profile (the oldest stack, which the shipped shim is built against) with the real javac, jars and JVM; one pytest result per
test class, read from surefire's XML reports. CI (.ci/run) also runs them on every matrix profile."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

import pytest

from pyspark_catalog_ext.spark.jvm_deps import shim_build as jvm
from tests.helpers import ROOT

TEST_SRC = ROOT / "jvm-shim" / "src" / "test" / "java"
TEST_CLASSES = sorted(p.stem for p in TEST_SRC.rglob("*Test.java"))


@pytest.fixture(scope="module")
def surefire_reports(tmp_path_factory) -> dict[str, ET.Element]:
    """`mvn verify` (default profile) into a private build dir; {test class: its <testsuite> report}."""
    mvn = jvm.find_maven()
    assert mvn is not None, "Maven (mvn) is not on PATH; install Maven >= 3.8 (apt-get install maven) to run the Java tests"
    build = tmp_path_factory.mktemp("mvn-build")
    proc = subprocess.run([str(mvn), "-B", "-ntp", "-f", str(jvm.shim_pom()), "verify", f"-Dshim.build.dir={build}"],
                          capture_output=True, text=True, timeout=1200)
    reports = {}
    for path in (build / "surefire-reports").glob("TEST-*.xml"):
        suite = ET.parse(path).getroot()
        reports[suite.get("name", "").rsplit(".", 1)[-1]] = suite
    # A compile error or a crashed fork leaves no report: say what Maven said.
    assert reports, "surefire wrote no report\n" + "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
    return reports


@pytest.mark.parametrize("test_class", TEST_CLASSES)
def test_java_unit_class(surefire_reports, test_class):
    suite = surefire_reports.get(test_class)
    assert suite is not None, f"{test_class}: surefire has no report for it (not run, or not a JUnit 5 class?)"
    cases = suite.findall("testcase")
    assert cases, f"{test_class} ran no test (is each test method annotated @Test?)"
    failures = []
    for case in cases:
        for problem in [*case.findall("failure"), *case.findall("error")]:
            failures.append(f"{case.get('name')}: {problem.get('type')}: {problem.get('message')}\n{(problem.text or '')[:3000]}")
    assert not failures, "\n".join(failures)
