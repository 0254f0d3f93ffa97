"""`--packages` for real: `pyspark-catalog-ext maven-repo DIR` lays out a Maven repository of the
pinned jars and the shim, and `spark-conf --jars packages --repository DIR` prints the flags that make
spark-submit resolve the whole stack from it through Spark's own Ivy (offline: Central fails fast).
The default stack's jars are Apache's from Maven Central; `maven-repo --jars pypi` lays out the PyPI
route's (Spark 3.5 + Iceberg 1.10.2 with the AWS SDK modules) under jvm-shim/pom.xml's own coordinate."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pyspark_catalog_ext.errors import JarError
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import DEFAULT_STACK
from pyspark_catalog_ext.spark.jvm_deps.maven_repo import Coordinate, runtime_dependencies, shim_coordinate, write_repository
from pyspark_catalog_ext.spark.jvm_deps.pypi_jars import WHEEL_SOURCES
from tests.conftest import ROOT, assert_one_line_error, run_cli
from tests.spark.test_spark_submit import SPARK_SUBMIT, assert_outlived, expiring, parsed, slow_ctas  # noqa: F401 (fixture)

NS = {"m": "http://maven.apache.org/POM/4.0.0"}
PINNED = [name for source in WHEEL_SOURCES for name in source.jars]
CONNECTION = ["--uri", "http://127.0.0.1:9/catalog", "--warehouse", "warehouse", "--credential", "id:not-a-real-secret"]


def pom_facts(path: Path, skip_provided: bool = False) -> tuple[str, list[str]]:
    """(`g:a:v` of the POM, its dependencies as `g:a:v`), `${property}`s read from its <properties>
    as a Maven consumer reads them (test-scoped dependencies are not published ones)."""
    root = ET.parse(path).getroot()
    props = {p.tag.split("}")[-1]: p.text or "" for p in root.findall("m:properties/*", NS)}

    def gav(node: ET.Element) -> str:
        text = ":".join(node.findtext(f"m:{t}", namespaces=NS) or "" for t in ("groupId", "artifactId", "version"))
        return re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)), text)

    deps = [d for d in root.findall("m:dependencies/m:dependency", NS)
            if d.findtext("m:scope", namespaces=NS) != "test"
            and not (skip_provided and d.findtext("m:scope", namespaces=NS) == "provided")]
    return gav(root), [gav(d) for d in deps]


def _stand_ins(folder: Path, names: list[str]) -> tuple[list[Path], Path]:
    """Stand-in files for `names` and a shim (the layout does not look inside jars)."""
    folder.mkdir()
    jars = []
    for name in names:
        (folder / name).write_bytes(name.encode())
        jars.append(folder / name)
    (folder / "shim.jar").write_bytes(b"shim")
    return jars, folder / "shim.jar"


@pytest.fixture
def small_repo(tmp_path) -> Path:
    """A repository of the PyPI route's jars, laid out from stand-in files."""
    jars, shim = _stand_ins(tmp_path / "src", PINNED)
    repo = tmp_path / "repo"
    write_repository(repo, jars=jars, shim=shim, route="pypi")
    return repo


@pytest.fixture
def default_repo(tmp_path) -> Path:
    """A repository of the default stack (Spark 4.1 + Iceberg 1.12.0: Apache's runtime and bundle)."""
    jars, shim = _stand_ins(tmp_path / "src-default", DEFAULT_STACK.jar_names())
    repo = tmp_path / "default-repo"
    assert [str(c) for c in write_repository(repo, jars=jars, shim=shim)] == [
        DEFAULT_STACK.runtime, DEFAULT_STACK.aws_bundle, "io.catalogext:catalog-ext-shim:0.1.0-spark4.1-iceberg1.12.0"]
    return repo


def test_repository_has_real_coordinates_poms_and_sha1(small_repo):
    import hashlib

    expected = {
        "iceberg-spark-runtime-3.5_2.12-1.10.2.jar": "org/apache/iceberg/iceberg-spark-runtime-3.5_2.12/1.10.2",
        "s3-2.29.26.jar": "software/amazon/awssdk/s3/2.29.26",
        "third-party-jackson-core-2.29.26.jar": "software/amazon/awssdk/third-party-jackson-core/2.29.26",
        "reactive-streams-1.0.4.jar": "org/reactivestreams/reactive-streams/1.0.4",
        "catalog-ext-shim-0.1.0.jar": "io/catalogext/catalog-ext-shim/0.1.0",
    }
    for jar, folder in expected.items():
        assert (small_repo / folder / jar).is_file(), jar
    jars = sorted(p.relative_to(small_repo).as_posix() for p in small_repo.rglob("*.jar"))
    assert len(jars) == len(PINNED) + 1, jars
    for path in small_repo.rglob("*.jar"):
        pom = path.with_suffix(".pom")
        gav, deps = pom_facts(pom)
        group, artifact, version = gav.split(":")
        assert path.parent == Coordinate(group, artifact, version).directory(small_repo)
        for f in (path, pom):
            assert f.with_name(f.name + ".sha1").read_text() == hashlib.sha1(f.read_bytes()).hexdigest()
        if artifact != "catalog-ext-shim":
            assert deps == [], f"{gav}: the pinned jars' POMs are minimal"
    gav, deps = pom_facts(shim_coordinate(route="pypi").file(small_repo, "pom"))
    assert gav == "io.catalogext:catalog-ext-shim:0.1.0"
    assert deps == [str(c) for c in runtime_dependencies(route="pypi")]
    assert deps[0] == "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2"
    assert "org.reactivestreams:reactive-streams:1.0.4" in deps and "software.amazon.awssdk:sts:2.29.26" in deps
    assert not list(small_repo.rglob("*.part"))


def test_relaying_out_drops_the_ivy_cache_that_would_serve_a_stale_shim(small_repo):
    """Ivy caches by version: after a rebuild of the shim (same version) its cached copy would win."""
    cached = small_repo / ".ivy2" / "jars" / "io.catalogext_catalog-ext-shim-0.1.0.jar"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"old shim")
    shim = small_repo.parent / "src" / "shim.jar"
    shim.write_bytes(b"rebuilt shim")
    write_repository(small_repo, jars=sorted((small_repo.parent / "src").glob("*-*.jar")), shim=shim, route="pypi")
    assert not (small_repo / ".ivy2").exists()
    assert shim_coordinate(route="pypi").file(small_repo, "jar").read_bytes() == b"rebuilt shim"


def test_source_tree_pom_matches_the_written_one(small_repo):
    """jvm-shim/pom.xml (what a Maven user builds with; the oldest stack the shim runs on) has the
    coordinates and runtime dependencies of the plain-version POM the repository carries."""
    assert pom_facts(ROOT / "jvm-shim" / "pom.xml", skip_provided=True) == pom_facts(shim_coordinate(route="pypi").file(small_repo, "pom"))


def test_spark_conf_packages_prints_exact_flags(default_repo, small_repo):
    proc = run_cli("spark-conf", "--jars", "packages", "--repository", str(default_repo), *CONNECTION)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split(" \\\n")
    assert lines[0] == "--packages io.catalogext:catalog-ext-shim:0.1.0-spark4.1-iceberg1.12.0"
    assert f"--conf spark.jars.ivySettings={default_repo / 'ivysettings.xml'}" in lines
    assert f"--conf spark.jars.ivy={default_repo / '.ivy2'}" in lines
    assert not any(line.startswith("--repositories") for line in lines), "the directory alone, through its Ivy settings"
    assert not any(line.startswith("--jars") or line.startswith("--conf spark.jars=") for line in lines)

    proc = run_cli("spark-conf", "--jars", "packages", "--repository", str(default_repo), "--format", "defaults", *CONNECTION)
    conf = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert conf["spark.jars.packages"] == "io.catalogext:catalog-ext-shim:0.1.0-spark4.1-iceberg1.12.0"
    assert conf["spark.jars.ivySettings"] == str(default_repo / "ivysettings.xml")
    assert conf["spark.jars.ivy"] == str(default_repo / ".ivy2")
    assert default_repo.as_uri() in (default_repo / "ivysettings.xml").read_text()
    assert "spark.jars" not in conf

    # A repository of the PyPI route's jars serves Spark 3.5 (its default release not being the user's
    # pick), under the plain coordinate; a picked release it does not hold is refused in one line.
    proc = run_cli("spark-conf", "--jars", "packages", "--repository", str(small_repo), "--spark", "3.5", "--format", "defaults", *CONNECTION)
    assert proc.returncode == 0, proc.stderr
    assert dict(line.split(" ", 1) for line in proc.stdout.splitlines())["spark.jars.packages"] == "io.catalogext:catalog-ext-shim:0.1.0"
    assert_one_line_error(run_cli("spark-conf", "--jars", "packages", "--repository", str(small_repo), "--spark", "3.5", "--iceberg", "1.12",
                                  *CONNECTION), "maven-repo", "--spark 3.5 --iceberg 1.12.0")

    url = "https://nexus.example.com/repository/maven-releases"
    proc = run_cli("spark-conf", "--jars", "packages", "--repository", url, "--format", "defaults", *CONNECTION)
    conf = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert conf["spark.jars.repositories"] == url and "spark.jars.ivy" not in conf


def test_store_bundles_are_laid_out_and_packages_name_them(default_repo, tmp_path):
    """`maven-repo --store adls --store gcs` lays out Iceberg's SDK bundles under their real Central
    coordinates (minimal POMs, not in the shim's: only a user who names the store pulls them), and
    `spark-conf --jars packages --store ...` names them; a repository without them says which flag lays them out."""
    import hashlib

    from pyspark_catalog_ext.spark.jvm_deps.maven_repo import store_coordinate
    from pyspark_catalog_ext.spark.jvm_deps.store_jars import store_bundle

    assert_one_line_error(run_cli("spark-conf", "--jars", "packages", "--repository", str(default_repo), "--store", "adls", *CONNECTION),
                          "iceberg-azure-bundle", f"maven-repo {default_repo} --spark 4.1 --iceberg 1.12.0 --store adls")
    bundles = {store: store_coordinate(store, DEFAULT_STACK) for store in ("adls", "gcs")}
    assert {s: str(c) for s, c in bundles.items()} == {s: store_bundle(s, DEFAULT_STACK) for s in bundles}
    jars, shim = _stand_ins(tmp_path / "src-stores", DEFAULT_STACK.jar_names() + [c.file(tmp_path, "jar").name for c in bundles.values()])
    written = write_repository(default_repo, jars=jars, shim=shim, stores=("adls", "gcs"))
    assert [str(c) for c in written] == [DEFAULT_STACK.runtime, DEFAULT_STACK.aws_bundle, str(bundles["adls"]), str(bundles["gcs"]),
                                         "io.catalogext:catalog-ext-shim:0.1.0-spark4.1-iceberg1.12.0"]
    for coord in bundles.values():
        jar = coord.file(default_repo, "jar")
        assert jar.read_bytes() == jar.name.encode()
        assert pom_facts(coord.file(default_repo, "pom")) == (str(coord), [])
        assert jar.with_name(jar.name + ".sha1").read_text() == hashlib.sha1(jar.read_bytes()).hexdigest()
    assert pom_facts(shim_coordinate().file(default_repo, "pom"))[1] == [DEFAULT_STACK.runtime, DEFAULT_STACK.aws_bundle]
    proc = run_cli("spark-conf", "--jars", "packages", "--repository", str(default_repo), "--store", "adls", "--store", "gcs",
                   "--format", "defaults", *CONNECTION)
    assert proc.returncode == 0, proc.stderr
    conf = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert conf["spark.jars.packages"].split(",") == [str(shim_coordinate()), str(bundles["adls"]), str(bundles["gcs"])]
    assert conf["spark.sql.catalog.lake.catalog-ext.stores"] == "adls,gcs"
    url = "https://nexus.example.com/repository/maven-releases"
    proc = run_cli("spark-conf", "--jars", "packages", "--repository", url, "--store", "gcs", "--format", "defaults", *CONNECTION)
    assert dict(line.split(" ", 1) for line in proc.stdout.splitlines())["spark.jars.packages"].endswith("," + str(bundles["gcs"]))


def test_repository_and_flags_for_another_stack(small_repo, tmp_path):
    """Spark 3.5 + Iceberg 1.12 beside the PyPI route's jars in one repository: the real Central
    coordinates of its runtime and bundle, and a shim version of its own whose POM names them."""
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import select_stack

    stack = select_stack("3.5", "1.12")
    jars, shim_jar = _stand_ins(tmp_path / "src35", stack.jar_names())
    written = write_repository(small_repo, jars=jars, shim=shim_jar, stack=stack)
    shim = "io.catalogext:catalog-ext-shim:0.1.0-spark3.5-iceberg1.12.0"
    assert [str(c) for c in written] == ["org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.12.0",
                                         "org.apache.iceberg:iceberg-aws-bundle:1.12.0", shim]
    assert (small_repo / "org/apache/iceberg/iceberg-spark-runtime-3.5_2.12/1.12.0/iceberg-spark-runtime-3.5_2.12-1.12.0.jar").is_file()
    assert pom_facts(shim_coordinate(stack).file(small_repo, "pom")) == (shim, [stack.runtime, stack.aws_bundle])
    pypi_pom = pom_facts(shim_coordinate(route="pypi").file(small_repo, "pom"))[1]
    assert pypi_pom == [str(c) for c in runtime_dependencies(route="pypi")]  # the PyPI route's kept
    proc = run_cli("spark-conf", "--jars", "packages", "--repository", str(small_repo), "--spark", "3.5", *CONNECTION)
    assert proc.returncode == 0, proc.stderr
    tokens = shlex.split(proc.stdout.replace("\\\n", " "))
    assert tokens[tokens.index("--packages") + 1] == shim
    # A repository laid out without that stack says which maven-repo flags make it.
    assert_one_line_error(run_cli("spark-conf", "--jars", "packages", "--repository", str(small_repo), "--spark", "4.0", *CONNECTION),
                          "maven-repo", "--spark 4.0 --iceberg 1.11.0")
    assert_one_line_error(run_cli("maven-repo", str(tmp_path / "r"), "--spark", "4.0", "--iceberg", "1.12"),
                          "Iceberg 1.12 has no runtime for Spark 4.0")


def test_bad_inputs_give_one_line_errors(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert_one_line_error(run_cli("maven-repo", str(a_file / "repo")), "not writable")
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PYSPARK_CATALOG_EXT_CACHE": str(tmp_path / "cache"), "PYSPARK_CATALOG_EXT_WHEELHOUSE": str(empty)}
    assert_one_line_error(run_cli("maven-repo", str(tmp_path / "repo"), "--jars", "pypi", "--spark", "3.5", env=env), "not found in wheelhouse")
    assert_one_line_error(run_cli("maven-repo", str(tmp_path / "repo"), "--jars", "pypi", env=env), "the PyPI route has no jars for Spark 4.1")
    (empty / PINNED[0]).write_bytes(b"runtime")
    with pytest.raises(JarError, match="pinned jar s3-2.29.26.jar is missing"):
        write_repository(tmp_path / "repo2", jars=[empty / PINNED[0]], shim=a_file, route="pypi")
    runtime = empty / DEFAULT_STACK.jar_names()[0]
    runtime.write_bytes(b"runtime")
    with pytest.raises(JarError, match="pinned jar iceberg-aws-bundle-1.12.0.jar is missing"):
        write_repository(tmp_path / "repo3", jars=[runtime], shim=a_file)
    assert_one_line_error(run_cli("spark-conf", "--jars", "packages", *CONNECTION), "needs a repository")
    assert_one_line_error(run_cli("spark-conf", "--jars", "packages", "--repository", str(tmp_path / "none"), *CONNECTION), "maven-repo")
    assert_one_line_error(run_cli("spark-conf", "--repository", str(empty), *CONNECTION), "--jars packages")


def test_spark_submit_with_only_packages_outlives_credentials(lakehouse, expiring, pyiceberg_catalog, tmp_path):  # noqa: F811
    """spark-submit gets only --packages, spark.jars.ivySettings, spark.jars.ivy and the catalog settings,
    all printed by spark-conf; the job never imports the package, and its CTAS outlives its
    short-lived credentials."""
    catalog_proxy, s3_proxy = expiring
    s3_proxy.reset_counters()
    catalog_proxy.reset_counters()
    repo = tmp_path / "repo"
    made = run_cli("maven-repo", str(repo))
    assert made.returncode == 0, made.stderr
    common = ["spark-conf", "--jars", "packages", "--repository", str(repo), "--uri", catalog_proxy.url,
              "--warehouse", lakehouse.info.warehouse, "--credential", lakehouse.info.credential,
              "--conf", "spark.ui.enabled=false"]
    for key, value in {"check-interval-ms": 1000, "min-ahead-ms": 0, "lifetime-fraction": 0.4}.items():
        common += ["--conf", f"spark.sql.catalog.lake.catalog-ext.refresh.{key}={value}"]
    flags = run_cli(*common)  # submit form, secrets masked: only its jar flags go on the command line
    assert flags.returncode == 0, flags.stderr
    jar_flags = [arg for line in flags.stdout.split(" \\\n") if line.startswith(("--packages", "--repositories", "--conf spark.jars."))
                 for arg in shlex.split(line)]
    assert len(jar_flags) == 6 and "--jars" not in flags.stdout, flags.stdout
    defaults = run_cli(*common, "--format", "defaults", "--show-secrets")  # the secrets go in a file, not argv
    assert defaults.returncode == 0, defaults.stderr
    props = tmp_path / "catalog.conf"
    props.write_text("".join(line + "\n" for line in defaults.stdout.splitlines() if not line.startswith("spark.jars")))

    pyiceberg_catalog.create_namespace_if_not_exists("db")
    table = f"db.packages_{uuid.uuid4().hex[:6]}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    proc = subprocess.run([str(SPARK_SUBMIT), "--master", "local[2]", *jar_flags, "--properties-file", str(props),
                           str(ROOT / "tests" / "jobs" / "config_only_job.py"),
                           json.dumps({"ctas": slow_ctas("lake." + table), "table": "lake." + table})],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert parsed(proc, "COUNT") == "3000"
    assert parsed(proc, "IMPORTED") == "False"
    assert_outlived(catalog_proxy, s3_proxy, table)
    # Spark's Ivy resolved the shim and its dependencies from the laid-out repository alone (its Ivy
    # settings): not from ~/.m2, where a Maven build leaves Central's fuller POMs of the same coordinates.
    assert "found io.catalogext#catalog-ext-shim;0.1.0-spark4.1-iceberg1.12.0 in pyspark-catalog-ext" in proc.stderr, proc.stderr[-3000:]
    assert "found org.apache.iceberg#iceberg-spark-runtime-4.1_2.13;1.12.0 in pyspark-catalog-ext" in proc.stderr
    assert "found org.apache.iceberg#iceberg-aws-bundle;1.12.0 in pyspark-catalog-ext" in proc.stderr
    assert "local-m2-cache" not in proc.stderr
    fetched = sorted(p.name for p in (repo / ".ivy2" / "jars").glob("*.jar"))
    assert len(fetched) == 3, fetched
