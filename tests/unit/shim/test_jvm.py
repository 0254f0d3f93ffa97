"""Java detection and the shim build (compiled with the real javac against the real jars)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pyspark_catalog_ext.errors import JarError, JavaError
from pyspark_catalog_ext.spark.jvm_deps import shim_build as jvm
from tests.helpers import ROOT, fake_java_home


def test_real_java_is_found_and_new_enough():
    info = jvm.check_java()
    assert info.major >= 11 and info.java.is_file() and info.javac.is_file()


def test_java_missing_from_path(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaError) as err:
        jvm.check_java()
    msg = str(err.value)
    assert "java not found" in msg and "JAVA_HOME" in msg and "apt-get install" in msg and "\n" not in msg


def test_java_home_without_java(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaError, match="has no bin/java"):
        jvm.check_java()


@pytest.mark.parametrize("banner, version", [('java version "1.8.0_392"', "1.8.0_392"), ('openjdk version "10.0.2" 2018-07-17', "10.0.2")])
def test_java_too_old(monkeypatch, tmp_path, banner, version):
    monkeypatch.setenv("JAVA_HOME", str(fake_java_home(tmp_path, banner)))
    with pytest.raises(JavaError) as err:
        jvm.check_java()
    assert f"Java {version}" in str(err.value) and "too old" in str(err.value) and "need >= 11" in str(err.value)


@pytest.fixture()
def shim_copy(tmp_path) -> Path:
    """A private copy of the shim sources, so edits don't touch the repo."""
    src = tmp_path / "java"
    shutil.copytree(jvm.shim_source_dir(), src)
    return src


def _classes(jar: Path) -> set[str]:
    with zipfile.ZipFile(jar) as zf:
        return {n for n in zf.namelist() if n.endswith(".class")}


def test_shim_builds_caches_and_rebuilds_on_change(shim_copy, tmp_path):
    cache = tmp_path / "cache"
    first = jvm.shim_jar(src_dir=shim_copy, cache=cache)
    expected = {str(p.relative_to(shim_copy).with_suffix(".class")) for p in shim_copy.rglob("*.java")}
    assert expected <= _classes(first)
    assert "io/catalogext/shim/ExtRESTCatalog.class" in _classes(first)
    stamp = first.stat().st_mtime_ns
    assert jvm.shim_jar(src_dir=shim_copy, cache=cache) == first  # cache hit
    assert first.stat().st_mtime_ns == stamp
    # A source change means a new hash, hence a rebuild.
    extra = shim_copy / "io" / "catalogext" / "shim" / "ZzProbe.java"
    extra.write_text("package io.catalogext.shim;\nfinal class ZzProbe { static int answer() { return 42; } }\n")
    second = jvm.shim_jar(src_dir=shim_copy, cache=cache)
    assert second != first and "io/catalogext/shim/ZzProbe.class" in _classes(second)
    assert jvm._embedded_hash(second) == jvm.source_hash(shim_copy)


def test_shim_compile_error_is_one_line(shim_copy, tmp_path):
    (shim_copy / "io" / "catalogext" / "shim" / "Broken.java").write_text("package io.catalogext.shim;\nclass Broken { int x = ; }\n")
    with pytest.raises(JarError) as err:
        jvm.shim_jar(src_dir=shim_copy, cache=tmp_path / "cache")
    msg = str(err.value)
    assert msg.startswith("shim build failed: ") and "Broken.java" in msg and "error:" in msg and "\n" not in msg
    assert not list((tmp_path / "cache").rglob("*.jar"))


def test_a_lint_warning_fails_the_shim_build(shim_copy, tmp_path):
    # javac runs with -Xlint:all -Werror: a warning in our code (here a Serializable class without
    # serialVersionUID) is a build error that names the warning, not a silent jar.
    (shim_copy / "io" / "catalogext" / "shim" / "Lax.java").write_text(
        "package io.catalogext.shim;\nfinal class Lax implements java.io.Serializable { int x; }\n")
    with pytest.raises(JarError) as err:
        jvm.shim_jar(src_dir=shim_copy, cache=tmp_path / "cache")
    msg = str(err.value)
    assert msg.startswith("shim build failed: ") and "Lax.java" in msg and "serialVersionUID" in msg and "\n" not in msg


def test_no_sources_is_a_clear_error(tmp_path):
    with pytest.raises(JarError, match="no shim sources"):
        jvm.shim_jar(src_dir=tmp_path / "nothing", cache=tmp_path)


def test_wheel_build_includes_the_shim(tmp_path):
    """`pip wheel` runs the setup.py build hook: the wheel must carry the compiled shim + resources."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheel = next(tmp_path.glob("pyspark_catalog_ext-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert {"pyspark_catalog_ext/resources/s3.json", "pyspark_catalog_ext/resources/iam.json"} <= names
        assert "pyspark_catalog_ext/_jars/catalog-ext-shim.jar" in names
        packaged = tmp_path / "shim.jar"
        packaged.write_bytes(zf.read("pyspark_catalog_ext/_jars/catalog-ext-shim.jar"))
    assert "io/catalogext/shim/ExtRESTCatalog.class" in _classes(packaged)
    assert jvm._embedded_hash(packaged) == jvm.source_hash(jvm.shim_source_dir())


def test_the_benchmarks_compile_against_the_shim(tmp_path):
    """The JVM benchmarks (jvm-shim/src/bench, JMH) compile in Maven's bench profile with the shim's
    flags: a shim API change that breaks them fails here, not months later when someone runs one."""
    mvn = jvm.find_maven()
    assert mvn is not None, "Maven (mvn) is not on PATH; install Maven >= 3.8 to build the benchmarks"
    proc = subprocess.run([str(mvn), "-B", "-ntp", "-f", str(jvm.shim_pom()), "-Pbench", "test-compile",
                           f"-Dshim.build.dir={tmp_path}"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (tmp_path / "test-classes" / "io" / "catalogext" / "shim" / "ResolveCredentialsJmh.class").is_file()
    # JMH's annotation processor ran: the generated benchmark list is there.
    assert (tmp_path / "test-classes" / "META-INF" / "BenchmarkList").is_file()


def test_a_dev_build_is_mavens_and_packs_the_specs(shim_copy, tmp_path):
    """With Maven on PATH the dev build is `mvn package` of jvm-shim/pom.xml: the jar carries the
    shared specs beside the classes and the source hash in its manifest, and no javac run of ours."""
    assert jvm.find_maven() is not None
    jar = jvm.shim_jar(src_dir=shim_copy, cache=tmp_path / "cache")
    with zipfile.ZipFile(jar) as zf:
        names = set(zf.namelist())
        manifest = zf.read("META-INF/MANIFEST.MF").decode()
    assert {f"io/catalogext/shim/{spec.name}" for spec in jvm.SHARED_SPECS} <= names
    assert "Created-By: Maven" in manifest  # Maven's jar plugin wrote it, not the javac fallback's `jar`
    assert jvm._embedded_hash(jar) == jvm.source_hash(shim_copy)


def test_without_maven_or_a_jdk_the_source_build_says_what_to_install(shim_copy, tmp_path, monkeypatch):
    """Building the shim from source needs Maven and a JDK: without either, one line names what is
    missing and what to install, before any build starts (no javac of ours compiles it instead)."""
    java_home = jvm.check_java().java.resolve().parent.parent
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no mvn (and no java: JAVA_HOME finds it)
    assert jvm.find_maven() is None
    with pytest.raises(JarError) as err:
        jvm.shim_jar(src_dir=shim_copy, cache=tmp_path / "cache")
    msg = str(err.value)
    assert msg == "building the Java shim needs Maven (no mvn on PATH): install a JDK >= 11 and Maven >= 3.8 (e.g. apt-get install openjdk-17-jdk-headless maven)"
    # A JRE (a java without javac beside it), Maven missing too: both named.
    jre = tmp_path / "jre"
    (jre / "bin").mkdir(parents=True)
    (jre / "bin" / "java").symlink_to(java_home / "bin" / "java")
    monkeypatch.setenv("JAVA_HOME", str(jre))
    with pytest.raises(JarError, match=r"needs a JDK \(no javac in JAVA_HOME=\S+\) and Maven \(no mvn on PATH\): install a JDK >= 11 and Maven"):
        jvm.shim_jar(src_dir=shim_copy, cache=tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob("*.jar"))
