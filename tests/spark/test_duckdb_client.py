"""DuckDB as a client of the catalog the Spark job writes through the shim (the session lakehouse,
vended credentials): it reads what Spark wrote, Spark and PyIceberg read what it wrote, and both
append to one table at once without losing a row or a snapshot. DuckDB runs from the `[duckdb]`
extra (`duckdb_connect`: its extensions LOADed from their PyPI packages)."""

from __future__ import annotations

import datetime
import threading
import uuid
from decimal import Decimal

import pytest

duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'")

from pyspark_catalog_ext.clients.duckdb import duckdb_connect  # noqa: E402

ROWS = 100_000


@pytest.fixture(scope="module")
def ns(spark):
    name = "duck" + uuid.uuid4().hex[:6]
    spark.sql(f"CREATE NAMESPACE lake.{name}")
    return name


@pytest.fixture(scope="module")
def db(lakehouse):
    conn = duckdb_connect(lakehouse.connection())
    yield conn
    conn.close()


def _expected(n: int) -> tuple[int, int, Decimal, int, int]:
    """count, sum(id), sum(amount), sum(length(name)), distinct days of the rows the CTAS makes."""
    amount = sum(Decimal(i % 1000) / 100 for i in range(n))
    return n, n * (n - 1) // 2, amount, sum(len(f"n{i}") for i in range(n)), min(n, 365)


def test_duckdb_reads_a_spark_ctas_exactly(spark, db, ns):
    spark.sql(f"""CREATE TABLE lake.{ns}.from_spark USING iceberg AS
                  SELECT id, concat('n', id) AS name, CAST((id % 1000) / 100 AS DECIMAL(12, 2)) AS amount,
                         date_add(DATE'2024-01-01', CAST(id % 365 AS INT)) AS day
                  FROM range({ROWS})""")
    got = db.execute(f"SELECT count(*), sum(id), sum(amount), sum(length(name)), count(DISTINCT day) FROM lake.{ns}.from_spark").fetchone()
    assert tuple(got) == _expected(ROWS)
    # the schema as Spark wrote it
    types = {r[0]: r[1] for r in db.execute(f"DESCRIBE lake.{ns}.from_spark").fetchall()}
    assert types == {"id": "BIGINT", "name": "VARCHAR", "amount": "DECIMAL(12,2)", "day": "DATE"}
    first = db.execute(f"SELECT * FROM lake.{ns}.from_spark WHERE id = 12345").fetchone()
    assert tuple(first) == (12345, "n12345", Decimal("3.45"), datetime.date(2024, 1, 1) + datetime.timedelta(days=12345 % 365))


def test_a_duckdb_table_is_read_back_exactly_by_spark_and_pyiceberg(spark, db, pyiceberg_catalog, ns):
    db.execute(f"CREATE TABLE lake.{ns}.from_duck (id BIGINT, name VARCHAR, amount DECIMAL(12, 2))")
    db.execute(f"INSERT INTO lake.{ns}.from_duck SELECT range, 'd' || range, (range % 97) / 4 FROM range(5000)")
    db.execute(f"INSERT INTO lake.{ns}.from_duck VALUES (5000, NULL, NULL)")
    expected = sorted([(i, f"d{i}", Decimal(i % 97) / 4) for i in range(5000)] + [(5000, None, None)])
    expected = [(i, name, amount.quantize(Decimal("0.01")) if amount is not None else None) for i, name, amount in expected]
    by_spark = sorted(tuple(r) for r in spark.table(f"lake.{ns}.from_duck").collect())
    assert by_spark == expected
    table = pyiceberg_catalog.load_table((ns, "from_duck"))
    arrow = table.scan().to_arrow()
    by_pyiceberg = sorted(zip(arrow["id"].to_pylist(), arrow["name"].to_pylist(), arrow["amount"].to_pylist(), strict=True))
    assert by_pyiceberg == expected
    assert len(table.snapshots()) == 2  # one per INSERT


def test_spark_and_duckdb_append_at_once_and_every_row_lands(spark, db, pyiceberg_catalog, ns):
    """Spark and DuckDB each append ROUNDS batches to one table at the same time. Iceberg's
    optimistic commits conflict when both write at once: Spark retries by itself; a DuckDB insert
    refused for a conflict (409 CommitFailedException: nothing committed) is retried here, as a
    DuckDB user would. A last round makes DuckDB lose the race for sure (its transaction open while
    Spark commits). Every batch must land once: exact totals per writer and one snapshot per batch."""
    rounds, batch = 5, 100
    table = f"lake.{ns}.both"
    spark.sql(f"CREATE TABLE {table} (writer STRING, round INT, id BIGINT) USING iceberg")
    errors: list[BaseException] = []
    conflicts: list[str] = []
    start = threading.Barrier(2, timeout=300)  # each round starts both writers together, so their commits race

    def spark_writer() -> None:
        try:
            for r in range(rounds):
                start.wait()
                spark.sql(f"INSERT INTO {table} SELECT 'spark', {r}, id FROM range({batch})")
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
            start.abort()  # the other writer stops waiting at once

    def duck_writer() -> None:
        cursor = db.cursor()
        try:
            for r in range(rounds):
                start.wait()
                for _ in range(20):
                    try:
                        cursor.execute(f"INSERT INTO {table} SELECT 'duckdb', {r}, range FROM range({batch})")
                        break
                    except duckdb.TransactionException as exc:
                        if "CommitFailedException" not in str(exc):  # a 409: nothing was committed, so a retry is safe
                            raise
                        conflicts.append(str(exc)[:300])
                else:
                    raise AssertionError(f"DuckDB's insert of round {r} conflicted 20 times")
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
            start.abort()  # the other writer stops waiting at once
        finally:
            cursor.close()

    threads = [threading.Thread(target=spark_writer, daemon=True), threading.Thread(target=duck_writer, daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    # One more round where DuckDB surely loses the race: Spark commits while DuckDB's transaction is
    # open, so DuckDB's commit is refused (409, nothing committed) and its retry lands.
    cursor = db.cursor()
    cursor.execute("BEGIN")
    cursor.execute(f"INSERT INTO {table} SELECT 'duckdb', {rounds}, range FROM range({batch})")
    spark.sql(f"INSERT INTO {table} SELECT 'spark', {rounds}, id FROM range({batch})")
    with pytest.raises(duckdb.TransactionException, match="CommitFailedException"):
        cursor.execute("COMMIT")
    cursor.execute(f"INSERT INTO {table} SELECT 'duckdb', {rounds}, range FROM range({batch})")
    cursor.close()
    spark.sql(f"REFRESH TABLE {table}")
    counts = {(r[0], r[1]): r[2] for r in spark.sql(f"SELECT writer, round, count(*) FROM {table} GROUP BY 1, 2").collect()}
    assert counts == {(w, r): batch for w in ("spark", "duckdb") for r in range(rounds + 1)}, counts
    by_duck = dict(db.execute(f"SELECT writer, count(*) FROM {table} GROUP BY 1").fetchall())
    assert by_duck == {"spark": (rounds + 1) * batch, "duckdb": (rounds + 1) * batch}
    snapshots = pyiceberg_catalog.load_table((ns, "both")).snapshots()
    assert len(snapshots) == 2 * (rounds + 1), [s.summary for s in snapshots]  # no snapshot lost, none doubled
    print(f"DuckDB inserts retried after a conflict: {len(conflicts)}")
