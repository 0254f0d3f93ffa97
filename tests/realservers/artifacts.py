"""Resolve the real catalog servers' artifacts from Maven Central, with ~/.m2 as the cache.

Each server is pinned to exact coordinates. The first call downloads (Maven 3.8+ on PATH); later
calls find everything in the cache and start no Maven at all, so they take milliseconds.

Versions: what Maven Central offers from here (2026-11). Nessie's newest published runner is 0.99.0
(0.100+ is not on Central), Iceberg's newest REST fixture is 1.11.0 (1.12.0 published no
`iceberg-open-api` artifacts).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir

HERE = Path(__file__).resolve().parent
REST_FIXTURE_POM = HERE / "rest-fixture-pom.xml"
NESSIE_VERSION = "0.99.0"
NESSIE_RUNNER = f"org.projectnessie.nessie:nessie-quarkus:{NESSIE_VERSION}:jar:runner"
MVN_TIMEOUT_S = 900  # a first download on a slow link; a hung Maven must not hang the test session


class ServerUnavailable(RuntimeError):
    """This machine lacks a tool a real server needs (Maven, a Java 21+): the fixture skips, naming it."""


def rest_fixture_version(pom_path: Path = REST_FIXTURE_POM) -> str:
    match = re.search(r"<iceberg.version>([^<]+)</iceberg.version>", pom_path.read_text())
    assert match, f"{pom_path} names no iceberg.version"
    return match.group(1)


def local_repository() -> Path:
    """Maven's local repository (passed to every mvn call explicitly, so we know where jars land)."""
    return Path(os.environ.get("REALSERVERS_M2_REPO") or Path.home() / ".m2" / "repository")


def _mvn(*args: str) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServerUnavailable("Maven (mvn) is not on PATH: install Maven 3.8+ to resolve the real catalog servers")
    # -C: a checksum mismatch fails instead of warning (a corrupt download must not land in the cache).
    cmd = [mvn, "-B", "-q", "-C", f"-Dmaven.repo.local={local_repository()}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=MVN_TIMEOUT_S)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"mvn {' '.join(args[:2])} failed (exit {proc.returncode}):\n{tail}")


def rest_fixture_classpath(pom_path: Path = REST_FIXTURE_POM) -> list[Path]:
    """Iceberg's REST fixture (RESTCatalogServer) and its runtime jars as `pom_path` lists them (the
    store tests add the Azure and GCS FileIOs), laid out by `mvn dependency:copy-dependencies` in our
    cache dir, keyed by the POM's hash."""
    pom = pom_path.read_bytes()
    lib = cache_dir() / "realservers" / f"iceberg-rest-fixture-{rest_fixture_version(pom_path)}-{hashlib.sha256(pom).hexdigest()[:12]}"
    done = lib / ".complete"
    if not done.is_file():
        tmp = lib.with_name(lib.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        _mvn("-f", str(pom_path), "dependency:copy-dependencies", f"-DoutputDirectory={tmp}")
        shutil.rmtree(lib, ignore_errors=True)
        tmp.rename(lib)  # a half copied directory is never taken for a complete one
        done.write_text("ok\n")
    jars = sorted(lib.glob("*.jar"))
    assert any(j.name.startswith("iceberg-open-api-") for j in jars), f"{lib} holds no iceberg-open-api jar"
    return jars


def nessie_runner() -> Path:
    """Nessie's Quarkus runner jar (one self-contained jar) in the local Maven repository."""
    group, artifact, version, _, classifier = NESSIE_RUNNER.split(":")
    jar = local_repository().joinpath(*group.split("."), artifact, version, f"{artifact}-{version}-{classifier}.jar")
    if not jar.is_file():
        _mvn("dependency:get", f"-Dartifact={NESSIE_RUNNER}", "-Dtransitive=false")
    if not jar.is_file():
        raise RuntimeError(f"mvn dependency:get {NESSIE_RUNNER} succeeded but left no {jar}")
    return jar


@dataclass(frozen=True)
class Java:
    home: Path
    major: int

    @property
    def executable(self) -> str:
        return str(self.home / "bin" / "java")


def _java_major(home: Path) -> int | None:
    release = home / "release"
    if not (home / "bin" / "java").is_file() or not release.is_file():
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)', release.read_text(), re.M)
    return int(match.group(1)) if match else None


def find_java(min_major: int) -> Java:
    """A JDK of at least `min_major`: $REALSERVERS_JAVA_HOME, $JAVA_HOME, then /usr/lib/jvm/* (newest first).
    Used for the server's process only (its own JAVA_HOME); Spark keeps its Java."""
    candidates = [os.environ.get("REALSERVERS_JAVA_HOME"), os.environ.get("JAVA_HOME")]
    jvm_dir = Path("/usr/lib/jvm")
    found = sorted(jvm_dir.iterdir()) if jvm_dir.is_dir() else []
    candidates += [str(p) for p in found]
    best: Java | None = None
    for c in candidates:
        if not c:
            continue
        home = Path(c).resolve()
        major = _java_major(home)
        if major is not None and major >= min_major and (best is None or major > best.major):
            best = Java(home, major)
    if best is None:
        raise ServerUnavailable(f"no Java {min_major}+ found (looked at $REALSERVERS_JAVA_HOME, $JAVA_HOME, /usr/lib/jvm/*): "
                                f"install one or point REALSERVERS_JAVA_HOME at it")
    return best
