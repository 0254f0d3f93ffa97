"""The package layout: subpackages by concern, no old flat module left, one Py4J boundary, the CLI runnable as a module."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import pyspark_catalog_ext


def test_the_public_api_is_complete_and_old_flat_modules_are_gone() -> None:
    assert set(pyspark_catalog_ext.__all__) <= set(dir(pyspark_catalog_ext))
    package = Path(pyspark_catalog_ext.__file__).parent
    flat = sorted(p.stem for p in package.glob("*.py"))
    # Top level: the public API, the CLI, errors, and the helpers every concern shares.
    assert flat == ["__init__", "cache", "errors", "events", "knobs", "logsafety", "progress", "secret_keys"], flat
    for old in ("session", "local", "catalog_client", "jvm_api", "maintenance", "signer", "pyiceberg_bridge"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"pyspark_catalog_ext.{old}")


def test_the_staged_and_governance_helpers_are_on_the_package_face_and_load_on_first_use() -> None:
    """`from pyspark_catalog_ext import stage_create` works; importing the package alone still
    imports neither pyspark nor the helpers' modules."""
    from pyspark_catalog_ext import NotificationSink, StagedTable, notifications, stage_create, stage_replace, stage_table
    from pyspark_catalog_ext.governance.notifications import NotificationSink as deep_sink
    from pyspark_catalog_ext.staging import staged

    assert (stage_create, stage_replace, stage_table, StagedTable) == (
        staged.stage_create, staged.stage_replace, staged.stage_table, staged.StagedTable)
    assert NotificationSink is deep_sink is notifications.NotificationSink
    probe = ("import sys, pyspark_catalog_ext as p; "
             "print(sorted(m for m in sys.modules if m.startswith(('pyspark.', 'pyspark_catalog_ext.staging', "
             "'pyspark_catalog_ext.governance', 'pyspark_catalog_ext.events')) or m == 'pyspark')); "
             "print('stage_create' in dir(p))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True"], out


@pytest.mark.parametrize(("old", "new"), [("governance.events", "pyspark_catalog_ext.events"),
                                           ("governance.jvm_events", "pyspark_catalog_ext.spark.jvm_events")])
def test_a_moved_module_names_its_new_place(old: str, new: str) -> None:
    with pytest.raises(ImportError, match=f"moved to {new}; import that instead"):
        importlib.import_module(f"pyspark_catalog_ext.{old}")


@pytest.mark.parametrize("name", ["attach", "CredentialManager", "TableStatus", "manager"])
def test_a_moved_credentials_name_names_its_new_place(name: str) -> None:
    import pyspark_catalog_ext.credentials as credentials

    with pytest.raises(AttributeError, match=f"credentials.{name} moved to pyspark_catalog_ext"):
        getattr(credentials, name)


def test_cli_runs_as_a_module_without_warnings() -> None:
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "pyspark_catalog_ext.cli", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "spark-conf" in proc.stdout and "Warning" not in proc.stderr


def _code_strings_and_attrs(path: Path) -> tuple[list[str], list[str]]:
    """String constants (docstrings excluded) and attribute names used in a module's code."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    strings = [n.value for n in ast.walk(tree)
               if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]
    attrs = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)]
    return strings, attrs


def test_only_jvm_api_calls_into_the_jvm() -> None:
    """One narrow Py4J boundary: only jvm_api touches `_jvm` or names the shim's classes."""
    package = Path(pyspark_catalog_ext.__file__).parent
    offenders = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "shim_api.py":
            continue
        strings, attrs = _code_strings_and_attrs(path)
        rel = path.relative_to(package).as_posix()
        offenders += [f"{rel}: ._jvm" for a in attrs if a == "_jvm"]
        offenders += [f"{rel}: {s!r}" for s in strings if "io.catalogext.shim." in s]
        offenders += [f"{rel}: .{a}" for a in attrs if a == "catalogext"]
    assert not offenders, "call the JVM through pyspark_catalog_ext.spark.shim_api.ShimJvm: " + ", ".join(offenders)


def test_the_boundary_check_sees_a_jvm_call(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('"""Docs may name io.catalogext.shim.X."""\n'
                   'def f(spark):\n    return spark.sparkContext._jvm.io.catalogext.shim.EventLog, "io.catalogext.shim.Y"\n')
    strings, attrs = _code_strings_and_attrs(bad)
    assert "_jvm" in attrs and "catalogext" in attrs and strings == ["io.catalogext.shim.Y"]


def _exception_classes_outside_errors(package: Path) -> dict[str, list[str]]:
    """{module: [class, ...]} of classes named *Error/*Refused defined outside errors.py."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        if path.name == "errors.py" and path.parent == package:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Refused", "Exception")):
                bases = [ast.unparse(b) for b in node.bases]
                found.setdefault(str(path.relative_to(package)), []).append(f"{node.name}({', '.join(bases)})")
    return found


def test_errors_live_in_one_module() -> None:
    """Every error class is in errors.py, except those that must also subclass a PyIceberg exception."""
    package = Path(pyspark_catalog_ext.__file__).parent
    pyiceberg_bases = ("BadRequestError", "CommitFailedException", "CommitStateUnknownException")
    strays = {module: [c for c in classes if not any(b in c for b in pyiceberg_bases)]
              for module, classes in _exception_classes_outside_errors(package).items()}
    assert not {m: c for m, c in strays.items() if c}, strays
