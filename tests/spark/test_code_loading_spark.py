"""The code-loading sweep through a real Spark session: no server channel makes Spark's Iceberg load a class.

Every property key through which the session's Iceberg loads a class or calls a named method is found
in its bytecode by the shim's `IcebergCodeKeys` (the JVM sweep's discovery, `CodeLoadingSweepTest`),
compiled here with the shim's `CodeMarker` against the Iceberg runtime jar. Each key names the marker
in one channel of a hostile loopback catalog (`Injector`: `/v1/config` defaults and overrides, a
table's config, its storage credentials, its metadata properties). A Spark job with the marker in a jar
beside Iceberg's (tests/jobs/sweep_job.py, a catalog per channel through the shim) reads a table,
deletes from it, appends to it and creates a table as select from it, with exact rows: the marker is initialised
and instantiated zero times. The controls: Iceberg's own REST catalog (no shim) loads it from a table
answer, and the user setting one such key on the catalog loads it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pyspark_catalog_ext.catalog.trust_rules import server_may_set
from pyspark_catalog_ext.spark.conf import catalog_properties
from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars
from pyspark_catalog_ext.spark.jvm_deps.shim_build import find_java
from tests.servers.injector import Injector
from tests.sweep_job_client import SweepJob
from tests.url_keys import jdk_tool

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "jvm-shim" / "src" / "test" / "java" / "io" / "catalogext" / "shim" / "codeload"
MARKER = "io.catalogext.shim.codeload.CodeMarker"
CHANNELS = ("config-defaults", "config-overrides", "table-config", "storage-credentials", "table-properties")
NAMESPACE = "code_spark"
# {catalog} is new for each run, so each run's CTAS makes a table of its own.
COPY = f"{{catalog}}.{NAMESPACE}.ctas_{{catalog}}"
STATEMENTS = ("DELETE FROM {target} WHERE x = 5",  # an earlier run's row
              "INSERT INTO {target} VALUES (5)",
              f"CREATE TABLE {COPY} AS SELECT * FROM {{target}}",
              # Exact rows: Spark's assert_true fails the statement otherwise.
              "SELECT assert_true(count(*) = 1) FROM {target} WHERE x = 5",
              f"SELECT assert_true(c.n = t.n AND t.n = 4) FROM (SELECT count(*) n FROM {COPY}) c, "
              "(SELECT count(*) n FROM {target}) t")
KNOWN_KEYS = ("io-impl", "metrics-reporter-impl", "write.location-provider.impl", "client.factory")


@pytest.fixture(scope="module")
def marker_classes(tmp_path_factory) -> tuple[Path, list[str]]:
    """The marker and the discovery compiled against the session's Iceberg (a jar of them), and the keys it finds there."""
    jar = next(j for j in resolve_jars() if j.name.startswith("iceberg-spark-runtime-"))  # the session's own
    out = tmp_path_factory.mktemp("codeload-classes")
    subprocess.run([jdk_tool("javac"), "-nowarn", "-cp", str(jar), "-d", str(out), str(SOURCES / "CodeMarker.java"),
                    str(SOURCES / "IcebergCodeKeys.java")], check=True, capture_output=True, timeout=300)
    found = subprocess.run([str(find_java()), "-cp", f"{out}{os.pathsep}{jar}", "io.catalogext.shim.codeload.IcebergCodeKeys"],
                           check=True, capture_output=True, text=True, timeout=600)
    keys = [line.strip() for line in found.stdout.splitlines() if line.strip()]
    marker_jar = out / "code-marker.jar"
    subprocess.run([jdk_tool("jar"), "cf", str(marker_jar), "-C", str(out), "io"], check=True, timeout=120)
    missing = [k for k in KNOWN_KEYS if k not in keys]
    assert not missing, f"the discovery missed well-known loading keys {missing}: it finds {keys}"
    return marker_jar, keys


@pytest.fixture(scope="module")
def hostile(lakehouse):
    with Injector(lakehouse.info.iceberg_uri) as injector:
        yield injector


@pytest.fixture(scope="module")
def job(lakehouse, marker_classes, tmp_path_factory):
    info = lakehouse.info
    session = {"uri": info.iceberg_uri, "warehouse": info.warehouse, "credential": info.credential,
               "iceberg": None, "stores": "s3",
               # The marker beside Iceberg's jars: a class on the driver's own class path could not see
               # Iceberg's interfaces, and any load of it would fail (and could be swallowed) unseen.
               "jars": [str(marker_classes[0])],
               "extra_conf": {"spark.sql.pyspark.jvmStacktrace.enabled": "true"}}  # a failure names its loader
    started = SweepJob(dict(os.environ), session, tmp_path_factory.mktemp("code-sweep-job") / "job.log")
    yield started
    started.close()


@pytest.fixture(scope="module")
def table(lakehouse) -> tuple[str, str]:
    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    catalog = pyiceberg_catalog(lakehouse.connection())
    catalog.create_namespace_if_not_exists(NAMESPACE)
    if catalog.table_exists((NAMESPACE, "t")):
        catalog.drop_table((NAMESPACE, "t"))
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    created = catalog.create_table((NAMESPACE, "t"), Schema(NestedField(1, "x", LongType(), required=False)))
    created.append(pa.table({"x": pa.array([1, 2, 3], pa.int64())}))
    catalog.close()
    return NAMESPACE, "t"


def _catalog_props(lakehouse, hostile, shim: bool = True, **user: str) -> dict[str, str]:
    info = lakehouse.info
    return {**catalog_properties("local", lakehouse=lakehouse, shim=shim, uri=hostile.url, credential=info.credential,
                                 warehouse=info.warehouse), "cache-enabled": "false", **user}


def _injected(keys: list[str], channel: str) -> list[str]:
    """The keys swept through `channel`: all but those trust-rules.json lets that answer set (a page size,
    a storage key), which Iceberg follows by design and parses as what they are, so a class name there
    stops the catalog with a parse error before anything else is tried; `CodeLoadingSweepTest` sweeps
    each of those alone."""
    if channel == "table-properties":
        return keys
    return [k for k in keys if not server_may_set(k, config=channel.startswith("config"))]


def _sweep(job, props: dict, table, hostile, channel: str, keys: list[str], stopped: dict[str, str]) -> None:
    """One run with `keys` injected at once, the marker checked after it. Where the run stops (one key's
    value, a path say, can stop what another key would build), the keys are halved and swept again,
    down to single keys, whose failures land in `stopped` (as `CodeLoadingSweepTest` does)."""
    hostile.arm(channel, {key: MARKER for key in keys})
    try:
        job.run(props, table, STATEMENTS)
        failure = None
    except RuntimeError as exc:
        failure = str(exc).split("\n", 1)[0]
    finally:
        hostile.arm(None)
    used = job.marker(MARKER)
    assert used["initialised"] == 0 and used["instances"] == 0, (
        f"{channel} with {keys if len(keys) < 4 else f'{len(keys)} keys'}: a server-named class was loaded: {used}")
    if failure is None:
        return
    if len(keys) == 1:
        stopped[keys[0]] = failure
        return
    _sweep(job, props, table, hostile, channel, keys[:len(keys) // 2], stopped)
    _sweep(job, props, table, hostile, channel, keys[len(keys) // 2:], stopped)


@pytest.mark.parametrize("channel", CHANNELS)
def test_no_server_channel_loads_code_through_spark(lakehouse, hostile, job, marker_classes, table, channel):
    injected = _injected(marker_classes[1], channel)
    print(f"{channel}: {len(injected)} keys; left to the JVM sweep: {sorted(set(marker_classes[1]) - set(injected))}")
    stopped: dict[str, str] = {}
    _sweep(job, _catalog_props(lakehouse, hostile), table, hostile, channel, injected, stopped)
    print(f"{channel}: keys that stopped a run alone: {stopped}")
    # A key that stops a run hides nothing from the sweep (every other key ran without it), and is no code:
    # the one-line error names what its value was taken for.
    assert all("CodeMarker" not in failure.split(":", 1)[0] for failure in stopped.values()), stopped


def test_control_plain_iceberg_loads_the_marker_from_a_table_answer(lakehouse, hostile, job, marker_classes, table):
    """The channel is real through Spark: Iceberg's own REST catalog (no shim) follows the table config's keys."""
    before = job.marker(MARKER)["instances"]
    hostile.arm("table-config", {key: MARKER for key in _injected(marker_classes[1], "table-config")})
    try:
        job.run(_catalog_props(lakehouse, hostile, shim=False), table, ("SELECT count(*) FROM {target}",))
    except RuntimeError:
        pass  # the marker is no FileIO: the read fails after Iceberg made one
    finally:
        hostile.arm(None)
    assert job.marker(MARKER)["instances"] > before


def test_control_the_users_own_key_loads_the_marker(lakehouse, hostile, job, table):
    """The marker jar is in the class loader that holds Iceberg's, and its record is read: a key the user sets is followed."""
    job.run(_catalog_props(lakehouse, hostile, **{"metrics-reporter-impl": MARKER}), table,
            ("SELECT count(*) FROM {target}",))
    assert job.marker(MARKER)["instances"] > 0
