"""Client probes: another engine on the catalog being checked, beside the Spark job. `duckdb`
reads the table the Spark probe's CTAS wrote through the shim (the same rows and schema as Spark
reads), then writes a table of its own (create and insert) that Spark and PyIceberg read back
exactly. It is skipped in one line when DuckDB is not installed, and `unsupported`, with DuckDB's
reason, where DuckDB cannot work on this catalog.
"""

from __future__ import annotations

import time
from typing import Any

from pyspark_catalog_ext.doctor.context import ProbeContext, one_line
from pyspark_catalog_ext.doctor.engines import SPARK_CATALOG, spark_error, statements
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed, skipped, unsupported

__all__ = ["DUCKDB_CATALOG"]

#: DuckDB catalog name the probe attaches (tables are `doctor_duckdb.<namespace>.<table>`).
DUCKDB_CATALOG = "doctor_duckdb"
_DUCKDB_ROWS = 200


def _connection(ctx: ProbeContext) -> Any:
    from pyspark_catalog_ext.catalog.resolve import catalog_connection
    from pyspark_catalog_ext.lakehouse.server import running_info

    args = dict(ctx.connection)
    lakehouse = args.pop("lakehouse", None) or running_info()
    return catalog_connection(ctx.profile, lakehouse=lakehouse, **args)


@probe("duckdb", "DuckDB reads Spark's CTAS; Spark and PyIceberg read DuckDB's table", "clients", needs=("spark-ctas",))
def probe_duckdb(ctx: ProbeContext) -> Outcome:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return skipped("DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'")
    from pyspark_catalog_ext.clients.duckdb import duckdb_connect
    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    conn = _connection(ctx)
    if conn.remote_signing:
        return unsupported("DuckDB's iceberg extension has no S3 remote signing: it reads storage only with vended credentials")
    if conn.auth not in ("oauth2", "token"):
        return unsupported(f"DuckDB's iceberg extension is set up here with OAuth2 or a bearer token, not {conn.auth} auth")
    ns, t0 = ctx.namespace, time.perf_counter()
    spark_table = f"{SPARK_CATALOG}.`{ns}`.spark"
    step = "attach"
    try:
        db = duckdb_connect(conn, DUCKDB_CATALOG)
    except Exception as exc:  # DuckDB's own reason (an auth or endpoint error): report it, don't crash the run
        return failed(f"DuckDB could not attach the catalog: {type(exc).__name__}: {one_line(ctx.secrets.scrub(str(exc)), 220)}")
    try:
        step = "read Spark's table"
        with statements(ctx):
            want = ctx.spark.sql(f"SELECT count(*), sum(id), sum(length(note)) FROM {spark_table}").collect()[0]
        got = db.execute(f'SELECT count(*), sum(id), sum(length(note)) FROM {DUCKDB_CATALOG}."{ns}".spark').fetchone()
        types = [(r[0], r[1]) for r in db.execute(f'DESCRIBE {DUCKDB_CATALOG}."{ns}".spark').fetchall()]
        evidence: dict[str, Any] = {"spark_table": {"spark": list(want), "duckdb": list(got or ())}, "schema": types}
        if tuple(got or ()) != tuple(want):
            return failed(f"DuckDB read (rows, sum id, sum length) {tuple(got or ())} of Spark's table, Spark reads {tuple(want)}", **evidence)
        if types != [("id", "BIGINT"), ("note", "VARCHAR")]:
            return failed(f"DuckDB sees Spark's table as {types}, Spark wrote (id bigint, note string)", **evidence)
        step = "write a table"
        db.execute(f'CREATE TABLE {DUCKDB_CATALOG}."{ns}".duckdb (id BIGINT, note VARCHAR)')
        db.execute(f"INSERT INTO {DUCKDB_CATALOG}.\"{ns}\".duckdb SELECT range, 'd' || range FROM range({_DUCKDB_ROWS})")
        expected = [(i, f"d{i}") for i in range(_DUCKDB_ROWS)]
        step = "read DuckDB's table in Spark"
        with statements(ctx):
            by_spark = sorted(tuple(r) for r in ctx.spark.table(f"{SPARK_CATALOG}.`{ns}`.duckdb").collect())
        step = "read DuckDB's table in PyIceberg"
        scanned = pyiceberg_catalog(dict(ctx.props)).load_table((ns, "duckdb")).scan().to_arrow()
        by_pyiceberg = sorted(zip(scanned["id"].to_pylist(), scanned["note"].to_pylist(), strict=True))
    except Exception as exc:
        message = spark_error(ctx, exc) if "Spark" in step else f"{type(exc).__name__}: {one_line(ctx.secrets.scrub(str(exc)), 220)}"
        return failed(f"{step}: {message}")
    finally:
        db.close()
    evidence.update(rows_written=_DUCKDB_ROWS, spark_read=len(by_spark), pyiceberg_read=len(by_pyiceberg),
                    elapsed_s=round(time.perf_counter() - t0, 1))
    if by_spark != expected or by_pyiceberg != expected:
        return failed(f"DuckDB wrote {_DUCKDB_ROWS} rows; Spark read {len(by_spark)}, PyIceberg {len(by_pyiceberg)} (or other values)", **evidence)
    return passed(f"read Spark's {want[0]} rows exactly; wrote {_DUCKDB_ROWS} rows that Spark and PyIceberg read back exactly", **evidence)
