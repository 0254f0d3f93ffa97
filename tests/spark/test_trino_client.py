"""Trino as a client of the catalog the Spark job writes through the shim (the session lakehouse,
vended credentials): a real Trino 476 server (clients/trino_server.py) with `--format trino`'s
catalog file reads what Spark wrote (a CTAS of 1M rows, which DuckDB reads too), and Spark and
PyIceberg read what it wrote.

Slow to set up (Trino's ~820 MB download on first use, then about 15-40 s to start): this file
stands alone so it can run in its own CI lane. Skipped in one line when Trino's Python client,
a Java 24+ or the download is not available.
"""

from __future__ import annotations

import datetime
import json
import time
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

pytest.importorskip("trino", reason="Trino's Python client is not installed: pip install 'pyspark-catalog-ext[trino]'")

from pyspark_catalog_ext.clients.trino_install import TrinoUnavailable, find_trino_java, trino_home  # noqa: E402
from pyspark_catalog_ext.clients.trino_server import TrinoServer, run_query  # noqa: E402

ROWS = 1_000_000  # Spark 41 s + Trino 35 s against 31 s + 21 s for 100k, on a busy 2-core machine (load 13-15)


@pytest.fixture(scope="module")
def trino_installed() -> None:
    """Trino's server (downloaded on first use) and a Java 24+, or the module is skipped in one line."""
    began = time.monotonic()
    try:
        trino_home()
        find_trino_java()
    except TrinoUnavailable as exc:
        pytest.skip(f"Trino cannot run here: {exc}")
    print(f"Trino's server ready in the cache in {time.monotonic() - began:.1f}s")


@pytest.fixture(scope="module")
def trino_server(lakehouse, trino_installed):
    """One Trino per module on the session lakehouse; its S3 endpoint is given, as a user gives it."""
    server = TrinoServer(lakehouse.connection(s3_endpoint=lakehouse.info.s3_endpoint))
    server.start()
    print(f"Trino started in {server.startup_seconds:.1f}s")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cursor(trino_server):
    conn = trino_server.connect()
    yield conn.cursor()
    conn.close()


@pytest.fixture(scope="module")
def ns(spark):
    name = "trino" + uuid.uuid4().hex[:6]
    spark.sql(f"CREATE NAMESPACE lake.{name}")
    return name


def _expected(n: int) -> list:
    """count, sum(id), sum(amount), sum(length(name)), distinct days of the rows the CTAS makes,
    computed here from the rows' definition."""
    amount_cents = sum(i % 1000 for i in range(n))
    name_chars = sum(len(str(i)) + 1 for i in range(n))
    return [n, n * (n - 1) // 2, Decimal(amount_cents) / 100, name_chars, min(n, 365)]


def test_trino_and_duckdb_read_a_spark_ctas_exactly(spark, cursor, lakehouse, ns):
    began = time.monotonic()
    spark.sql(f"""CREATE TABLE lake.{ns}.from_spark USING iceberg AS
                  SELECT id, concat('n', id) AS name, CAST((id % 1000) / 100 AS DECIMAL(12, 2)) AS amount,
                         date_add(DATE'2024-01-01', CAST(id % 365 AS INT)) AS day
                  FROM range({ROWS})""")
    print(f"Spark CTAS of {ROWS} rows: {time.monotonic() - began:.1f}s")
    began = time.monotonic()
    got = run_query(cursor, f"SELECT count(*), sum(id), sum(amount), sum(length(name)), count(DISTINCT day) FROM {ns}.from_spark")
    print(f"Trino's checksum query: {time.monotonic() - began:.1f}s")
    assert got == [_expected(ROWS)]
    # the schema as Spark wrote it
    columns = {r[0]: r[1] for r in run_query(cursor, f"DESCRIBE {ns}.from_spark")}
    assert columns == {"id": "bigint", "name": "varchar", "amount": "decimal(12,2)", "day": "date"}
    row = run_query(cursor, f"SELECT * FROM {ns}.from_spark WHERE id = 12345")
    assert row == [[12345, "n12345", Decimal("3.45"), datetime.date(2024, 1, 1) + datetime.timedelta(days=12345 % 365)]]
    # DuckDB reads the same table (tests/spark/test_duckdb_client.py holds the rest of DuckDB's checks)
    pytest.importorskip("duckdb", reason="DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'")
    from pyspark_catalog_ext.clients.duckdb import duckdb_connect

    began = time.monotonic()
    with duckdb_connect(lakehouse.connection()) as db:
        got = db.execute(f"SELECT count(*), sum(id), sum(amount), sum(length(name)), count(DISTINCT day) FROM lake.{ns}.from_spark").fetchone()
    print(f"DuckDB's checksum query: {time.monotonic() - began:.1f}s")
    assert list(got) == _expected(ROWS)


def test_a_trino_table_is_read_back_exactly_by_spark_and_pyiceberg(spark, cursor, pyiceberg_catalog, ns):
    run_query(cursor, f"CREATE TABLE {ns}.from_trino (id BIGINT, name VARCHAR, amount DECIMAL(12, 2))")
    run_query(cursor, f"""INSERT INTO {ns}.from_trino
                       SELECT n, 't' || CAST(n AS VARCHAR), CAST(n % 97 AS DECIMAL(12, 2)) / 4
                       FROM UNNEST(sequence(0, 4999)) AS r(n)""")
    run_query(cursor, f"INSERT INTO {ns}.from_trino VALUES (5000, NULL, NULL)")
    expected = [(i, f"t{i}", (Decimal(i % 97) / 4).quantize(Decimal("0.01"))) for i in range(5000)] + [(5000, None, None)]
    by_spark = sorted(tuple(r) for r in spark.table(f"lake.{ns}.from_trino").collect())
    assert by_spark == expected
    table = pyiceberg_catalog.load_table((ns, "from_trino"))
    arrow = table.scan().to_arrow()
    by_pyiceberg = sorted(zip(arrow["id"].to_pylist(), arrow["name"].to_pylist(), arrow["amount"].to_pylist(), strict=True))
    assert by_pyiceberg == expected
    # Trino's CREATE TABLE commits an empty snapshot; then one per INSERT, none lost or doubled
    added = [int((s.summary.get("added-records") if s.summary else None) or 0) for s in table.snapshots()]
    assert added == [0, 5000, 1]


def test_the_doctors_trino_probe_passes_on_the_lakehouse(lakehouse, trino_installed):
    """`doctor --profile seaweedfs` on the session lakehouse with only the probes `trino` needs: it
    starts its own Trino, reads the Spark probe's CTAS and writes a table Spark and PyIceberg read."""
    from pyspark_catalog_ext.doctor.suite import probe_ids
    from tests.conftest import run_cli

    keep = {"config", "auth", "namespaces", "spark-ctas", "trino"}
    info = lakehouse.info
    proc = run_cli("doctor", "--json", "--profile", "seaweedfs", "--uri", info.iceberg_uri, "--warehouse", info.warehouse,
                   "--credential", info.credential, "--s3-endpoint", info.s3_endpoint,
                   "--skip", ",".join(p for p in probe_ids() if p not in keep), timeout=600)
    report = json.loads(proc.stdout)
    trino = next(p for p in report["probes"] if p["id"] == "trino")
    assert trino["status"] == "pass", json.dumps({k: trino.get(k) for k in ("status", "summary", "evidence")})[:4000]
    evidence = trino["evidence"]
    assert evidence["spark_table"]["trino"] == evidence["spark_table"]["spark"] and evidence["spark_table"]["spark"][0] > 0
    assert evidence["spark_read"] == evidence["pyiceberg_read"] == evidence["rows_written"] == 200
    print(f"doctor's trino probe: {evidence['elapsed_s']} s (Trino {evidence['startup_s']} s to start)")


def test_the_catalog_secret_is_in_no_file_and_no_process_argument(trino_server, lakehouse):
    """Trino has the catalog's OAuth2 secret from its environment only: the catalog file says
    `${ENV:...}` and no process of the server's group has the secret in its arguments."""
    from tests.conftest import SECRET

    text = trino_server.catalog_file.read_text()
    assert "iceberg.rest-catalog.oauth2.credential=${ENV:" in text and SECRET not in text
    assert oct(trino_server.catalog_file.stat().st_mode & 0o777) == "0o600"
    group = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _group_of(p) == trino_server.pid]
    assert group, "the server's process group is empty"
    for proc in group:
        assert SECRET.encode() not in (proc / "cmdline").read_bytes()


def _group_of(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[2])  # field 5: the process group
    except (OSError, IndexError, ValueError):
        return None
