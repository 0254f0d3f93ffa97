"""The module split keeps old import locations working and the CLI runnable as a module."""

from __future__ import annotations

import subprocess
import sys

import pyspark_catalog_ext


def test_old_session_names_still_import() -> None:
    from pyspark_catalog_ext import session

    for name in ("configure", "lakehouse_session", "spark_conf", "catalog_properties", "CatalogSparkConf",
                 "check_catalog", "pyiceberg_catalog", "pyiceberg_config", "REDACTION_REGEX", "EXTENSIONS",
                 "SPARK_CATALOG", "SHIM_CATALOG_IMPL", "SHIM_CLIENT_FACTORY", "add_connection_arguments",
                 "connection_kwargs"):
        assert callable(getattr(session, name)) or isinstance(getattr(session, name), str), name
    from pyspark_catalog_ext.jars import cache_dir, file_lock, sha256_file  # noqa: F401

    assert set(pyspark_catalog_ext.__all__) <= set(dir(pyspark_catalog_ext))


def test_cli_runs_as_a_module_without_warnings() -> None:
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "pyspark_catalog_ext.cli", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "spark-conf" in proc.stdout and "Warning" not in proc.stderr
