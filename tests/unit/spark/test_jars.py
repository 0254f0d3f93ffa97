"""The jar resolver: pins, cache hits, corruption repair, missing wheels, concurrency; the Spark x
Iceberg matrix (which combinations and defaults, one-line refusals, the Java 11 fallback), its Maven
Central jars, and the PyPI route: asked for, or taken when the Maven repository does not answer."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pyspark_catalog_ext.cache import sha256_file
from pyspark_catalog_ext.errors import ConfigError, JarError
from pyspark_catalog_ext.spark.jvm_deps.jars import MAVEN_PACKAGES, resolve_jars, resolve_stack_jars
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import (
    DEFAULT_STACK,
    PYPI_STACK,
    JvmStack,
    pinned_maven_jars,
    select_stack,
    supported_stacks,
)
from pyspark_catalog_ext.spark.jvm_deps.maven_jars import MAVEN_REPO_ENV
from pyspark_catalog_ext.spark.jvm_deps.pypi_jars import WHEEL_SOURCES
from tests.conftest import ROOT

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


@pytest.fixture(scope="session")
def pypi_jars() -> list[Path]:
    """The PyPI route's jars in the user cache (the first run downloads ~220 MB of wheels from PyPI)."""
    return resolve_jars(route="pypi")


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory, pypi_jars) -> Path:
    return _make_wheelhouse(tmp_path_factory.mktemp("wheelhouse"), pypi_jars)


def test_default_resolve_is_apaches_jars_from_maven_central(jar_paths):
    """The default stack (Spark 4.1 + Iceberg 1.12.0): the Iceberg runtime and iceberg-aws-bundle,
    each the sha256 pinned from Central's file."""
    pins = pinned_maven_jars()
    assert [p.name for p in jar_paths] == ["iceberg-spark-runtime-4.1_2.13-1.12.0.jar", "iceberg-aws-bundle-1.12.0.jar"]
    assert [sha256_file(p) for p in jar_paths] == [pins[DEFAULT_STACK.runtime]["sha256"], pins[DEFAULT_STACK.aws_bundle]["sha256"]]


def test_pypi_resolve_is_pinned_and_ordered(pypi_jars):
    assert len(pypi_jars) == 28
    assert pypi_jars[0].name == "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
    for path in pypi_jars:
        assert sha256_file(path) == ALL_PINS[path.name], path


def test_first_resolve_extracts_only_needed_jars_then_cache_hit(tmp_path, wheelhouse):
    messages: list[str] = []
    jars = resolve_jars(cache=tmp_path, wheelhouse=wheelhouse, progress=messages.append, route="pypi")
    assert sorted(p.name for p in jars) == sorted(ALL_PINS)
    assert any("extracting 27 jar(s)" in m for m in messages) and any("extracting 1 jar(s)" in m for m in messages)
    jar_dir = jars[0].parent
    assert sorted(os.listdir(jar_dir)) == sorted(ALL_PINS)  # nothing extra, no leftovers
    # Cache hit: no wheel needed (an empty wheelhouse would fail), nothing printed.
    empty = tmp_path / "empty"
    empty.mkdir()
    messages.clear()
    again = resolve_jars(cache=tmp_path, wheelhouse=empty, progress=messages.append, route="pypi")
    assert again == jars and messages == []


def test_corrupted_cache_is_detected_and_repaired(tmp_path, wheelhouse):
    jars = resolve_jars(cache=tmp_path, wheelhouse=wheelhouse, progress=lambda m: None, route="pypi")
    victim = next(p for p in jars if p.name == "sts-2.29.26.jar")
    with open(victim, "r+b") as fh:  # flip some bytes, keep the size
        fh.seek(100)
        fh.write(b"\0corrupt\0")
    assert sha256_file(victim) != ALL_PINS[victim.name]
    messages: list[str] = []
    resolve_jars(cache=tmp_path, wheelhouse=wheelhouse, progress=messages.append, route="pypi")
    assert sha256_file(victim) == ALL_PINS[victim.name]
    assert any("failed their checksum" in m for m in messages)


def test_bad_download_gives_clear_error(tmp_path, pypi_jars):
    bad_house = _make_wheelhouse(tmp_path / "bad", pypi_jars, tamper="kms-2.29.26.jar")
    with pytest.raises(JarError) as err:
        resolve_jars(cache=tmp_path / "cache", wheelhouse=bad_house, progress=lambda m: None, route="pypi")
    msg = str(err.value)
    assert "kms-2.29.26.jar" in msg and "sha256" in msg and "\n" not in msg
    assert not list((tmp_path / "cache").rglob("kms-2.29.26.jar"))  # the bad jar never lands in the cache


def test_missing_wheel_gives_clear_error(tmp_path):
    empty = tmp_path / "wheels"
    empty.mkdir()
    with pytest.raises(JarError) as err:
        resolve_jars(cache=tmp_path / "cache", wheelhouse=empty, progress=lambda m: None, route="pypi")
    msg = str(err.value)
    assert "snowpark-connect-deps-iceberg==1.0.2" in msg and "PYSPARK_CATALOG_EXT_WHEELHOUSE" in msg and "\n" not in msg


def test_pip_download_failure_gives_clear_error(tmp_path):
    """The default path really runs `pip download` (honouring pip config): point it at a dead index."""
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2",
           "PIP_NO_CACHE_DIR": "1", "PIP_FIND_LINKS": "", "PYSPARK_CATALOG_EXT_CACHE": str(tmp_path)}
    env.pop("PYSPARK_CATALOG_EXT_WHEELHOUSE", None)
    code = ("from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars\nfrom pyspark_catalog_ext.errors import JarError\n"
            "try:\n    resolve_jars(route='pypi')\nexcept JarError as e:\n    print('JARERROR', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "downloading snowpark-connect-deps-iceberg==1.0.2 (~85 MB)" in proc.stderr
    assert "JARERROR could not download snowpark-connect-deps-iceberg==1.0.2 with pip" in proc.stdout


def test_concurrent_resolvers_are_safe(tmp_path, wheelhouse):
    code = "import sys; from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars; print(len(resolve_jars(cache=sys.argv[1], wheelhouse=sys.argv[2], route='pypi')))"
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
    assert conf["spark.jars.packages"] == MAVEN_PACKAGES  # the installed pyspark 4.1's default
    assert MAVEN_PACKAGES == "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0,org.apache.iceberg:iceberg-aws-bundle:1.12.0"
    # iceberg-aws-bundle has no 1.10.2 on Central: the 1.10 line's bundle is 1.10.1.
    assert PYPI_STACK.maven_packages == "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2,org.apache.iceberg:iceberg-aws-bundle:1.10.1"
    jars = conf["spark.jars"].split(",")
    assert len(jars) == 1 and jars[0].endswith(".jar") and "shim" in jars[0]


# ---------------------------------------------------------------------------------- the matrix
def test_matrix_defaults_and_version_spellings():
    """Each Spark line's default is the newest Iceberg release with a runtime for it."""
    assert select_stack("3.5.9") == JvmStack("3.5", "1.12.0", "2.12")
    assert select_stack("4.0.5") == JvmStack("4.0", "1.11.0", "2.13")
    assert select_stack("4.1.3") == DEFAULT_STACK == JvmStack("4.1", "1.12.0", "2.13")
    assert select_stack() == DEFAULT_STACK  # this venv's pyspark 4.1
    assert select_stack("3.5", "1.10") == PYPI_STACK == JvmStack("3.5", "1.10.2", "2.12")
    assert select_stack("4.1", "1.11") == select_stack("4.1.4", "1.11.0") == JvmStack("4.1", "1.11.0", "2.13")
    assert select_stack("3.5", "1.12").maven_packages == (
        "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.12.0,org.apache.iceberg:iceberg-aws-bundle:1.12.0")
    assert select_stack("4.0").runtime == "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.11.0"


@pytest.mark.parametrize("spark_line, iceberg, needles", [
    ("4.0", "1.12", ["Iceberg 1.12 has no runtime for Spark 4.0", "Iceberg versions for Spark 4.0: 1.11.0"]),
    ("4.2.0", None, ["Spark 4.2.0 has no Iceberg runtime", "Spark 4.1: Iceberg 1.11.0, 1.12.0", "pip install 'pyspark==4.1.*'"]),
    ("4.3", "1.12", ["Spark 4.3 has no Iceberg runtime", "Spark 3.5: Iceberg 1.10.2, 1.11.0, 1.12.0"]),
    ("3.5", "1.9", ["Iceberg 1.9 has no runtime for Spark 3.5", "1.10.2, 1.11.0, 1.12.0"]),
    ("3.5", "latest", ["Iceberg latest has no runtime"]),
    ("four", None, ["Spark version 'four' is not a version"]),
])
def test_unsupported_spark_or_combination_is_one_line(spark_line, iceberg, needles):
    with pytest.raises(ConfigError) as err:
        select_stack(spark_line, iceberg)
    msg = str(err.value)
    assert "\n" not in msg and all(n in msg for n in needles), msg


def test_matrix_is_the_poms_profiles():
    """The Python side offers exactly the combinations the Java shim is built and tested on (one
    Maven profile each in jvm-shim/pom.xml), at the same versions."""
    import re

    pom = (ROOT / "jvm-shim" / "pom.xml").read_text()
    profiles = {}
    for pid, body in re.findall(r"<profile>\s*<id>(spark[^<]+)</id>(.*?)</profile>", pom, re.S):
        iceberg = re.search(r"<iceberg.version>([^<]+)<", body)
        profiles[pid] = iceberg.group(1) if iceberg else "1.10.2"  # the default profile keeps the default properties
    ours = {f"spark{s.spark}-iceberg{s.iceberg.rsplit('.', 1)[0]}": s.iceberg for s in supported_stacks()}
    assert ours == profiles


def test_every_stack_pins_its_jars():
    pins = pinned_maven_jars()
    for stack in supported_stacks():
        for coordinate in (stack.runtime, stack.aws_bundle):
            pin = pins[coordinate]
            assert len(str(pin["sha256"])) == 64 and len(str(pin["sha1"])) == 40 and int(str(pin["size"])) > 1_000_000
    # The PyPI wheel's runtime jar is Central's, byte for byte.
    assert pins[PYPI_STACK.runtime]["sha256"] == ALL_PINS["iceberg-spark-runtime-3.5_2.12-1.10.2.jar"]


def test_every_pinned_coordinate_and_sha1_is_on_maven_central():
    """Each pinned jar exists on Central with the pinned sha1 (Central publishes .sha1, not .sha256;
    the sha256 pins were computed from these downloads and are checked at every resolve)."""
    import requests

    base = os.environ.get(MAVEN_REPO_ENV) or "https://repo1.maven.org/maven2"
    try:
        requests.head(base + "/", timeout=10)
    except requests.RequestException as exc:
        pytest.skip(f"Maven Central is not reachable here ({type(exc).__name__})")
    for coordinate, pin in pinned_maven_jars().items():
        group, artifact, version = coordinate.split(":")
        url = f"{base}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.jar"
        sha1 = requests.get(url + ".sha1", timeout=30)
        assert sha1.status_code == 200, (coordinate, sha1.status_code)
        assert sha1.text.split()[0] == pin["sha1"], coordinate
        head = requests.head(url, timeout=30, allow_redirects=True)
        assert head.status_code == 200 and int(head.headers["Content-Length"]) == pin["size"], coordinate


@pytest.fixture
def mirror(tmp_path):
    """A loopback Maven repository (a plain file server) holding the Spark 4.1 + Iceberg 1.12 jars,
    taken from the user cache (one real download the first time)."""
    import functools
    import http.server
    import threading

    stack = select_stack("4.1", "1.12")
    real = resolve_jars(stack=stack, progress=lambda m: None)
    root = tmp_path / "mirror"
    for path, coordinate in zip(real, (stack.runtime, stack.aws_bundle), strict=True):
        group, artifact, version = coordinate.split(":")
        target = root.joinpath(*group.split("."), artifact, version, path.name)
        target.parent.mkdir(parents=True)
        os.link(path, target) if path.stat().st_dev == tmp_path.stat().st_dev else target.write_bytes(path.read_bytes())
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield stack, root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_maven_stack_downloads_verifies_caches_and_repairs(mirror, tmp_path, monkeypatch):
    stack, root, url = mirror
    monkeypatch.setenv(MAVEN_REPO_ENV, url)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.m2 copy to take instead
    pins = pinned_maven_jars()
    messages: list[str] = []
    jars = resolve_jars(cache=tmp_path / "cache", stack=stack, progress=messages.append)
    assert [p.name for p in jars] == ["iceberg-spark-runtime-4.1_2.13-1.12.0.jar", "iceberg-aws-bundle-1.12.0.jar"]
    assert [sha256_file(p) for p in jars] == [pins[stack.runtime]["sha256"], pins[stack.aws_bundle]["sha256"]]
    assert sum("downloading" in m and url in m for m in messages) == 2
    messages.clear()
    assert resolve_jars(cache=tmp_path / "cache", stack=stack, progress=messages.append) == jars and messages == []
    with open(jars[1], "r+b") as fh:  # a corrupted cache entry is fetched again
        fh.seek(1000)
        fh.write(b"\0corrupt\0")
    resolve_jars(cache=tmp_path / "cache", stack=stack, progress=messages.append)
    assert sha256_file(jars[1]) == pins[stack.aws_bundle]["sha256"] and any("failed its checksum" in m for m in messages)
    # A mirror that serves another file: one line, nothing lands in the cache.
    served = next(root.rglob("iceberg-aws-bundle-1.12.0.jar"))
    served.unlink()
    served.write_bytes(b"not the bundle")
    with pytest.raises(JarError) as err:
        resolve_jars(cache=tmp_path / "other", stack=stack, progress=lambda m: None)
    assert "iceberg-aws-bundle-1.12.0.jar" in str(err.value) and "sha256" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "other" / "jars" / "maven" / served.name).exists()
    assert not list((tmp_path / "other").rglob("*.part"))


def test_unreachable_maven_repository_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(MAVEN_REPO_ENV, "http://127.0.0.1:9/maven2")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(JarError) as err:
        resolve_jars(cache=tmp_path, stack=select_stack("4.0"), progress=lambda m: None)
    msg = str(err.value)
    assert "could not download org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.11.0" in msg and MAVEN_REPO_ENV in msg and "\n" not in msg
    # With the fallback: Spark 4.x has nothing on PyPI, so the same one line says so.
    with pytest.raises(JarError) as err:
        resolve_stack_jars(select_stack("4.1"), cache=tmp_path, progress=lambda m: None)
    msg = str(err.value)
    assert "iceberg-spark-runtime-4.1_2.13:1.12.0" in msg and "PyPI's wheels carry only Spark 3.5 + Iceberg 1.10.2" in msg and "\n" not in msg


def test_spark_conf_per_stack_jars_and_packages(lakehouse):
    from pyspark_catalog_ext.spark.conf import spark_conf

    conf = spark_conf("local", lakehouse=lakehouse, spark="4.1", iceberg="1.12")
    jars = conf["spark.jars"].split(",")
    assert [Path(j).name for j in jars[:2]] == ["iceberg-spark-runtime-4.1_2.13-1.12.0.jar", "iceberg-aws-bundle-1.12.0.jar"]
    assert len(jars) == 3 and "shim" in Path(jars[2]).name  # one shim jar on every stack
    maven = spark_conf("local", lakehouse=lakehouse, jars="maven", spark="4.0")
    assert maven["spark.jars.packages"] == select_stack("4.0").maven_packages
    with pytest.raises(ConfigError, match="Iceberg 1.12 has no runtime for Spark 4.0"):
        spark_conf("local", lakehouse=lakehouse, jars=None, spark="4.0", iceberg="1.12")


# ------------------------------------------------------------------------------- the PyPI route
@pytest.fixture
def no_maven(tmp_path, monkeypatch) -> str:
    """A Maven repository that does not answer (a loopback port nobody listens on), no ~/.m2 copy."""
    from pyspark_catalog_ext.ports import free_port

    url = f"http://127.0.0.1:{free_port()}/maven2"
    monkeypatch.setenv(MAVEN_REPO_ENV, url)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return url


def test_pypi_route_as_asked_for_says_so_in_one_line(tmp_path, wheelhouse, no_maven):
    lines: list[str] = []
    got = resolve_stack_jars(select_stack("3.5"), route="pypi", cache=tmp_path / "cache", wheelhouse=wheelhouse, progress=lines.append)
    assert (got.stack, got.route) == (PYPI_STACK, "pypi") and [p.name for p in got.jars] == PYPI_STACK.jar_names("pypi")
    route_lines = [line for line in lines if "PyPI route" in line]
    assert route_lines == [got.note] and "as asked for" in got.note and "Spark 3.5 + Iceberg 1.10.2" in got.note
    # Only Spark 3.5 + Iceberg 1.10.2 is on PyPI: a pick of another release, or Spark 4, is refused in one line.
    for stack, user_pick in ((select_stack("3.5", "1.12"), True), (select_stack("4.1"), False)):
        with pytest.raises(ConfigError) as err:
            resolve_stack_jars(stack, route="pypi", user_pick=user_pick, cache=tmp_path / "cache", wheelhouse=wheelhouse, progress=lines.append)
        msg = str(err.value)
        assert f"the PyPI route has no jars for {stack.label}" in msg and "jars='offline'" in msg and "\n" not in msg


def test_maven_repository_that_does_not_answer_sends_spark_3_5_to_pypi(tmp_path, wheelhouse, no_maven):
    lines: list[str] = []
    got = resolve_stack_jars(select_stack("3.5"), cache=tmp_path / "cache", wheelhouse=wheelhouse, progress=lines.append)
    assert (got.stack, got.route) == (PYPI_STACK, "pypi")
    assert all(sha256_file(p) == ALL_PINS[p.name] for p in got.jars)
    [note] = [line for line in lines if "PyPI route" in line]
    assert note == got.note and "\n" not in note
    assert f"{no_maven} did not answer (ConnectionError)" in note and "instead of Spark 3.5 + Iceberg 1.12.0" in note, note
    # The Iceberg release the user picked is never swapped for another: one line instead.
    with pytest.raises(JarError) as err:
        resolve_stack_jars(select_stack("3.5", "1.12"), user_pick=True, cache=tmp_path / "cache", wheelhouse=wheelhouse, progress=lines.append)
    assert "could not download org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.12.0" in str(err.value)
    assert "PyPI's wheels carry only Spark 3.5 + Iceberg 1.10.2" in str(err.value) and "\n" not in str(err.value)


def test_a_maven_repository_that_answers_404_is_an_error_not_a_fallback(tmp_path, wheelhouse, monkeypatch):
    """Only a repository that does not answer sends jars to PyPI; one that answers without the file
    (a mirror missing it) is an error to fix, whatever PyPI has."""
    import functools
    import http.server
    import threading

    empty = tmp_path / "empty-repo"
    empty.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(empty))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(MAVEN_REPO_ENV, f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        with pytest.raises(JarError) as err:
            resolve_stack_jars(select_stack("3.5"), cache=tmp_path / "cache", wheelhouse=wheelhouse, progress=lambda m: None)
    finally:
        server.shutdown()
        server.server_close()
    assert "(HTTP 404)" in str(err.value) and "PyPI" not in str(err.value)


def test_spark_conf_pypi_jars_and_the_route_line(lakehouse, wheelhouse, monkeypatch, capsys):
    """jars='pypi' on a Spark 3.5 conf: the 28 pinned jars from the wheels and the shim, and one
    line on stderr naming the route."""
    from pyspark_catalog_ext.spark.conf import spark_conf

    monkeypatch.setenv("PYSPARK_CATALOG_EXT_WHEELHOUSE", str(wheelhouse))
    conf = spark_conf("local", lakehouse=lakehouse, jars="pypi", spark="3.5")
    jars = conf["spark.jars"].split(",")
    assert [Path(j).name for j in jars[:-1]] == PYPI_STACK.jar_names("pypi") and "shim" in Path(jars[-1]).name
    err = capsys.readouterr().err
    assert "jars by the PyPI route, as asked for: Spark 3.5 + Iceberg 1.10.2 from PyPI wheels (not Spark 3.5 + Iceberg 1.12.0" in err, err
    with pytest.raises(ConfigError, match="the PyPI route has no jars for Spark 4.1 \\+ Iceberg 1.12.0"):
        spark_conf("local", lakehouse=lakehouse, jars="pypi")  # this venv's pyspark 4.1
