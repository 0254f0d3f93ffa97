"""Client probes: another engine on the catalog being checked, beside the Spark job. `duckdb`
reads the table the Spark probe's CTAS wrote through the shim (the same rows and schema as Spark
reads), then writes a table of its own (create and insert) that Spark and PyIceberg read back
exactly, then appends to it while Spark appends (their commits race; DuckDB retries on Iceberg's
conflict) and checks that every row landed once, one snapshot per append. `trino` starts a Trino
476 server for the run (clients/trino_server.py), reads the Spark probe's table and writes its own
that Spark and PyIceberg read back exactly. Each is skipped in one line when its engine is not
installed, and `unsupported`, with the engine's reason, where it cannot work on this catalog.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyspark_catalog_ext.catalog.storage_keys import S3_SESSION_TOKEN
from pyspark_catalog_ext.doctor.context import ProbeContext, one_line
from pyspark_catalog_ext.doctor.engines import PRUNED, SPARK_CATALOG, history_pruned, spark_error, statements
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed, skipped, unsupported

__all__ = ["DUCKDB_CATALOG"]

#: DuckDB catalog name the probe attaches (tables are `doctor_duckdb.<namespace>.<table>`).
DUCKDB_CATALOG = "doctor_duckdb"
_DUCKDB_ROWS = 200
_APPEND_ROWS = 50
_DUCK_FROM, _SPARK_FROM = 10_000, 20_000  # the appends' ids: apart from the insert's and from each other


def _connection(ctx: ProbeContext) -> Any:
    from pyspark_catalog_ext.catalog.local_lakehouse import running_info
    from pyspark_catalog_ext.catalog.resolve import catalog_connection

    args = dict(ctx.connection)
    lakehouse = args.pop("lakehouse", None) or running_info()
    return catalog_connection(ctx.profile, lakehouse=lakehouse, **args)


def _refusal(no_signing: str, auth: str) -> Callable[[ProbeContext], Outcome | None]:
    """Why an engine cannot work on this catalog, known from the connection before any Spark table
    exists: it has no S3 remote signing (`no_signing`), or is set up here (`auth`) for OAuth2 and
    bearer tokens only."""
    def refusal(ctx: ProbeContext) -> Outcome | None:
        conn = _connection(ctx)
        if conn.remote_signing:
            return unsupported(no_signing)
        if conn.auth not in ("oauth2", "token"):
            return unsupported(f"{auth} OAuth2 or a bearer token, not {conn.auth} auth")
        return None
    return refusal


_duckdb_refusal = _refusal("DuckDB's iceberg extension has no S3 remote signing: it reads storage only with vended credentials",
                           "DuckDB's iceberg extension is set up here with")


@probe("duckdb", "DuckDB reads Spark's CTAS; Spark and PyIceberg read DuckDB's table; appends beside Spark", "clients",
       needs=("spark-ctas",), refusal=_duckdb_refusal)
def probe_duckdb(ctx: ProbeContext) -> Outcome:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return skipped("DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'")
    from pyspark_catalog_ext.clients.duckdb import duckdb_connect
    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    conn = _connection(ctx)
    ns, t0 = ctx.namespace, time.perf_counter()
    spark_table = f"{SPARK_CATALOG}.`{ns}`.spark"
    step = "attach"
    try:
        db = duckdb_connect(conn, DUCKDB_CATALOG, read_only=False)  # the probe writes
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
        catalog = pyiceberg_catalog(dict(ctx.props))
        scanned = catalog.load_table((ns, "duckdb")).scan().to_arrow()
        by_pyiceberg = sorted(zip(scanned["id"].to_pylist(), scanned["note"].to_pylist(), strict=True))
        evidence.update(rows_written=_DUCKDB_ROWS, spark_read=len(by_spark), pyiceberg_read=len(by_pyiceberg))
        if by_spark != expected or by_pyiceberg != expected:
            return failed(f"DuckDB wrote {_DUCKDB_ROWS} rows; Spark read {len(by_spark)}, PyIceberg {len(by_pyiceberg)} (or other values)", **evidence)
        step = "append beside Spark"
        appends = _append_beside_spark(ctx, db, duckdb)
        evidence["appends"] = appends
        with statements(ctx):
            ctx.spark.sql(f"REFRESH TABLE {SPARK_CATALOG}.`{ns}`.duckdb")
            total = ctx.spark.sql(f"SELECT count(*), sum(id) FROM {SPARK_CATALOG}.`{ns}`.duckdb").collect()[0]
        metadata = catalog.load_table((ns, "duckdb")).metadata
        snapshots = len(metadata.snapshots)
        pruned = history_pruned(snapshots, metadata.last_sequence_number, 3)
    except Exception as exc:
        message = spark_error(ctx, exc) if "Spark" in step else f"{type(exc).__name__}: {one_line(ctx.secrets.scrub(str(exc)), 220)}"
        return failed(f"{step}: {message}")
    finally:
        db.close()
    # the insert, Spark's append and DuckDB's (retried) append: one snapshot each, every row once
    want_total = (_DUCKDB_ROWS + 2 * _APPEND_ROWS, sum(range(_DUCKDB_ROWS)) + sum(range(_SPARK_FROM, _SPARK_FROM + _APPEND_ROWS))
                  + sum(range(_DUCK_FROM, _DUCK_FROM + _APPEND_ROWS)))
    evidence.update(after_appends={"rows": total[0], "sum_id": total[1], "snapshots": snapshots}, elapsed_s=round(time.perf_counter() - t0, 1))
    if (total[0], total[1]) != want_total or (snapshots != 3 and not pruned):
        return failed(f"after Spark's and DuckDB's appends: {total[0]} rows (sum {total[1]}), {snapshots} snapshots; expected "
                      f"{want_total[0]} (sum {want_total[1]}) and 3", **evidence)
    conflict = " (DuckDB's commit was refused for Spark's and its retry landed)" if appends["duckdb_conflicted"] else ""
    history = f"; {PRUNED}" if pruned else ""
    return passed(f"read Spark's {want[0]} rows exactly; wrote {_DUCKDB_ROWS} rows that Spark and PyIceberg read back exactly; "
                  f"appended beside Spark{conflict}, every row landed{history}", **evidence)


def _append_beside_spark(ctx: ProbeContext, db: Any, duckdb: Any) -> dict[str, Any]:
    """Spark appends to DuckDB's table while a DuckDB append is open in a transaction, so their
    commits race for sure: DuckDB's is refused (Iceberg's 409 CommitFailedException: nothing was
    committed) and retried once, as a DuckDB user would."""
    table = f'{DUCKDB_CATALOG}."{ctx.namespace}".duckdb'
    insert = f"INSERT INTO {table} SELECT range, 'duckdb' FROM range({_DUCK_FROM}, {_DUCK_FROM + _APPEND_ROWS})"
    cursor = db.cursor()
    try:
        cursor.execute("BEGIN")
        cursor.execute(insert)
        with statements(ctx):
            ctx.spark.sql(f"INSERT INTO {SPARK_CATALOG}.`{ctx.namespace}`.duckdb "
                          f"SELECT id, 'spark' FROM range({_SPARK_FROM}, {_SPARK_FROM + _APPEND_ROWS})")
        try:
            cursor.execute("COMMIT")
            conflicted = False
        except duckdb.TransactionException as exc:
            # only a refused commit is known not to have landed: Iceberg's CommitFailedException, or the
            # REST spec's 409 for it as DuckDB words it on a multi-table commit (Nessie)
            if "CommitFailedException" not in str(exc) and "Conflict_409" not in str(exc):
                raise
            conflicted = True
            cursor.execute(insert)
    finally:
        cursor.close()
    return {"rows_each": _APPEND_ROWS, "duckdb_conflicted": conflicted}


_TRINO_ROWS = 200
TRINO_INSTALL = ("pip install 'pyspark-catalog-ext[trino]' and a JDK 24+ (e.g. Temurin 25); "
                 "the Trino server (~820 MB) is downloaded once into the user cache")


_trino_refusal = _refusal("Trino's Iceberg connector has no S3 remote signing: it reads storage only with vended credentials "
                          "or its own keys", "Trino's catalog file is generated here for")


@probe("trino", "Trino reads Spark's CTAS; Spark and PyIceberg read Trino's table", "clients",
       needs=("spark-ctas",), refusal=_trino_refusal)
def probe_trino(ctx: ProbeContext) -> Outcome:
    """A Trino 476 server started for this run (clients/trino_server.py) with `--format trino`'s
    catalog: it reads the Spark probe's table, then creates and fills a table of its own that Spark
    and PyIceberg read back exactly."""
    try:
        import trino  # noqa: F401
    except ImportError:
        return skipped(f"Trino's Python client is not installed: {TRINO_INSTALL}")
    from pyspark_catalog_ext.clients.trino_install import TrinoUnavailable, find_trino_java
    from pyspark_catalog_ext.clients.trino_server import TrinoServer, run_query
    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    conn = _connection(ctx)
    try:
        find_trino_java()
    except TrinoUnavailable as exc:
        return skipped(str(exc))
    vended = ctx.credentials(ctx.load_table("spark"))
    if vended and not any(cred.config.get(S3_SESSION_TOKEN) for cred in vended):
        # Trino builds its S3 credentials from a table's vended keys only when a session token is among them
        return unsupported("Trino takes vended S3 keys only with a session token (s3.session-token), and this catalog vends "
                           "keys without one; give Trino keys of its own (s3.aws-access-key, s3.aws-secret-key) instead",
                           vended=[cred.public() for cred in vended])
    if conn.s3_endpoint is None:
        # Trino's native S3 takes the vended keys but not the vended endpoint: on the user's own
        # lakehouse its store is named here (on another catalog the user gives --s3-endpoint)
        from dataclasses import replace

        from pyspark_catalog_ext.catalog.local_lakehouse import running_info

        lake = ctx.connection.get("lakehouse") or running_info()
        info = getattr(lake, "info", lake)
        if info is not None and conn.uri == info.iceberg_uri:
            conn = replace(conn, s3_endpoint=info.s3_endpoint)
    ns, t0 = ctx.namespace, time.perf_counter()
    server = TrinoServer(conn, "doctor_trino")
    step = "start Trino"
    try:
        server.start()
        evidence: dict[str, Any] = {"startup_s": round(server.startup_seconds or 0, 1)}
        cursor = server.connect().cursor()

        def query(sql: str) -> list[list[Any]]:
            return run_query(cursor, sql)

        step = "read Spark's table"
        with statements(ctx):
            want = list(ctx.spark.sql(f"SELECT count(*), sum(id), sum(length(note)) FROM {SPARK_CATALOG}.`{ns}`.spark").collect()[0])
        got = query(f'SELECT count(*), sum(id), sum(length(note)) FROM "{ns}".spark')[0]
        types = [(r[0], r[1]) for r in query(f'DESCRIBE "{ns}".spark')]
        evidence.update(spark_table={"spark": want, "trino": got}, schema=types)
        if got != want:
            return failed(f"Trino read (rows, sum id, sum length) {tuple(got)} of Spark's table, Spark reads {tuple(want)}", **evidence)
        if types != [("id", "bigint"), ("note", "varchar")]:
            return failed(f"Trino sees Spark's table as {types}, Spark wrote (id bigint, note string)", **evidence)
        step = "write a table"
        query(f'CREATE TABLE "{ns}".trino (id BIGINT, note VARCHAR)')
        query(f"""INSERT INTO "{ns}".trino SELECT n, 't' || CAST(n AS VARCHAR) FROM UNNEST(sequence(0, {_TRINO_ROWS - 1})) AS r(n)""")
        expected = [(i, f"t{i}") for i in range(_TRINO_ROWS)]
        step = "read Trino's table in Spark"
        with statements(ctx):
            by_spark = sorted(tuple(r) for r in ctx.spark.table(f"{SPARK_CATALOG}.`{ns}`.trino").collect())
        step = "read Trino's table in PyIceberg"
        scanned = pyiceberg_catalog(dict(ctx.props)).load_table((ns, "trino")).scan().to_arrow()
        by_pyiceberg = sorted(zip(scanned["id"].to_pylist(), scanned["note"].to_pylist(), strict=True))
    except TrinoUnavailable as exc:
        return skipped(f"{exc} ({TRINO_INSTALL})")
    except Exception as exc:
        message = spark_error(ctx, exc) if "Spark" in step else f"{type(exc).__name__}: {one_line(ctx.secrets.scrub(str(exc)), 220)}"
        return failed(f"{step}: {message}")
    finally:
        server.stop()
    evidence.update(rows_written=_TRINO_ROWS, spark_read=len(by_spark), pyiceberg_read=len(by_pyiceberg),
                    elapsed_s=round(time.perf_counter() - t0, 1))
    if by_spark != expected or by_pyiceberg != expected:
        return failed(f"Trino wrote {_TRINO_ROWS} rows; Spark read {len(by_spark)}, PyIceberg {len(by_pyiceberg)} (or other values)", **evidence)
    return passed(f"read Spark's {want[0]} rows exactly; wrote {_TRINO_ROWS} rows that Spark and PyIceberg read back exactly "
                  f"(Trino {server.startup_seconds or 0:.0f} s to start)", **evidence)
