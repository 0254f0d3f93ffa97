"""Each rule that both runtimes implement has a twin in each, and each twin names the other's path:
a Python module names its Java class as `io.catalogext.shim.<package>.<Class>`, the Java class names
its Python module as `pyspark_catalog_ext.<package>.<module>`. Every such pointer anywhere in either
runtime's code must resolve, so a moved or renamed twin breaks this test, not a reader's trail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "pyspark_catalog_ext"
JAVA = ROOT / "jvm-shim" / "src"
SHIM_MAIN = JAVA / "main" / "java"

#: (Python module, Java class): the twins, one rule each.
TWINS = [
    ("pyspark_catalog_ext.commit.decision", "io.catalogext.shim.commit.CommitDecision"),
    ("pyspark_catalog_ext.commit.policy", "io.catalogext.shim.commit.CommitPolicy"),
    ("pyspark_catalog_ext.commit.idempotency", "io.catalogext.shim.commit.IdempotencyKeys"),
    ("pyspark_catalog_ext.refresh.policy", "io.catalogext.shim.config.RefreshPolicy"),
    ("pyspark_catalog_ext.refresh.rules", "io.catalogext.shim.config.CredentialRules"),
    ("pyspark_catalog_ext.refresh.entry", "io.catalogext.shim.refresh.TableEntry"),
    ("pyspark_catalog_ext.refresh.refresher", "io.catalogext.shim.refresh.CredentialRegistry"),
    ("pyspark_catalog_ext.refresh.scheduler", "io.catalogext.shim.refresh.RefreshSchedule"),
    ("pyspark_catalog_ext.refresh.strategies", "io.catalogext.shim.refresh.CatalogRefresher"),
    ("pyspark_catalog_ext.refresh.rejection", "io.catalogext.shim.refresh.RejectionLedger"),
    ("pyspark_catalog_ext.catalog.trust_rules", "io.catalogext.shim.config.TrustRules"),
    ("pyspark_catalog_ext.event_schemas", "io.catalogext.shim.events.EventSchemas"),
    ("pyspark_catalog_ext.knobs", "io.catalogext.shim.config.Knobs"),
]

JAVA_POINTER = re.compile(r"\bio\.catalogext\.shim(?:\.[a-z]+)*\.[A-Z]\w*")
PYTHON_POINTER = re.compile(r"\bpyspark_catalog_ext(?:\.\w+)+")


def python_file(module: str) -> Path:
    parts = module.split(".")
    file = ROOT.joinpath(*parts).with_suffix(".py")
    return file if file.is_file() else ROOT.joinpath(*parts, "__init__.py")


def java_file(qualified: str) -> Path:
    return SHIM_MAIN.joinpath(*qualified.split(".")).with_suffix(".java")


def java_resolves(pointer: str) -> bool:
    """A class, or a member of one (`...Class.NESTED` is cut at the first capitalised part)."""
    parts = pointer.split(".")
    first_class = next(i for i, p in enumerate(parts) if p[:1].isupper())
    return java_file(".".join(parts[: first_class + 1])).is_file()


def python_resolves(pointer: str) -> bool:
    """A module, or an attribute of the longest module prefix (found in its source, not imported)."""
    parts = pointer.rstrip(".").split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if not python_file(module).is_file():
            continue
        rest = parts[cut:]
        if not rest:
            return True
        source = python_file(module).read_text()
        return bool(re.search(rf"^\s*(?:class|def)\s+{rest[0]}\b|^{rest[0]}\s*[:=]|\b{rest[0]}\b.*import|import .*\b{rest[0]}\b",
                              source, re.M))
    return False


@pytest.mark.parametrize(("module", "klass"), TWINS, ids=[m.rsplit(".", 1)[1] + "-" + k.rsplit(".", 1)[1] for m, k in TWINS])
def test_each_twin_names_the_other(module: str, klass: str) -> None:
    py, java = python_file(module), java_file(klass)
    assert py.is_file() and java.is_file(), (py, java)
    assert klass in py.read_text(), f"{py.relative_to(ROOT)} does not name its Java twin {klass}"
    assert module in java.read_text(), f"{java.relative_to(ROOT)} does not name its Python twin {module}"


def test_every_pointer_between_the_runtimes_resolves() -> None:
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for pointer in set(JAVA_POINTER.findall(path.read_text())):
            if not java_resolves(pointer):
                broken.append(f"{path.relative_to(ROOT)}: {pointer}")
    for path in sorted(JAVA.rglob("*.java")):
        for pointer in set(PYTHON_POINTER.findall(path.read_text())):
            if not python_resolves(pointer):
                broken.append(f"{path.relative_to(ROOT)}: {pointer}")
    assert not broken, "pointers to a twin that is not there:\n" + "\n".join(broken)


def test_the_check_sees_a_broken_pointer() -> None:
    assert java_resolves("io.catalogext.shim.commit.CommitDecision")
    assert not java_resolves("io.catalogext.shim.refresh.RefreshPolicy")  # it lives in config
    assert python_resolves("pyspark_catalog_ext.commit.decision")
    assert python_resolves("pyspark_catalog_ext.spark.shim_api.ShimJvm")
    assert not python_resolves("pyspark_catalog_ext.catalog.commit_decision")
    assert not python_resolves("pyspark_catalog_ext.spark.shim_api.NoSuchThing")
