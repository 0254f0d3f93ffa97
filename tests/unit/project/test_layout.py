"""The package layout: subpackages by concern, no old flat module left, one Py4J boundary, the CLI runnable as a module."""

from __future__ import annotations

import ast
import importlib
import os
import re
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
    assert flat == ["__init__", "cache", "errors", "event_schemas", "events", "knobs", "logsafety", "markdown", "ports", "processes", "progress",
                    "secret_keys"], flat
    for old in ("session", "local", "catalog_client", "jvm_api", "maintenance", "signer", "pyiceberg_bridge", "credentials",
                "pyiceberg_ext.refresher", "catalog.commit_decision", "pyiceberg_ext.signing", "pyiceberg_ext.part_upload",
                "pyiceberg_ext.s3upload", "pyiceberg_ext.storeupload", "spark.jars", "spark.jvm_stacks", "spark.maven_jars",
                "spark.pypi_jars", "spark.maven_repo", "spark.shim_maven", "spark.shim_build", "spark.store_jars"):
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


def test_configuring_a_session_never_imports_the_lakehouse_server() -> None:
    """The lakehouse sits above everything that configures a session: spark_conf for profile `local`
    finds a running one through catalog/local_lakehouse.py, and the package face loads the server
    only when `Lakehouse` or `start_lakehouse` is used."""
    probe = ("import sys, pyspark_catalog_ext as p\n"
             "try:\n    p.spark_conf('local', jars=None)\nexcept p.ConfigError:\n    pass  # no lakehouse running\n"
             "print(sorted(m for m in sys.modules if m.startswith('pyspark_catalog_ext.lakehouse')))\n"
             "p.start_lakehouse\n"
             "print('pyspark_catalog_ext.lakehouse.server' in sys.modules)")
    env = {**os.environ, "XDG_CACHE_HOME": "/nonexistent-pce-cache"}  # no `local up` state to find
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True, env=env).stdout
    assert out.split("\n")[:2] == ["[]", "True"], out


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


def test_only_shim_api_calls_into_the_jvm() -> None:
    """One narrow Py4J boundary: only spark/shim_api.py touches `_jvm` or names the shim's classes."""
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
    """Every error class is in errors.py, except those that must also subclass a PyIceberg exception
    and the shim's build error: setup.py loads spark/jvm_deps/shim_maven.py alone, without the package (pip's
    isolated build has none of its dependencies), and shim_build turns it into a JarError."""
    package = Path(pyspark_catalog_ext.__file__).parent
    pyiceberg_bases = ("BadRequestError", "CommitFailedException", "CommitStateUnknownException")
    standalone = {"spark/jvm_deps/shim_maven.py": ["ShimBuildError(Exception)"]}
    strays = {module: [c for c in classes if not any(b in c for b in pyiceberg_bases) and c not in standalone.get(module, [])]
              for module, classes in _exception_classes_outside_errors(package).items()}
    assert not {m: c for m, c in strays.items() if c}, strays


# ---- imports: no circles, no arrow back up ---------------------------------------------------------

PACKAGE = Path(pyspark_catalog_ext.__file__).parent
#: The concerns from the bottom up. A module may import its own concern, any concern below it, and
#: the package's public face (`pyspark_catalog_ext` itself), never a concern above it.
LAYERS = (
    ("errors", "secret_keys", "logsafety", "knobs", "cache", "progress", "events", "event_schemas", "markdown",
     "ports", "processes"),  # shared by every concern
    ("commit",),         # the commit decision table, commit policy and idempotency keys
    ("catalog",),        # reaching a catalog: connection, REST client, locations, a running local lakehouse
    ("refresh",),        # the credential-refresh engine and its knobs and user sources
    ("storage",),        # object-store clients: remote signing, streaming uploads, store accounts
    ("spark",),          # Spark setup and the one Py4J boundary
    ("pyiceberg_ext", "clients"),  # PyIceberg jobs; the other engines' connections (DuckDB, Trino)
    ("governance",),     # maintenance, notifications, policies
    ("staging",),        # staged tables and their cleanup
    ("lakehouse",),      # the embedded catalog server: nothing that configures a session imports it
    ("doctor",),
    ("cli",),            # the command line: parses, calls the above, prints
)


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """{module: modules of the package it imports}: every import statement, at any depth (an import
    inside a function is an arrow all the same), except type-only ones under `if TYPE_CHECKING:`."""
    modules = {_module_name(p, package): p for p in package.rglob("*.py")}

    def owner(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        type_only = {id(n) for node in ast.walk(tree)
                     if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.Import):
                targets |= {owner(a.name) for a in node.names if a.name.startswith(package.name)}
            elif isinstance(node, ast.ImportFrom):
                base = here
                for _ in range(max(node.level - 1, 0)):
                    base = base.rpartition(".")[0]
                module = (base + ("." + node.module if node.module else "")) if node.level else (node.module or "")
                if module.startswith(package.name):
                    targets |= {owner(f"{module}.{a.name}") for a in node.names}
        graph[name] = targets - {name, ""}
    return graph


def _concern(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # None: the package's public face


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of modules (Tarjan). Arrows to the public face are left out: it
    imports every concern's face by design and is allowed as a target from anywhere."""
    edges = {a: {b for b in bs if _concern(b) is not None} for a, bs in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return circles


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    rank = {concern: i for i, layer in enumerate(LAYERS) for concern in layer}
    out = []
    for a, targets in sorted(graph.items()):
        for b in sorted(targets):
            ca, cb = _concern(a), _concern(b)
            if ca is not None and cb is not None and rank[ca] < rank[cb]:
                out.append(f"{a} -> {b}")
    return out


def test_every_concern_has_a_layer() -> None:
    concerns = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
                if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").is_file())}
    assert concerns == {c for layer in LAYERS for c in layer}


def test_no_import_circles() -> None:
    assert import_circles(import_graph()) == []


def test_no_arrow_runs_back_up() -> None:
    assert upward_arrows(import_graph()) == []


def test_the_import_checks_see_a_circle_and_an_arrow_up(tmp_path: Path) -> None:
    pkg = tmp_path / "pyspark_catalog_ext"
    for rel, text in {"__init__.py": "", "errors.py": "from pyspark_catalog_ext.catalog import rest\n",
                      "catalog/__init__.py": "", "catalog/rest.py": "def f():\n    from pyspark_catalog_ext.spark import x\n",
                      "spark/__init__.py": "", "spark/x.py": "from pyspark_catalog_ext.catalog.rest import f\n"
                                                             "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                                             "    from pyspark_catalog_ext.cli import y\n"}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    graph = import_graph(pkg)
    assert import_circles(graph) == [["pyspark_catalog_ext.catalog.rest", "pyspark_catalog_ext.spark.x"]]
    assert upward_arrows(graph) == ["pyspark_catalog_ext.catalog.rest -> pyspark_catalog_ext.spark.x",
                                    "pyspark_catalog_ext.errors -> pyspark_catalog_ext.catalog.rest"]


def _third_party_imports(path: Path) -> set[str]:
    """Top-level names of the packages a module imports, at any depth, type-only imports included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_pyiceberg_adapter_holds_only_modules_that_use_pyiceberg_or_pyarrow() -> None:
    """What needs neither (the signer client, the uploads) belongs to `storage/`, `refresh/` or `commit/`."""
    adapter = PACKAGE / "pyiceberg_ext"
    strays = [p.name for p in sorted(adapter.glob("*.py"))
              if p.name != "__init__.py" and not _third_party_imports(p) & {"pyiceberg", "pyarrow"}]
    assert strays == []
    assert _third_party_imports(PACKAGE / "storage" / "s3upload.py").isdisjoint({"pyiceberg", "pyarrow"})  # the check sees a stray


def test_no_main_code_file_is_over_500_lines() -> None:
    """In either runtime: one job per file (a longer file is split along its seams)."""
    root = PACKAGE.parent
    files = [*PACKAGE.rglob("*.py"), *(root / "jvm-shim" / "src" / "main").rglob("*.java")]
    long = {str(p.relative_to(root)): n for p in files if (n := len(p.read_text().splitlines())) > 500}
    assert len(files) > 200 and long == {}


def test_argparse_and_untyped_clients_stay_out_of_the_domain_modules() -> None:
    """Parsing and printing live in cli/; a catalog client is typed (CatalogReader, CatalogClient)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        if not rel.startswith("cli/") and re.search(r"^\s*(import argparse|from argparse import)", text, re.M):
            offenders.append(f"{rel}: argparse")
        offenders += [f"{rel}: {m}" for m in re.findall(r"\bclient: Any\b", text)]
    assert offenders == []


# ---- module docstrings: one job and its key rules; the why lives in docs/ -----------------------------

DOCS = PACKAGE.parent / "docs"
#: A docs page a docstring names (not one inside a URL), or a section of the page named last before it.
DOCS_POINTER = re.compile(r"(?<![\w/.-])docs/(?P<page>[\w.-]+\.md)|\bsection '(?P<section>[^']+)'")
MAX_DOCSTRING_LINES = 12


def _headings(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return {m.group(1).strip() for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def docstring_problems(source: str, docs: Path = DOCS) -> list[str]:
    """What is wrong with a module's docstring: more lines than MAX_DOCSTRING_LINES (its opening to its
    closing quotes), a `docs/<page>.md` it names that does not exist, or a `section '<heading>'` that is
    no heading of the page named last before it."""
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)):
        return []
    problems = []
    if (lines := (first.end_lineno or first.lineno) - first.lineno + 1) > MAX_DOCSTRING_LINES:
        problems.append(f"{lines} lines")
    page: Path | None = None
    for m in DOCS_POINTER.finditer(first.value.value):
        if m["page"]:
            page = docs / m["page"]
            if not page.is_file():
                problems.append(f"docs/{m['page']}: no such file")
        elif page is None:
            problems.append(f"section {m['section']!r} of no docs page")
        elif page.is_file() and m["section"] not in _headings(page):
            problems.append(f"docs/{page.name}: no section {m['section']!r}")
    return problems


def test_module_docstrings_are_short_and_point_at_docs_that_exist() -> None:
    """At most 12 lines each: the module's job, the rules a reader needs and its twin pointers; the threat
    model, the measurements and the background are in the docs/ section it names."""
    problems = {str(p.relative_to(PACKAGE)): found for p in sorted(PACKAGE.rglob("*.py")) if (found := docstring_problems(p.read_text()))}
    assert problems == {}


def test_the_docstring_check_sees_a_long_docstring_and_a_dead_pointer(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Kept\n\n```\n# not a heading\n```\n")
    assert docstring_problems("\"\"\"One job.\n\nWhy: docs/a.md, section 'Kept' (https://x.test/docs/b.md).\n\"\"\"\n", tmp_path) == []
    assert docstring_problems('"""One job.\n' + "more\n" * 11 + '"""\nx = 1\n', tmp_path) == ["13 lines"]
    assert docstring_problems("\"\"\"See docs/b.md; docs/a.md, section 'Gone', section 'not a heading'.\"\"\"\n", tmp_path) == [
        "docs/b.md: no such file", "docs/a.md: no section 'Gone'", "docs/a.md: no section 'not a heading'"]
    assert docstring_problems("\"\"\"Why: section 'Kept'.\"\"\"\n", tmp_path) == ["section 'Kept' of no docs page"]
