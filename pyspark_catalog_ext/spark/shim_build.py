"""Java detection and the Java shim jar.

The shim is built from `jvm-shim/src/main/java` by Maven (`jvm-shim/pom.xml`, default profile: the
offline default stack), into a private build directory, with `~/.m2` as Maven's cache. Where `mvn` is
not installed, a source checkout falls back to plain `javac` + `jar` against the offline jars and
pyspark's own jars (same flags, same classes). Built jars are cached by a hash of their sources, so an
edit to any `.java` file (or the POM) triggers a rebuild and nothing built is committed. A wheel
carries a prebuilt copy in `pyspark_catalog_ext/_jars/`, tagged with the same hash, so pip users need
neither Maven nor a JDK compiler.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir, file_lock
from pyspark_catalog_ext.errors import JarError, JavaError
from pyspark_catalog_ext.spark.jars import resolve_jars

__all__ = ["SHIM_GROUP", "SHIM_ARTIFACT", "shim_version", "JavaInfo", "find_java", "check_java", "find_maven", "shim_jar", "build_shim",
           "shim_source_dir", "shim_pom", "source_hash", "MIN_JAVA", "min_java_for_stack"]

# Iceberg dropped Java 8 in 1.7 and the shim is compiled for 11: every stack needs 11.
MIN_JAVA = 11
# Java 17 class files: Spark 4.x's, and Iceberg's from 1.11 on (it dropped Java 11 there; its 3.5
# runtimes 1.11/1.12 are class version 61). Spark 3.5 itself runs on 8/11/17.
JAVA17 = 17
SHIM_JAR_NAME = "catalog-ext-shim.jar"
# Every lint warning is an error, except two that come from the jars, not from our code: `path`
# (pyspark's jar manifests name Class-Path jars it does not ship) and `classfile` (Iceberg's runtime
# keeps annotations of the shaded Immutables library, which is not on the classpath). The same flags
# as jvm-shim/pom.xml's compiler configuration (used by the javac fallback and benchmarks/*.py).
JAVAC_FLAGS = ("--release", "11", "-encoding", "UTF-8", "-Xlint:all,-path,-classfile", "-Werror")
_MAVEN_HINT = "install Maven >= 3.8 (e.g. apt-get install maven)"
# The shim's Maven coordinates (`<group>:<artifact>:<package version>`), as in jvm-shim/pom.xml.
SHIM_GROUP = "io.catalogext"
SHIM_ARTIFACT = "catalog-ext-shim"
#: The catalog-ext.* knob spec both runtimes read (see pyspark_catalog_ext.knobs).
KNOB_SPEC = Path(__file__).resolve().parent.parent / "resources" / "catalog-ext-knobs.json"
#: The commit decision table both runtimes are tested against (see pyspark_catalog_ext.pyiceberg_ext.decision).
DECISION_TABLE = KNOB_SPEC.parent / "commit-decisions.json"
#: The rules about storage credentials both runtimes apply (see pyspark_catalog_ext.credentials.rules).
CREDENTIAL_RULES = KNOB_SPEC.parent / "credential-rules.json"
#: The shared specs packaged into the shim jar, next to the classes that read them (one copy in git).
SHARED_SPECS = (KNOB_SPEC, DECISION_TABLE, CREDENTIAL_RULES)
PACKAGED_SHIM = Path(__file__).resolve().parent.parent / "_jars" / SHIM_JAR_NAME
HASH_ATTRIBUTE = "Catalog-Ext-Source-Hash"
_INSTALL_HINT = "install a JDK >= 11 (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME to one"


def _install_hint(minimum: int) -> str:
    return f"install a JDK >= {minimum} (e.g. apt-get install openjdk-{max(minimum, 17)}-jdk-headless) or set JAVA_HOME to one"


@dataclass(frozen=True)
class JavaInfo:
    """The Java that Spark will use (same lookup as spark-class: $JAVA_HOME first, then PATH)."""

    java: Path
    major: int
    version: str

    @property
    def javac(self) -> Path:
        """`javac` next to `java` (a JRE has none)."""
        candidate = self.java.parent / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        found = shutil.which("javac")
        if found:
            return Path(found)
        raise JavaError(f"javac not found next to {self.java} (a JRE, not a JDK?); {_INSTALL_HINT} to build the shim")


def shim_version() -> str:
    """The shim's Maven version: the Python package's version (both ship together)."""
    from pyspark_catalog_ext import __version__

    return __version__


def find_java() -> Path:
    """Locate `java` like Spark's launcher does, or raise JavaError."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        raise JavaError(f"JAVA_HOME={java_home} has no bin/java; point JAVA_HOME at a JDK >= {MIN_JAVA} or unset it")
    found = shutil.which("java")
    if not found:
        raise JavaError(f"java not found on PATH and JAVA_HOME is not set; {_INSTALL_HINT}")
    return Path(found)


def _parse_version(text: str) -> tuple[int, str]:
    """`java -version` prints e.g. `openjdk version "17.0.9"` or `java version "1.8.0_392"`."""
    match = re.search(r'version "([^"]+)"', text)
    if not match:
        raise JavaError("could not read the Java version from `java -version`; " + _INSTALL_HINT)
    version = match.group(1)
    parts = re.findall(r"\d+", version)
    major = int(parts[0]) if parts else 0
    if major == 1 and len(parts) > 1:  # legacy "1.8.0" numbering
        major = int(parts[1])
    return major, version


def _major_minor(version: str, what: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", str(version).strip())
    if not match:
        raise JavaError(f"{what} version {version!r} is not a version; pass one such as '4.1' or '1.12.0'")
    return int(match.group(1)), int(match.group(2))


def min_java_for_stack(spark: str, iceberg: str | None = None) -> int:
    """The oldest Java that Spark `spark` ("4.1", "3.5.9") with Iceberg `iceberg` ("1.12.0"; None:
    Spark's own need and the package's floor) and the shim run on: 17 for Spark 4 or Iceberg >= 1.11."""
    needed = JAVA17 if _major_minor(spark, "Spark")[0] >= 4 else MIN_JAVA
    if iceberg is not None and _major_minor(iceberg, "Iceberg") >= (1, 11):
        needed = JAVA17
    return needed


def check_java(minimum: int = MIN_JAVA, *, spark: str | None = None, iceberg: str | None = None) -> JavaInfo:
    """Find Java and check its version; raise JavaError (one line) if missing or older than `minimum`,
    or, when `spark` ("4.1") is given, than that Spark line with Iceberg `iceberg` needs (17 for
    Spark 4 or Iceberg >= 1.11)."""
    java = find_java()
    try:
        proc = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaError(f"{java} -version failed ({type(exc).__name__}); {_INSTALL_HINT}") from None
    major, version = _parse_version(proc.stderr + proc.stdout)
    if spark is not None:
        needed = max(minimum, min_java_for_stack(spark, iceberg))
        what = "Spark " + ".".join(map(str, _major_minor(spark, "Spark"))) + (f" + Iceberg {iceberg}" if iceberg else "")
        if major < needed:
            raise JavaError(f"Java {version} at {java} is too old for {what} (needs >= {needed}); {_install_hint(needed)}")
    if major < minimum:
        raise JavaError(f"Java {version} at {java} is too old (need >= {minimum}); {_INSTALL_HINT}")
    return JavaInfo(java=java, major=major, version=version)


def shim_source_dir() -> Path:
    """`jvm-shim/src/main/java` of a source checkout (absent in an installed wheel)."""
    return Path(__file__).resolve().parents[2] / "jvm-shim" / "src" / "main" / "java"


def shim_pom() -> Path:
    """`jvm-shim/pom.xml` of a source checkout: the shim's build (absent in an installed wheel)."""
    return Path(__file__).resolve().parents[2] / "jvm-shim" / "pom.xml"


def find_maven() -> Path | None:
    """`mvn` on PATH, or None (the shim then builds with javac)."""
    found = shutil.which("mvn")
    return Path(found) if found else None


def _java_sources(src_dir: Path) -> list[Path]:
    return sorted(p for p in src_dir.rglob("*.java") if p.is_file())


def source_hash(src_dir: Path, jar_names: Sequence[str] | None = None) -> str:
    """sha256 over every .java (relative path + bytes) and the names of the jars compiled against."""
    if jar_names is None:
        from pyspark_catalog_ext.spark.jars import WHEEL_SOURCES

        jar_names = [name for source in WHEEL_SOURCES for name in source.jars]
    digest = hashlib.sha256((" ".join(JAVAC_FLAGS) + "\n").encode())
    for path in _java_sources(src_dir):
        digest.update(path.relative_to(src_dir).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    for spec in SHARED_SPECS:
        digest.update(spec.read_bytes() + b"\0")  # packaged into the jar: a spec change is a new shim
    pom = shim_pom()
    if pom.is_file():  # the build's definition: a changed dependency or flag is a new shim
        digest.update(pom.read_bytes() + b"\0")
    for name in jar_names:
        digest.update(name.encode() + b"\n")
    return digest.hexdigest()


def _pyspark_jars_dir() -> Path:
    try:
        import pyspark
    except ImportError:
        raise JarError("pyspark is not installed; pip install 'pyspark>=3.5,<3.6' to build the shim") from None
    path = Path(pyspark.__file__).resolve().parent / "jars"
    if not path.is_dir():
        raise JarError(f"pyspark has no jars dir at {path}; reinstall pyspark from PyPI")
    return path


def _embedded_hash(jar: Path) -> str | None:
    try:
        with zipfile.ZipFile(jar) as zf:
            manifest = zf.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    manifest = re.sub(r"\r?\n ", "", manifest)  # `jar` wraps manifest lines at 72 bytes
    match = re.search(rf"^{HASH_ATTRIBUTE}: *(\S+)", manifest, re.M)
    return match.group(1) if match else None



def build_shim(src_dir: Path, out_jar: Path, jars: Sequence[Path] | None, digest: str) -> Path:
    """Compile `src_dir` into `out_jar` (atomically), tagging the manifest with `digest`.

    With Maven (`mvn` on PATH and jvm-shim/pom.xml present): `mvn package` of the default profile.
    Otherwise javac against `jars` (default: the offline jars, resolved only then).
    """
    if not _java_sources(src_dir):
        raise JarError(f"no .java files under {src_dir}; restore jvm-shim/ from git")
    mvn = find_maven()
    if mvn is not None and shim_pom().is_file():
        return _build_with_maven(mvn, src_dir, out_jar, digest)
    return _build_with_javac(src_dir, out_jar, jars if jars is not None else resolve_jars(), digest)


# `[ERROR] /abs/path/Foo.java:[12,5] message` (Maven's compiler plugin), shown javac's way.
_MAVEN_JAVA_LINE = re.compile(r"^\[(ERROR|WARNING)\] (?:/|[A-Za-z]:\\)\S*?([^/\\]+\.java):\[(\d+),\d+\] (.*)$")


def _first_maven_problem(output: str) -> tuple[str, bool]:
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


def _build_with_maven(mvn: Path, src_dir: Path, out_jar: Path, digest: str) -> Path:
    """`mvn package` of jvm-shim/pom.xml (default profile, tests not compiled: they run in CI and
    tests/unit/test_java_units.py) into a private build directory, so concurrent builds never share one."""
    check_java()  # Maven finds Java the same way; this gives the one-line error when it can't
    # Absolute: Maven resolves relative paths against jvm-shim/, not our working directory.
    out_jar, src_dir = out_jar.resolve(), src_dir.resolve()
    out_jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_jar.parent, prefix=".shim-build-") as tmp:
        cmd = [str(mvn), "-B", "-ntp", "-f", str(shim_pom()), "package", "-Dmaven.test.skip=true",
               f"-Dshim.build.dir={tmp}", f"-Dshim.source.dir={src_dir}", f"-Dshim.source.hash={digest}"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            raise JarError("shim build failed: Maven took over 30 min; check the network to Maven Central "
                           "(first build downloads ~100 MB into ~/.m2)") from None
        built = Path(tmp) / SHIM_JAR_NAME
        if proc.returncode != 0 or not built.is_file():
            first, in_source = _first_maven_problem(proc.stdout + proc.stderr)
            first = first or (f"mvn exit {proc.returncode}" if proc.returncode else f"Maven wrote no {SHIM_JAR_NAME}")
            hint = ("fix the Java source under jvm-shim/" if in_source
                    else "check that Maven Central is reachable (or ~/.m2 holds the dependencies) and jvm-shim/pom.xml is intact")
            raise JarError(f"shim build failed: {first}; {hint}")
        os.replace(built, out_jar)
    return out_jar


def _build_with_javac(src_dir: Path, out_jar: Path, jars: Sequence[Path], digest: str) -> Path:
    """The fallback where Maven is not installed: javac + jar against `jars` and pyspark's jars."""
    sources = _java_sources(src_dir)
    if not sources:
        raise JarError(f"no .java files under {src_dir}; restore jvm-shim/ from git")
    java = check_java()
    classpath = os.pathsep.join([*map(str, jars), str(_pyspark_jars_dir() / "*")])
    out_jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_jar.parent, prefix=".shim-build-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        argfile = Path(tmp) / "sources.txt"  # an @argfile keeps long source lists off the command line
        argfile.write_text("\n".join(f'"{p}"' for p in sources))
        proc = subprocess.run(
            [str(java.javac), *JAVAC_FLAGS, "-cp", classpath, "-d", str(classes), f"@{argfile}"],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            lines = (proc.stderr + proc.stdout).splitlines()
            # Under -Werror the error line only says warnings were found: the first warning says which.
            errors = [line.strip() for line in lines if "error:" in line and "-Werror" not in line]
            warnings = [line.strip() for line in lines if "warning:" in line]
            first = (errors or warnings or [line.strip() for line in lines[:1]] or [f"exit {proc.returncode}"])[0]
            first = first.replace(str(src_dir) + os.sep, "")
            raise JarError(f"shim build failed: {first}; fix the Java source under jvm-shim/")
        resources = src_dir.parent / "resources"  # src/main/resources, if the shim grows one
        if resources.is_dir():
            shutil.copytree(resources, classes, dirs_exist_ok=True)
        # The shared specs have one copy in git (the Python package's); the shim reads them beside its classes.
        for spec in SHARED_SPECS:
            shutil.copyfile(spec, classes / "io" / "catalogext" / "shim" / spec.name)
        manifest = Path(tmp) / "MANIFEST.MF"
        manifest.write_text(f"{HASH_ATTRIBUTE}: {digest}\n")
        part = Path(tmp) / SHIM_JAR_NAME
        jar_tool = java.javac.parent / "jar"
        proc = subprocess.run([str(jar_tool if jar_tool.exists() else "jar"), "cfm", str(part), str(manifest), "-C", str(classes), "."], capture_output=True, text=True)
        if proc.returncode != 0:
            first = next(iter((proc.stderr + proc.stdout).strip().splitlines()), f"exit {proc.returncode}")
            raise JarError(f"`jar` failed packaging the shim: {first}; check the JDK at {java.java.parent}")
        os.replace(part, out_jar)
    return out_jar


def shim_jar(src_dir: Path | str | None = None, cache: Path | str | None = None, jars: Sequence[Path] | None = None) -> Path:
    """Path of a shim jar built from the current sources.

    Uses the jar packaged in the wheel when there is no source tree, or when its embedded hash
    matches the sources; otherwise builds into `<cache>/shim/` (locked, atomic, cached by hash).
    """
    src = Path(src_dir) if src_dir is not None else shim_source_dir()
    have_sources = src.is_dir() and bool(_java_sources(src))
    if not have_sources:
        if src_dir is None and PACKAGED_SHIM.is_file():
            return PACKAGED_SHIM
        raise JarError(f"no shim sources at {src} and no packaged shim jar; reinstall pyspark-catalog-ext or restore jvm-shim/")
    digest = source_hash(src)
    if src_dir is None and PACKAGED_SHIM.is_file() and _embedded_hash(PACKAGED_SHIM) == digest:
        return PACKAGED_SHIM
    out = Path(cache or cache_dir()) / "shim" / f"catalog-ext-shim-{digest[:16]}.jar"
    if out.is_file() and _embedded_hash(out) == digest:
        return out
    with file_lock(out.parent / ".lock"):
        if out.is_file() and _embedded_hash(out) == digest:  # another process built it while we waited
            return out
        return build_shim(src, out, jars, digest)
