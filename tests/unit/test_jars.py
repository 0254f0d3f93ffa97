"""The offline jar resolver: pins, cache hits, corruption repair, missing wheels, concurrency."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pyspark_catalog_ext.cache import sha256_file
from pyspark_catalog_ext.errors import JarError
from pyspark_catalog_ext.spark.jars import MAVEN_PACKAGES, WHEEL_SOURCES, resolve_jars

ALL_PINS = {name: pin for source in WHEEL_SOURCES for name, pin in source.jars.items()}


def _make_wheelhouse(folder: Path, jar_paths: list[Path], tamper: str | None = None) -> Path:
    """Wheels with the real jars at the real member paths (repacked from the verified cache, so the
    tests don't download 220 MB twice). `tamper` names a jar to corrupt inside its wheel."""
    folder.mkdir(parents=True, exist_ok=True)
    by_name = {p.name: p for p in jar_paths}
    for source in WHEEL_SOURCES:
        wheel = folder / f"{source.wheel_prefix}py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as zf:
            for name in source.jars:
                data = by_name[name].read_bytes()
                if name == tamper:
                    data = data[:-10] + b"tampered!!"
                zf.writestr(source.member_dir + name, data)
            zf.writestr(source.member_dir + "unneeded-extra.jar", b"not extracted")
    return folder


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory, jar_paths) -> Path:
    return _make_wheelhouse(tmp_path_factory.mktemp("wheelhouse"), jar_paths)


def test_default_resolve_is_pinned_and_ordered(jar_paths):
    assert len(jar_paths) == 28
    assert jar_paths[0].name == "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
    for path in jar_paths:
        assert sha256_file(path) == ALL_PINS[path.name], path


def test_first_resolve_extracts_only_needed_jars_then_cache_hit(tmp_path, wheelhouse):
    messages: list[str] = []
    jars = resolve_jars(cache=tmp_path, wheelhouse=wheelhouse, progress=messages.append)
    assert sorted(p.name for p in jars) == sorted(ALL_PINS)
    assert any("extracting 27 jar(s)" in m for m in messages) and any("extracting 1 jar(s)" in m for m in messages)
    jar_dir = jars[0].parent
    assert sorted(os.listdir(jar_dir)) == sorted(ALL_PINS)  # nothing extra, no leftovers
    # Cache hit: no wheel needed (an empty wheelhouse would fail), nothing printed.
    empty = tmp_path / "empty"
    empty.mkdir()
    messages.clear()
    again = resolve_jars(cache=tmp_path, wheelhouse=empty, progress=messages.append)
    assert again == jars and messages == []


def test_corrupted_cache_is_detected_and_repaired(tmp_path, wheelhouse):
    jars = resolve_jars(cache=tmp_path, wheelhouse=wheelhouse, progress=lambda m: None)
    victim = next(p for p in jars if p.name == "sts-2.29.26.jar")
    with open(victim, "r+b") as fh:  # flip some bytes, keep the size
        fh.seek(100)
        fh.write(b"\0corrupt\0")
    assert sha256_file(victim) != ALL_PINS[victim.name]
    messages: list[str] = []
    resolve_jars(cache=tmp_path, wheelhouse=wheelhouse, progress=messages.append)
    assert sha256_file(victim) == ALL_PINS[victim.name]
    assert any("failed their checksum" in m for m in messages)


def test_bad_download_gives_clear_error(tmp_path, jar_paths):
    bad_house = _make_wheelhouse(tmp_path / "bad", jar_paths, tamper="kms-2.29.26.jar")
    with pytest.raises(JarError) as err:
        resolve_jars(cache=tmp_path / "cache", wheelhouse=bad_house, progress=lambda m: None)
    msg = str(err.value)
    assert "kms-2.29.26.jar" in msg and "sha256" in msg and "\n" not in msg
    assert not list((tmp_path / "cache").rglob("kms-2.29.26.jar"))  # the bad jar never lands in the cache


def test_missing_wheel_gives_clear_error(tmp_path):
    empty = tmp_path / "wheels"
    empty.mkdir()
    with pytest.raises(JarError) as err:
        resolve_jars(cache=tmp_path / "cache", wheelhouse=empty, progress=lambda m: None)
    msg = str(err.value)
    assert "snowpark-connect-deps-iceberg==1.0.2" in msg and "PYSPARK_CATALOG_EXT_WHEELHOUSE" in msg and "\n" not in msg


def test_pip_download_failure_gives_clear_error(tmp_path):
    """The default path really runs `pip download` (honouring pip config): point it at a dead index."""
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2",
           "PIP_NO_CACHE_DIR": "1", "PIP_FIND_LINKS": "", "PYSPARK_CATALOG_EXT_CACHE": str(tmp_path)}
    env.pop("PYSPARK_CATALOG_EXT_WHEELHOUSE", None)
    code = ("from pyspark_catalog_ext.spark.jars import resolve_jars\nfrom pyspark_catalog_ext.errors import JarError\n"
            "try:\n    resolve_jars()\nexcept JarError as e:\n    print('JARERROR', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "downloading snowpark-connect-deps-iceberg==1.0.2 (~85 MB)" in proc.stderr
    assert "JARERROR could not download snowpark-connect-deps-iceberg==1.0.2 with pip" in proc.stdout


def test_concurrent_resolvers_are_safe(tmp_path, wheelhouse):
    code = "import sys; from pyspark_catalog_ext.spark.jars import resolve_jars; print(len(resolve_jars(cache=sys.argv[1], wheelhouse=sys.argv[2])))"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(wheelhouse)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert all(out.strip() == "28" for out, _ in outs)
    extracting = sum(err.count("extracting") for _, err in outs)
    assert extracting == 2, outs  # one resolver did the work (two wheels), the others waited and hit the cache
    for path in (tmp_path / "jars").rglob("*.jar"):
        assert sha256_file(path) == ALL_PINS[path.name]
    assert not list(tmp_path.rglob("*.part"))


def test_maven_mode_names_coordinates_and_keeps_shim(lakehouse):
    from pyspark_catalog_ext.spark.conf import spark_conf

    conf = spark_conf("local", lakehouse=lakehouse, jars="maven")
    assert conf["spark.jars.packages"] == MAVEN_PACKAGES
    assert MAVEN_PACKAGES == "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2,org.apache.iceberg:iceberg-aws-bundle:1.10.2"
    jars = conf["spark.jars"].split(",")
    assert len(jars) == 1 and jars[0].endswith(".jar") and "shim" in jars[0]
