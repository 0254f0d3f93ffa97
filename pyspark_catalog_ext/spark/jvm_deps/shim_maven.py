"""The Java shim's Maven build (jvm-shim/pom.xml) and the source hash a built jar carries.

Standard library only, and no import of the package: setup.py loads this file by its path inside
pip's isolated build environment (`pip install .`, `pip wheel .`, `python -m build`), where the
package's own dependencies are not installed. `shim_build` wraps it for run time.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SHIM_JAR_NAME", "HASH_ATTRIBUTE", "SHARED_SPEC_NAMES", "BUILD_TOOLS_HINT", "ShimBuildError", "java_sources", "source_hash",
           "find_maven", "find_javac", "missing_build_tools", "build_with_maven"]

SHIM_JAR_NAME = "catalog-ext-shim.jar"
# The manifest attribute holding the hash of the sources a jar was built from.
HASH_ATTRIBUTE = "Catalog-Ext-Source-Hash"
# The package's resources (pyspark_catalog_ext/resources/) the jar carries beside its classes, as
# jvm-shim/pom.xml's <resources> names them: the catalog-ext.* knob spec, the commit decision table,
# the credential rules, the trust rules, the refresh engine's timelines and the event schemas.
SHARED_SPEC_NAMES = ("catalog-ext-knobs.json", "commit-decisions.json", "credential-rules.json", "trust-rules.json",
                     "refresh-scenarios.json", "event-schemas.json")
BUILD_TOOLS_HINT = "install a JDK >= 11 and Maven >= 3.8 (e.g. apt-get install openjdk-17-jdk-headless maven)"


class ShimBuildError(Exception):
    """The shim could not be built; the message is one line saying why and what to do."""


def java_sources(src_dir: Path) -> list[Path]:
    return sorted(p for p in src_dir.rglob("*.java") if p.is_file())


def source_hash(src_dir: Path, specs: Sequence[Path], pom: Path | None) -> str:
    """sha256 over every .java (relative path + bytes), the specs packaged into the jar and the POM
    (the build's definition: its dependency pins and compiler flags)."""
    digest = hashlib.sha256()
    for path in java_sources(src_dir):
        digest.update(path.relative_to(src_dir).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    for spec in specs:
        digest.update(spec.read_bytes() + b"\0")
    if pom is not None and pom.is_file():
        digest.update(pom.read_bytes() + b"\0")
    return digest.hexdigest()


def find_maven() -> Path | None:
    """`mvn` on PATH, or None."""
    found = shutil.which("mvn")
    return Path(found) if found else None


def find_javac() -> Path | None:
    """`javac` where Maven looks for it: $JAVA_HOME/bin, else PATH; None for a JRE or no Java."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "javac"
        return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None
    found = shutil.which("javac")
    return Path(found) if found else None


def missing_build_tools() -> str | None:
    """None when a JDK and Maven are there; else one line naming what is missing and what to install."""
    missing = []
    if find_javac() is None:
        home = os.environ.get("JAVA_HOME")
        missing.append(f"a JDK (no javac in JAVA_HOME={home})" if home else "a JDK (no javac on PATH)")
    if find_maven() is None:
        missing.append("Maven (no mvn on PATH)")
    if not missing:
        return None
    return f"building the Java shim needs {' and '.join(missing)}: {BUILD_TOOLS_HINT}"


# `[ERROR] /abs/path/Foo.java:[12,5] message` (Maven's compiler plugin), shown javac's way.
_MAVEN_JAVA_LINE = re.compile(r"^\[(ERROR|WARNING)\] (?:/|[A-Za-z]:\\)\S*?([^/\\]+\.java):\[(\d+),\d+\] (.*)$")


def first_maven_problem(output: str) -> tuple[str, bool]:
    """(one line naming the first problem, whether it is in our Java source) from Maven's output."""
    errors: list[str] = []
    warnings: list[str] = []
    for line in output.splitlines():
        match = _MAVEN_JAVA_LINE.match(line.strip())
        if match:
            level, name, lineno, text = match.groups()
            (errors if level == "ERROR" else warnings).append(f"{name}:{lineno}: {level.lower()}: {text.strip()}")
    # Under -Werror the error only says warnings were found (and has no line): the first warning says which.
    if errors or warnings:
        return (errors or warnings)[0], True
    for line in output.splitlines():
        if line.startswith("[ERROR] ") and line[8:].strip():
            return line[8:].strip(), False
    return "", False


def build_with_maven(pom: Path, src_dir: Path, out_jar: Path, digest: str) -> Path:
    """`mvn package` of `pom` (default profile, tests not compiled) into a private build directory,
    so concurrent builds never share one; the jar lands at `out_jar` atomically, tagged with `digest`.
    Raises ShimBuildError (one line)."""
    missing = missing_build_tools()
    if missing:
        raise ShimBuildError(missing)
    mvn = find_maven()
    assert mvn is not None
    # Absolute: Maven resolves relative paths against jvm-shim/, not our working directory.
    out_jar, src_dir = out_jar.resolve(), src_dir.resolve()
    out_jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_jar.parent, prefix=".shim-build-") as tmp:
        cmd = [str(mvn), "-B", "-ntp", "-f", str(pom), "package", "-Dmaven.test.skip=true",
               f"-Dshim.build.dir={tmp}", f"-Dshim.source.dir={src_dir}", f"-Dshim.source.hash={digest}"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            raise ShimBuildError("shim build failed: Maven took over 30 min; check the network to Maven Central "
                                 "(the first build downloads ~300 MB into ~/.m2)") from None
        built = Path(tmp) / SHIM_JAR_NAME
        if proc.returncode != 0 or not built.is_file():
            first, in_source = first_maven_problem(proc.stdout + proc.stderr)
            first = first or (f"mvn exit {proc.returncode}" if proc.returncode else f"Maven wrote no {SHIM_JAR_NAME}")
            hint = ("fix the Java source under jvm-shim/" if in_source
                    else "check that Maven Central is reachable (or ~/.m2 holds the dependencies) and jvm-shim/pom.xml is intact")
            raise ShimBuildError(f"shim build failed: {first}; {hint}")
        os.replace(built, out_jar)
    return out_jar
