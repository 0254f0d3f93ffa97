"""The Java shim's layout: its packages form layers that only point down, its files import each
other in no circle, and no import is there for a javadoc link alone (the Java twin of
test_layout.py's import checks). Read from the sources: imports, fully qualified names, and the
simple names a file uses of its own package's classes (comments and strings left out)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import ROOT

JAVA = ROOT / "jvm-shim" / "src" / "main" / "java"
BASE = "io.catalogext.shim"

#: The packages from the bottom up (relative to io.catalogext.shim; "" is the package itself). A
#: class may use its own package, any package below it, and a package beside it in its layer that
#: does not use it back; never one above.
LAYERS = (
    ("util", "errors"),   # JSON, threads, URLs; the exceptions Python translates
    ("config",),          # knobs, keys, refresh policy, the shared specs
    ("events",),          # the event log and Spark metrics
    ("wire",),            # REST messages and paths, origins, Iceberg's mapper
    ("commit",),          # the commit guard and its decision table
    ("session",),         # one initialised catalog
    ("refresh",),         # credential entries, strategies, the driver channel
    ("http",),            # the catalog's HTTP client: funnel, steps, transport
    ("spark", "staging", "stores"),  # Spark glue: catalog reads, staged tables; GCS and ADLS clients
    ("",),                # the entry points configuration names (catalog-impl, plugins, PythonApi)
)


def _strip(text: str) -> str:
    """The code of a Java file without comments and string or char literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif text[i] in "\"'":
            quote = text[i]
            if text.startswith('"""', i):
                j = text.find('"""', i + 3)
                i = n if j < 0 else j + 3
            else:
                j = i + 1
                while j < n and text[j] != quote:
                    j += 2 if text[j] == "\\" else 1
                i = j + 1
            out.append('""')
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def java_graph(root: Path = JAVA) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """({class: classes of the tree it uses}, {class: imports used only in comments})."""
    classes = {".".join(p.relative_to(root).with_suffix("").parts): p for p in sorted(root.rglob("*.java"))}

    def owner(name: str) -> str:
        while name and name not in classes:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    doc_only: dict[str, list[str]] = {}
    for fq, path in classes.items():
        code = _strip(path.read_text())
        pkg = fq.rpartition(".")[0]
        imports = re.findall(r"\bimport\s+(static\s+)?([\w.]+)\s*;", code)
        body = re.sub(r"^\s*(package|import)\s[^;]+;", " ", code, flags=re.M)
        words = set(re.findall(r"\b[A-Za-z_]\w*\b", body))
        deps = {owner(name) for _, name in imports} | {owner(m) for m in re.findall(rf"\b{re.escape(BASE)}(?:\.\w+)+", body)}
        deps |= {other for other in classes if other.rpartition(".")[0] == pkg and other.rpartition(".")[2] in words}
        graph[fq] = {d for d in deps if d and d != fq}
        unused = [name for static, name in imports if not static and name.rpartition(".")[2] not in words]
        if unused:
            doc_only[fq] = unused
    return graph, doc_only


def _package(fq: str) -> str:
    pkg = fq.rpartition(".")[0]
    return pkg[len(BASE) + 1:] if pkg.startswith(BASE + ".") else ("" if pkg == BASE else pkg)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, bs in graph.items():
        out.setdefault(_package(a), set()).update(_package(b) for b in bs if _package(b) != _package(a))
    return out


def upward_arrows(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    rank = {pkg: i for i, layer in enumerate(layers) for pkg in layer}
    return sorted(f"{a} -> {b}" for a, bs in graph.items() for b in bs
                  if rank.get(_package(a), -1) < rank.get(_package(b), -1))


def test_every_package_has_a_layer() -> None:
    graph, _ = java_graph()
    assert {_package(c) for c in graph} == {p for layer in LAYERS for p in layer}


def test_no_arrow_runs_back_up() -> None:
    assert upward_arrows(java_graph()[0]) == []


def test_no_circle_of_files_or_packages() -> None:
    graph, _ = java_graph()
    assert circles(graph) == []
    assert circles(package_graph(graph)) == []


def test_no_import_is_for_a_javadoc_link_alone() -> None:
    assert java_graph()[1] == {}


def test_the_checks_see_a_circle_an_arrow_up_and_a_javadoc_import(tmp_path: Path) -> None:
    shim = tmp_path / "io" / "catalogext" / "shim"
    files = {
        "util/Json.java": "package io.catalogext.shim.util;\nimport io.catalogext.shim.http.Funnel;\n"
                          "public class Json { Funnel f; }\n",
        "http/Funnel.java": "package io.catalogext.shim.http;\nimport io.catalogext.shim.util.Json;\n"
                            "/** {@link Steps} */ public class Funnel { Json j; Steps s; }\n",
        "http/Steps.java": "package io.catalogext.shim.http;\nimport io.catalogext.shim.commit.Guard;\n"
                           "/** Uses {@link Guard} and names \"Funnel\" in a string. */ public class Steps { String s = \"Funnel\"; }\n",
        "commit/Guard.java": "package io.catalogext.shim.commit;\npublic class Guard {}\n",
    }
    for rel, text in files.items():
        (shim / rel).parent.mkdir(parents=True, exist_ok=True)
        (shim / rel).write_text(text)
    graph, doc_only = java_graph(tmp_path)
    assert circles(graph) == [["io.catalogext.shim.http.Funnel", "io.catalogext.shim.util.Json"]]
    assert circles(package_graph(graph)) == [["http", "util"]]
    assert upward_arrows(graph) == ["io.catalogext.shim.util.Json -> io.catalogext.shim.http.Funnel"]
    assert graph["io.catalogext.shim.http.Steps"] == {"io.catalogext.shim.commit.Guard"}  # the import counts, the string not
    assert doc_only == {"io.catalogext.shim.http.Steps": ["io.catalogext.shim.commit.Guard"]}
