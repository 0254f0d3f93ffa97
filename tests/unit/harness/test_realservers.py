"""The real-server machinery's own edges (tests/realservers): what a machine without Maven or a
new enough Java gets is a skip reason naming the missing tool, never a traceback deep in a fixture."""
from __future__ import annotations

import pytest

from tests.realservers import artifacts
from tests.realservers.artifacts import ServerUnavailable


def test_no_java_new_enough_names_where_it_looked(monkeypatch):
    monkeypatch.delenv("REALSERVERS_JAVA_HOME", raising=False)
    with pytest.raises(ServerUnavailable, match=r"no Java 99\+ found .*REALSERVERS_JAVA_HOME"):
        artifacts.find_java(99)


def test_java_home_override_is_taken_when_new_enough(monkeypatch):
    found = artifacts.find_java(17)  # the machine's default (Spark's) Java
    monkeypatch.setenv("REALSERVERS_JAVA_HOME", str(found.home))
    assert artifacts.find_java(found.major).major >= found.major


def test_without_maven_resolution_is_unavailable_not_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn anywhere
    monkeypatch.setenv("REALSERVERS_M2_REPO", str(tmp_path / "m2"))  # an empty cache: Maven would be needed
    with pytest.raises(ServerUnavailable, match="Maven .mvn. is not on PATH"):
        artifacts.nessie_runner()


def test_the_rest_fixture_pom_pins_one_iceberg_version():
    assert artifacts.rest_fixture_version() == "1.11.0"
