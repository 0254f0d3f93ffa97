"""One catalog whose tables are on S3 (SeaweedFS), ADLS (Azurite) and GCS (fake-gcs-server) side by side:
Iceberg's REST fixture with ResolvingFileIO behind the vending front (tests/stores), which vends each
table tokens for its own store that are stated to live 10 s, each with a storage-refresh-token.

- One Spark session (`configure(store="s3,adls,gcs")`: the shim's one FileIO routes each path by its
  scheme; `store=` only puts the two SDK bundles in the jars) runs a staged CTAS into each store's
  table, the three side by side, each spanning 3.2 token lifetimes: exact rows, every file of a table
  on its own store and nothing of it on the others, and the catalog asked once per table per renewal.
  The same on Spark 4.1, 4.0 and 3.5 (Iceberg 1.11.0: 1.12 has no Spark 4.0 runtime).
- One PyIceberg catalog, with each of its two FileIOs, reads the three tables back exactly and appends
  to each: the new files land on the table's own store.
- `spark-submit` with only `--packages` and the settings `spark-conf --jars packages --store ...`
  prints, from a repository `maven-repo --store adls --store gcs` laid out: a staged CTAS on each store
  that outlives its first tokens, the job never importing the package.
"""
from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys

import pytest

from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.refresh import RefreshPolicy
from tests.conftest import ROOT, run_cli
from tests.slow.test_stack_matrix import spark_venv
from tests.spark.test_spark_submit import SPARK_SUBMIT, parsed
from tests.stores.catalog import S3Store, store_catalog
from tests.stores.install import StoreUnavailable
from tests.stores.store_job import run_job, summarize

pytest.importorskip("adlfs")
pytest.importorskip("gcsfs")

STORES = ("s3", "adls", "gcs")
SPARK_LINES = ("4.1", "4.0", "3.5")
ICEBERG = "1.11.0"
LIFETIME = 10  # seconds each vended token is stated to live
ROWS = 4  # single-row files of each staged create, each row 0.8 lifetimes slow: 3.2 lifetimes
RENEWAL_POLICY = {"min_ahead_s": 0, "lifetime_fraction": 0.25, "check_interval_s": 1}
FSSPEC = "pyiceberg.io.fsspec.FsspecFileIO"
PYARROW = "pyiceberg.io.pyarrow.PyArrowFileIO"


@pytest.fixture(scope="module")
def stack(lakehouse):
    info = lakehouse.info
    s3 = S3Store(info.s3_endpoint, info.access_key, info.secret_key)
    try:
        # The GCS front in a process of its own: Arrow's GCS client sends some requests holding the GIL.
        with store_catalog("mixed", s3=s3, lifetime_s=LIFETIME, refresh_tokens=True, gcs_front_process=True) as running:
            yield running
    except StoreUnavailable as exc:
        pytest.skip(str(exc))


def table_of(store: str, line: str) -> str:
    return f"ctas_{store}_{line.replace('.', '')}"


def location(stack, store: str, line: str = "4.1") -> str:
    return stack.emulator.location(store, "tables/" + table_of(store, line))


@pytest.fixture(scope="module")
def spark_jobs(stack) -> dict[str, tuple[str, dict]]:
    """Per Spark line, the three staged creates side by side in one session (3 executor JVMs, one task
    each): ("RESULT" | "FAILED", the job's report with its steps by store)."""
    jobs = {}
    for line in SPARK_LINES:
        steps = [{"name": store, "action": "ctas-sql", "table": table_of(store, line), "rows": ROWS,
                  "ms": int(0.8 * LIFETIME * 1000), "location": location(stack, store, line)} for store in STORES]
        kind, report = run_job({"mode": "package", "store": ",".join(STORES), "uri": stack.uri, "iceberg": ICEBERG,
                                "master": "local-cluster[3,1,1024]", "policy": RENEWAL_POLICY, "steps": steps,
                                "together": True}, python=spark_venv(line))
        if kind == "RESULT":
            report["steps"] = dict(zip(STORES, report["steps"], strict=True))
        jobs[line] = (kind, report)
    return jobs


def job_on(spark_jobs: dict, line: str) -> dict:
    kind, report = spark_jobs[line]
    assert kind == "RESULT", f"Spark {line}: {summarize(report.get('error', ''))}"
    return report


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("line", SPARK_LINES)
def test_a_staged_ctas_on_each_store_outlives_three_lifetimes_with_exact_rows(stack, spark_jobs, line, store):
    job = job_on(spark_jobs, line)
    step = job["steps"][store]
    assert step["kind"] == "RESULT", f"{store}: {summarize(step['error'])}"
    assert (step["rows"], step["sum"]) == (ROWS, 3 * sum(range(ROWS)))
    assert step["seconds"] >= 3 * LIFETIME, f"{store}: the create took {step['seconds']:.0f} s, not 3 lifetimes"
    status = next(s for s in job["status"] if s["name"].endswith("db." + table_of(store, line)))
    assert status["refreshes"] >= 1 and status["failures"] == 0, status


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("line", SPARK_LINES)
def test_each_tables_files_are_on_its_own_store_only(stack, spark_jobs, line, store):
    """What the catalog stored (the table's data files, as its manifests name them) and what each store
    holds: all on the table's own store, nothing of it on the other two."""
    assert job_on(spark_jobs, line)["steps"][store]["kind"] == "RESULT"
    cat = catalog(stack, FSSPEC)
    table = cat.load_table("db." + table_of(store, line))
    cat.close()
    own = location(stack, store, line)
    assert table.metadata.location == own
    data = [task.file.file_path for task in table.scan().plan_files()]
    assert data and all(path.startswith(own + "/data/") for path in data), data
    held = stack.emulator.files(own)
    assert set(data) <= set(held), f"{store}: files the table names but its store lacks: {set(data) - set(held)}"
    assert any("/metadata/" in path and path.endswith(".metadata.json") for path in held), held
    for other in STORES:
        if other != store:
            assert stack.emulator.files(stack.emulator.location(other, "tables/" + table_of(store, line))) == []


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("line", SPARK_LINES)
def test_one_catalog_request_per_table_per_renewal(stack, spark_jobs, line, store):
    """The three tables' renewals are their own: each table's /credentials requests during its create
    are the renewals the policy schedules for it (every 0.75 lifetimes), plus one, whatever the other
    two tables and the 3 executor JVMs do."""
    step = job_on(spark_jobs, line)["steps"][store]
    assert step["kind"] == "RESULT"
    table = "db." + table_of(store, line)
    during = [e for e in stack.front.entries() if e["kind"] == "credentials" and e["table"] == table
              and step["started"] <= e["time"] <= step["ended"]]
    renewals = math.ceil(step["seconds"] / (LIFETIME * (1 - RENEWAL_POLICY["lifetime_fraction"])))
    print(f"Spark {line}, {store}: {len(during)} /credentials requests over {step['seconds']:.0f} s ({renewals} scheduled renewals)")
    assert 1 <= len(during) <= renewals + 1, f"{store}: {len(during)} requests for {renewals} renewals"
    vended = [v for v in stack.front.vended if v["table"] == table]
    assert {v["store"] for v in vended} == {store}, f"{table} was vended tokens for other stores: {vended}"
    if store == "s3":
        # The S3 front refuses a key once its stated lifetime is over: the create wrote with renewed keys.
        used = {v["access_key"] for v in vended} & set(stack.front.s3_front.forwarded_by_key)
        assert len(used) >= 2, f"the S3 create used {len(used)} of its table's keys"


def catalog(stack, io_impl: str):
    policy = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.25)
    return pyiceberg_catalog({"uri": stack.uri, "header.X-Iceberg-Access-Delegation": "vended-credentials",
                              "py-io-impl": io_impl}, policy=policy)


@pytest.mark.parametrize("io_impl", [FSSPEC, PYARROW], ids=["fsspec", "pyarrow"])
def test_one_pyiceberg_catalog_reads_and_appends_on_every_store(stack, spark_jobs, io_impl):
    import pyarrow as pa

    cat = catalog(stack, io_impl)
    tables = []  # kept: the refresher tracks a table while its Table object lives
    try:
        for store in STORES:
            assert job_on(spark_jobs, "4.1")["steps"][store]["kind"] == "RESULT"
            table = cat.load_table("db." + table_of(store, "4.1"))
            before = sorted(table.scan().to_arrow().column("id").to_pylist())
            assert before[:ROWS] == list(range(ROWS)), f"{store}: {before}"
            files_before = data_files(table)
            start = 1000 * (len(before) // ROWS)  # the other FileIO's run may have appended already
            table.append(pa.table({"id": pa.array(range(start, start + 3), pa.int64()),
                                   "v": pa.array([3 * i for i in range(start, start + 3)], pa.int64())}))
            tables.append(table := cat.load_table("db." + table_of(store, "4.1")))
            after = sorted(table.scan().to_arrow().column("id").to_pylist())
            assert after == sorted(before + list(range(start, start + 3))), f"{store}: {after}"
            added = data_files(table) - files_before
            assert added and all(p.startswith(location(stack, store) + "/") for p in added), f"{store}: {added}"
            assert added <= set(stack.emulator.files(location(stack, store)))
        rows = cat.credentials_status()
        assert {r["table"].rsplit(".", 1)[-1] for r in rows} >= {table_of(s, "4.1") for s in STORES}, rows
        assert not [r for r in rows if r["failures"] or r["rejections"]], rows
    finally:
        cat.close()


def data_files(table) -> set[str]:
    return {task.file.file_path for task in table.scan().plan_files()}


def test_spark_submit_with_only_packages_serves_every_store(stack, tmp_path):
    """The default stack (Spark 4.1, Iceberg 1.12) and both store bundles resolved by Spark's Ivy from the
    laid-out repository; each CTAS's 4 rows take 16 s, past its first tokens' 10 s."""
    repo = tmp_path / "repo"
    made = run_cli("maven-repo", str(repo), "--store", "adls", "--store", "gcs")
    assert made.returncode == 0, made.stderr
    common = ["spark-conf", "--jars", "packages", "--repository", str(repo), "--uri", stack.uri, "--warehouse", "stores",
              "--credential", "stores:not-a-secret", *[f for s in STORES for f in ("--store", s)], "--conf", "spark.ui.enabled=false"]
    for key, value in {"check-interval-ms": 1000, "min-ahead-ms": 0, "lifetime-fraction": 0.25}.items():
        common += ["--conf", f"spark.sql.catalog.lake.catalog-ext.refresh.{key}={value}"]
    flags = run_cli(*common)
    assert flags.returncode == 0, flags.stderr
    jar_flags = [arg for line in flags.stdout.split(" \\\n") if line.startswith(("--packages", "--repositories", "--conf spark.jars."))
                 for arg in shlex.split(line)]
    defaults = run_cli(*common, "--format", "defaults", "--show-secrets")  # the secret goes in a file, not argv
    assert defaults.returncode == 0, defaults.stderr
    props = tmp_path / "catalog.conf"
    props.write_text("".join(line + "\n" for line in defaults.stdout.splitlines() if not line.startswith("spark.jars")))
    tables = {store: f"lake.db.packages_{store}" for store in STORES}
    statements = ["CREATE NAMESPACE IF NOT EXISTS lake.db"] + [
        f"CREATE TABLE {table} USING iceberg LOCATION '{stack.emulator.location(store, f'tables/packages_{store}')}' "
        "AS SELECT id, id * 3 AS v FROM range(0, 4, 1, 1) "
        "WHERE java_method('java.lang.Thread', 'sleep', CAST(4000 AS BIGINT)) IS NOT NULL"
        for store, table in tables.items()]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    proc = subprocess.run([str(SPARK_SUBMIT), "--master", "local[2]", *jar_flags, "--properties-file", str(props),
                           str(ROOT / "tests" / "jobs" / "config_only_job.py"),
                           json.dumps({"ctas": statements, "table": list(tables.values())})],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    counts = [line for line in proc.stdout.splitlines() if line.startswith("COUNT ")]
    assert proc.returncode == 0 and counts == ["COUNT 4"] * 3, proc.stderr[-3000:]
    assert parsed(proc, "IMPORTED") == "False"
    for bundle in ("iceberg-azure-bundle", "iceberg-gcp-bundle"):
        assert f"found org.apache.iceberg#{bundle};" in proc.stderr and "in pyspark-catalog-ext" in proc.stderr
    for store in STORES:
        held = stack.emulator.files(stack.emulator.location(store, f"tables/packages_{store}"))
        assert any("/data/" in path for path in held), f"{store}: {held}"
        renewals = [v for v in stack.front.vended if v["table"] == f"db.packages_{store}"]
        assert len(renewals) >= 2, f"{store}: the create wrote with its first tokens only ({len(renewals)} vended)"
