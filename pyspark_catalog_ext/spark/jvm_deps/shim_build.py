"""Java detection and the Java shim jar.

The shim is built from `jvm-shim/src/main/java` by Maven (`jvm-shim/pom.xml`, default profile: the
oldest stack the one jar runs on, Spark 3.5 + Iceberg 1.10.2 at `--release 11`; `shim_maven`) into a
private build directory, with `~/.m2` as Maven's cache. Built jars are cached by a hash of their
sources, the shared specs and the POM, so an edit to any of them triggers a rebuild and nothing built
is committed. A wheel carries a prebuilt copy in `pyspark_catalog_ext/_jars/`, tagged with the same
hash, so pip users need neither Maven nor a JDK compiler; building one from source needs both.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir, file_lock
from pyspark_catalog_ext.errors import JarError, JavaError
from pyspark_catalog_ext.spark.jvm_deps import shim_maven
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import MIN_JAVA, major_minor, max_java_for_stack, min_java_for_stack

__all__ = ["SHIM_GROUP", "SHIM_ARTIFACT", "shim_version", "JavaInfo", "find_java", "check_java", "local_java_major", "find_maven",
           "shim_jar", "build_shim", "shim_source_dir", "shim_pom", "source_hash", "MIN_JAVA", "min_java_for_stack"]

SHIM_JAR_NAME = shim_maven.SHIM_JAR_NAME
# The flags of jvm-shim/pom.xml's compiler configuration, for the benchmarks that compile a class of
# their own against the shim (benchmarks/*.py): every lint warning is an error, except two that come
# from the jars, not from our code: `path` (pyspark's jar manifests name Class-Path jars it does not
# ship) and `classfile` (Iceberg's runtime keeps annotations of the shaded Immutables library).
JAVAC_LINT_FLAGS = ("-encoding", "UTF-8", "-Xlint:all,-path,-classfile", "-Werror")
# The shim's Maven coordinates (`<group>:<artifact>:<package version>`), as in jvm-shim/pom.xml.
SHIM_GROUP = "io.catalogext"
SHIM_ARTIFACT = "catalog-ext-shim"
_RESOURCES = Path(__file__).resolve().parents[2] / "resources"
#: The catalog-ext.* knob spec both runtimes read (see pyspark_catalog_ext.knobs).
KNOB_SPEC = _RESOURCES / shim_maven.SHARED_SPEC_NAMES[0]
#: The commit decision table both runtimes are tested against (see pyspark_catalog_ext.commit.decision).
DECISION_TABLE = _RESOURCES / shim_maven.SHARED_SPEC_NAMES[1]
#: The rules about storage credentials both runtimes apply (see pyspark_catalog_ext.refresh.rules).
CREDENTIAL_RULES = _RESOURCES / shim_maven.SHARED_SPEC_NAMES[2]
#: Who may decide what: user URL keys, what a server answer may set (see pyspark_catalog_ext.catalog.trust_rules).
TRUST_RULES = _RESOURCES / shim_maven.SHARED_SPEC_NAMES[3]
#: The refresh engine's timelines both runtimes replay (see pyspark_catalog_ext.refresh.scenarios).
REFRESH_SCENARIOS = _RESOURCES / shim_maven.SHARED_SPEC_NAMES[4]
#: Every event type both runtimes emit, with its fields (see pyspark_catalog_ext.event_schemas).
EVENT_SCHEMAS = _RESOURCES / shim_maven.SHARED_SPEC_NAMES[5]
#: The shared specs packaged into the shim jar, next to the classes that read them (one copy in git).
SHARED_SPECS = (KNOB_SPEC, DECISION_TABLE, CREDENTIAL_RULES, TRUST_RULES, REFRESH_SCENARIOS, EVENT_SCHEMAS)
PACKAGED_SHIM = Path(__file__).resolve().parents[2] / "_jars" / SHIM_JAR_NAME
HASH_ATTRIBUTE = shim_maven.HASH_ATTRIBUTE
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
        return self.tool("javac", purpose="to build the shim")

    def tool(self, name: str, purpose: str = "") -> Path:
        """A JDK tool (`javac`, `jar`, `javap`) next to `java`, else on PATH; `purpose` ends the error."""
        candidate = self.java.parent / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        found = shutil.which(name)
        if found:
            return Path(found)
        raise JavaError(f"{name} not found next to {self.java} (a JRE, not a JDK?); {_INSTALL_HINT} {purpose}".rstrip())


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


@lru_cache(maxsize=16)
def _java_version(java: Path, mtime_ns: int) -> tuple[int, str]:
    """(major, full version) of `java` (cached per binary and its mtime: configure() asks more than once)."""
    try:
        proc = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaError(f"{java} -version failed ({type(exc).__name__}); {_INSTALL_HINT}") from None
    return _parse_version(proc.stderr + proc.stdout)


def _version_of(java: Path) -> tuple[int, str]:
    try:
        mtime = java.stat().st_mtime_ns
    except OSError:
        mtime = 0
    return _java_version(java, mtime)


def check_java(minimum: int = MIN_JAVA, *, spark: str | None = None, iceberg: str | None = None) -> JavaInfo:
    """Find Java and check its version; raise JavaError (one line) if missing or older than `minimum`,
    or, when `spark` ("4.1") is given, than that Spark line with Iceberg `iceberg` needs (17 for
    Spark 4 or Iceberg >= 1.11)."""
    java = find_java()
    major, version = _version_of(java)
    if spark is not None:
        needed = max(minimum, min_java_for_stack(spark, iceberg))
        what = "Spark " + ".".join(map(str, major_minor(spark, "Spark"))) + (f" + Iceberg {iceberg}" if iceberg else "")
        if major < needed:
            raise JavaError(f"Java {version} at {java} is too old for {what} (needs >= {needed}); {_install_hint(needed)}")
        newest = max_java_for_stack(spark)
        if newest is not None and major > newest:
            raise JavaError(f"Java {version} at {java} is too new for {what}: Spark's Hadoop calls Subject.getSubject, "
                            f"which Java {newest + 1} and later refuse; point JAVA_HOME at a JDK 17 or 21")
    if major < minimum:
        raise JavaError(f"Java {version} at {java} is too old (need >= {minimum}); {_INSTALL_HINT}")
    return JavaInfo(java=java, major=major, version=version)


def local_java_major() -> int | None:
    """The major version of the Java Spark would start here, or None when there is none to be read
    (the caller's own check then says what is wrong)."""
    try:
        return _version_of(find_java())[0]
    except JavaError:
        return None


def shim_source_dir() -> Path:
    """`jvm-shim/src/main/java` of a source checkout (absent in an installed wheel)."""
    return Path(__file__).resolve().parents[3] / "jvm-shim" / "src" / "main" / "java"


def shim_pom() -> Path:
    """`jvm-shim/pom.xml` of a source checkout: the shim's build (absent in an installed wheel)."""
    return Path(__file__).resolve().parents[3] / "jvm-shim" / "pom.xml"


def find_maven() -> Path | None:
    """`mvn` on PATH, or None (the shim then cannot be built from source)."""
    return shim_maven.find_maven()


def source_hash(src_dir: Path) -> str:
    """The hash a shim jar built from `src_dir` carries: its .java files, the shared specs, the POM."""
    return shim_maven.source_hash(src_dir, SHARED_SPECS, shim_pom())


def _embedded_hash(jar: Path) -> str | None:
    try:
        with zipfile.ZipFile(jar) as zf:
            manifest = zf.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    manifest = re.sub(r"\r?\n ", "", manifest)  # `jar` wraps manifest lines at 72 bytes
    match = re.search(rf"^{HASH_ATTRIBUTE}: *(\S+)", manifest, re.M)
    return match.group(1) if match else None


def build_shim(src_dir: Path, out_jar: Path, digest: str) -> Path:
    """Compile `src_dir` into `out_jar` (atomically) with Maven, tagging the manifest with `digest`.
    Without Maven or a JDK: JarError naming what to install."""
    if not shim_maven.java_sources(src_dir):
        raise JarError(f"no .java files under {src_dir}; restore jvm-shim/ from git")
    if not shim_pom().is_file():
        raise JarError(f"no {shim_pom()}; restore jvm-shim/ from git")
    check_java()  # Maven finds Java the same way; this gives the one-line error when it can't
    try:
        return shim_maven.build_with_maven(shim_pom(), src_dir, out_jar, digest)
    except shim_maven.ShimBuildError as exc:
        raise JarError(str(exc)) from None


def shim_jar(src_dir: Path | str | None = None, cache: Path | str | None = None) -> Path:
    """Path of a shim jar built from the current sources.

    Uses the jar packaged in the wheel when there is no source tree, or when its embedded hash
    matches the sources; otherwise builds into `<cache>/shim/` (locked, atomic, cached by hash).
    """
    src = Path(src_dir) if src_dir is not None else shim_source_dir()
    have_sources = src.is_dir() and bool(shim_maven.java_sources(src))
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
        return build_shim(src, out, digest)
