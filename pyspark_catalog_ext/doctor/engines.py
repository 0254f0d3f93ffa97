"""Engine probes: PyIceberg append + scan, and Spark CTAS, read and append through the same
catalog settings `configure()` gives a user's job (the refresh shim included unless --no-shim).

pyspark and pyiceberg are imported inside the probes only: `doctor --print-profiles` and
`--print-matrix` must not pay for (or need) them. Spark runs as `local[2]` bound to 127.0.0.1;
the JVM's own log goes to `spark.log` in the run's work directory, not the terminal.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

from pyspark_catalog_ext.doctor.context import ProbeContext, one_line
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed, skipped, unsupported
from pyspark_catalog_ext.errors import CatalogUnsupportedError

__all__ = ["SPARK_CATALOG", "catalog_refusal", "start_spark", "spark_error", "statements"]

#: Spark catalog name the doctor registers (tables are `doctor.<namespace>.<table>`).
SPARK_CATALOG = "doctor"
_SPARK_ROWS = 1000
_SPARK_APPEND_ROWS = 500


@probe("pyiceberg", "PyIceberg append and scan", "pyiceberg", needs=("namespaces",))
def probe_pyiceberg(ctx: ProbeContext) -> Outcome:
    try:
        import pyarrow as pa
        from pyiceberg.catalog.rest import RestCatalog  # noqa: F401
    except ImportError as exc:
        return skipped(f"{exc.name} is not installed (pip install 'pyiceberg[pyarrow]')")
    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    t0 = time.perf_counter()
    try:
        catalog = pyiceberg_catalog(dict(ctx.props))
        data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "note": pa.array(["a", "b", "c"], pa.string())})
        table = catalog.create_table((ctx.namespace, "pyiceberg"), schema=data.schema)
        table.append(data)
        scanned = table.scan().to_arrow()
    except Exception as exc:  # PyIceberg/pyarrow/botocore errors: report, don't crash the run
        return failed(f"{type(exc).__name__}: {one_line(ctx.secrets.scrub(str(exc)), 220)}",
                      elapsed_ms=round((time.perf_counter() - t0) * 1000, 1))
    rows = scanned.num_rows
    evidence = {"rows_appended": data.num_rows, "rows_scanned": rows,
                "snapshots": len(table.metadata.snapshots), "location": table.metadata.location}
    if rows != data.num_rows or sorted(scanned.column("id").to_pylist()) != [1, 2, 3]:
        return failed(f"scan returned {rows} rows, expected {data.num_rows}", **evidence)
    return passed(f"appended and scanned {rows} rows", **evidence)


def start_spark(ctx: ProbeContext) -> Any:
    """The run's SparkSession (started once; stopped at cleanup)."""
    if ctx.spark is not None:
        return ctx.spark
    from pyspark.sql import SparkSession

    from pyspark_catalog_ext.spark.jvm_deps.shim_build import check_java
    from pyspark_catalog_ext.spark.session import configure

    check_java()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    extra = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
             "spark.sql.shuffle.partitions": "2", "spark.driver.extraJavaOptions": "-Dlog4j2.level=error"}
    builder = SparkSession.builder.master("local[2]").appName("pyspark-catalog-ext-doctor")
    # Exactly what a user's job gets from configure() (the catalog was checked by the preflight).
    builder = configure(builder, ctx.profile, SPARK_CATALOG, check=False, shim=ctx.shim, jars="offline",
                        local=True, extra_conf=extra, **ctx.connection)
    t0 = time.perf_counter()
    log_path = os.path.join(ctx.work_dir or ".", "spark.log")
    ctx.shared["spark_log"] = log_path
    ctx.cleanup.add("stop Spark", lambda: _stop_spark(ctx))  # registered first: Ctrl-C may hit the start
    # The JVM inherits fds 1 and 2 when it starts: point them at a log file for that moment only,
    # so its output neither clutters the table nor corrupts `--json` on stdout.
    sys.stdout.flush()
    sys.stderr.flush()
    # Ctrl-C is held back while the JVM starts: PySpark installs its own SIGINT handler midway
    # (it turns the interrupt into a Py4JError), so a signal is delivered after ours is back.
    hold = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if hold else None
    try:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        saved = {fd: os.dup(fd) for fd in (1, 2)}
        for fd in saved:
            os.dup2(log_fd, fd)
        try:
            spark = builder.getOrCreate()
        finally:
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            os.close(log_fd)
        ctx.spark = spark
        ctx.interrupts.install()  # replaces PySpark's handler (a re-entrant py4j call) with ours
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a held Ctrl-C lands here
    spark.sparkContext.setLogLevel("ERROR")
    ctx.shared["spark_start_s"] = round(time.perf_counter() - t0, 1)
    return spark


def _remove_uncommitted(ctx: ProbeContext, name: str) -> str:
    """Data files of a CTAS interrupted before its commit: stage the same name at its default
    location (fresh credentials for it), delete what is there, commit, let the sweep drop it."""
    client, ns = ctx.client, ctx.namespace
    if client.has_table((ns, name)):
        return "committed: the namespace sweep drops it"
    ns_location = client.namespace_properties(ns).get("location")
    if not ns_location:
        return "the namespace has no location; nothing to look for"
    staged = client.create_table_json(ns, ctx.table_body(name, f"{ns_location.rstrip('/')}/{name}"), stage_create=True)
    ctx.secrets.add_load_result(staged)
    return ctx.finish_staged(name, staged)


def _stop_spark(ctx: ProbeContext) -> str:
    """Stop the session; if its start was interrupted, end the half-started JVM (our child)."""
    if ctx.spark is not None:
        ctx.spark.stop()
        return "stopped"
    killed = _kill_spark_children()
    return f"start interrupted; ended {killed} Spark JVM(s)" if killed else "never started"


def _kill_spark_children(timeout: float = 10.0) -> int:
    """SIGTERM (then SIGKILL) child processes of this one that run spark-submit. Linux only."""
    me = os.getpid()
    pids = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read().decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and ("org.apache.spark" in cmdline or "spark-submit" in cmdline or "spark-class" in cmdline):
            pids.append(int(entry))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    break
            except ChildProcessError:
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (OSError, ChildProcessError):
                pass
    return len(pids)


def statements(ctx: ProbeContext) -> Any:
    """Run Spark statements so that Ctrl-C cancels the jobs (from another thread, on its own py4j
    connection) and the run stops right after the statement returns."""
    spark = ctx.spark
    return ctx.interrupts.deferred(lambda: spark.sparkContext.cancelAllJobs())


def spark_error(ctx: ProbeContext, exc: Exception) -> str:
    text = str(getattr(exc, "desc", None) or exc)
    first = next((line for line in text.splitlines() if line.strip()), type(exc).__name__)
    return one_line(ctx.secrets.scrub(f"{type(exc).__name__}: {first}"), 240)


def catalog_refusal(ctx: ProbeContext, exc: CatalogUnsupportedError, **evidence: Any) -> Outcome:
    """A statement the catalog refused as unsupported: `unsupported`, with the package's one line
    (its hint to run the doctor dropped: this is the doctor)."""
    reason = str(exc).split("; run `pyspark-catalog-ext doctor`", 1)[0]
    return unsupported(ctx.secrets.scrub(reason), error=spark_error(ctx, exc), **evidence)


def _table(ctx: ProbeContext) -> str:
    return f"{SPARK_CATALOG}.`{ctx.namespace}`.spark"


@probe("spark-ctas", "Spark CREATE TABLE AS SELECT", "spark", needs=("namespaces",))
def probe_spark_ctas(ctx: ProbeContext) -> Outcome:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return skipped("pyspark is not installed")
    # Registered before Spark starts, so it runs after Spark stops (cleanup is last-in, first-out).
    ctx.cleanup.add("remove data of an uncommitted Spark CTAS", lambda: _remove_uncommitted(ctx, "spark"))
    try:
        spark = start_spark(ctx)
    except Exception as exc:
        return failed(f"Spark did not start: {spark_error(ctx, exc)}", spark_log=ctx.shared.get("spark_log"))
    from pyspark_catalog_ext.spark import java_errors

    java_errors.install()  # also under --no-shim: a catalog's refusal becomes CatalogUnsupportedError
    t0 = time.perf_counter()
    try:
        with statements(ctx):
            spark.sql(f"CREATE TABLE {_table(ctx)} USING iceberg AS "
                      f"SELECT id, CAST(id AS STRING) AS note FROM range(0, {_SPARK_ROWS}, 1, 2)")
    except CatalogUnsupportedError as exc:  # no stage-create: a CTAS cannot be atomic here, and is refused up front
        return catalog_refusal(ctx, exc, spark_start_s=ctx.shared.get("spark_start_s"))
    except Exception as exc:
        return failed(spark_error(ctx, exc), spark_start_s=ctx.shared.get("spark_start_s"),
                      spark_log=ctx.shared.get("spark_log"))
    elapsed = round(time.perf_counter() - t0, 1)
    ctx.shared["spark_ctas"] = True
    return passed(f"{_SPARK_ROWS} rows in {elapsed} s (Spark started in {ctx.shared['spark_start_s']} s)",
                  rows=_SPARK_ROWS, ctas_s=elapsed, spark_start_s=ctx.shared["spark_start_s"], shim=ctx.shim)


@probe("spark-read", "Spark read", "spark", needs=("spark-ctas",))
def probe_spark_read(ctx: ProbeContext) -> Outcome:
    try:
        with statements(ctx):
            row = ctx.spark.sql(f"SELECT count(*) AS n, sum(id) AS s FROM {_table(ctx)}").collect()[0]
    except Exception as exc:
        return failed(spark_error(ctx, exc))
    expected = (_SPARK_ROWS, _SPARK_ROWS * (_SPARK_ROWS - 1) // 2)
    evidence = {"rows": row["n"], "sum_id": row["s"]}
    if (row["n"], row["s"]) != expected:
        return failed(f"read {row['n']} rows (sum {row['s']}), expected {expected[0]} (sum {expected[1]})", **evidence)
    return passed(f"read {row['n']} rows back", **evidence)


@probe("spark-append", "Spark append (INSERT INTO)", "spark", needs=("spark-ctas",))
def probe_spark_append(ctx: ProbeContext) -> Outcome:
    end = _SPARK_ROWS + _SPARK_APPEND_ROWS
    try:
        with statements(ctx):
            ctx.spark.sql(f"INSERT INTO {_table(ctx)} SELECT id, CAST(id AS STRING) FROM range({_SPARK_ROWS}, {end}, 1, 2)")
            rows = ctx.spark.sql(f"SELECT count(*) AS n FROM {_table(ctx)}").collect()[0]["n"]
            snapshots = ctx.spark.sql(f"SELECT count(*) AS n FROM {_table(ctx)}.snapshots").collect()[0]["n"]
            # asked only where one snapshot is left: a catalog that drops the earlier ones numbers it as the last commit
            sequence = (ctx.spark.sql(f"SELECT max(sequence_number) AS s FROM {_table(ctx)}.entries").collect()[0]["s"]
                        if snapshots == 1 else None)
    except Exception as exc:
        return failed(spark_error(ctx, exc))
    evidence = {"rows": rows, "snapshots": snapshots, "last_sequence_number": sequence}
    if rows == end and history_pruned(snapshots, sequence, 2):
        return passed(f"appended {_SPARK_APPEND_ROWS} rows; {rows} rows; {PRUNED}", **evidence)
    if rows != end or snapshots != 2:
        return failed(f"after the append: {rows} rows and {snapshots} snapshots, expected {end} and 2", **evidence)
    return passed(f"appended {_SPARK_APPEND_ROWS} rows; {rows} rows, {snapshots} snapshots", **evidence)


#: Where a catalog keeps only a table's current snapshot (Nessie: each commit's metadata holds just
#: its own), snapshot counts say nothing about how many commits landed; the rows still do.
PRUNED = "the catalog keeps only the current snapshot (earlier ones are not in the metadata)"


def history_pruned(snapshots: int, last_sequence_number: int | None, commits: int) -> bool:
    """One snapshot left, numbered as the `commits`-th commit: the catalog dropped the earlier ones."""
    return snapshots == 1 and (last_sequence_number or 0) >= commits
