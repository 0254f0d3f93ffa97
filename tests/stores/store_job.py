"""A Spark job on a store catalog, in a process of its own (its own JVM, its own jars):
`python tests/stores/store_job.py '<json args>'` prints `RESULT {...}` or `FAILED {...}` on stdout.

args: store ("adls" | "gcs", or stores: "s3,adls,gcs"), uri (the vending front), iceberg ("1.11.0"), master, mode, and either
one step (action, table, rows, ms) or `steps`, a list of them run one after another in the same
session (each step's outcome is reported on its own: a step that fails does not stop the next);
`policy`: catalog-ext.refresh.* settings in seconds (RefreshPolicy's arguments), for "package".
modes:
  "package"  the user path: `configure(store=...)` (the shim's FileIO for the store, its SDK bundle)
             with the refresh policy given: what the store tests hold the package to; with
             `"name_store": false`, `configure()` without store= (no SDK bundle in the jars);
  "plain"    Iceberg alone (tests/stores/plain_spark.py): the baseline.
actions: "roundtrip" (create, insert, read back; its data files under `data_path`, the table at `location`,
when given), "ctas-bulk"
(a staged CTAS of ordinary files), "ctas-sql", "writeto" (staged creates, `rows`
single-row files, each row `ms` slow), "files" (a committed table of `rows` single-row files) and
"read" (that table read one task per file, each `ms` slow).
With steps, RESULT carries {"steps": [{"table", "kind": "RESULT"|"FAILED", ...}], "status": the
registry's status per table, "events": its credential events (package mode), "executors": executor
JVMs seen}. `parts`: how many tasks a staged create runs side by side (1 unless given); `together`:
the steps run side by side, one thread each; `location`: where "ctas-sql" and "roundtrip" put the table.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.jobs.local_cluster import stop_and_remove_work  # noqa: E402
from tests.refresh_support import slow  # noqa: E402
from tests.stores.plain_spark import CATALOG, plain_session  # noqa: E402


def package_session(args: dict):
    from pyspark.sql import SparkSession

    from pyspark_catalog_ext.refresh import RefreshPolicy
    from pyspark_catalog_ext.spark.session import configure

    builder = SparkSession.builder.master(args["master"]).appName(f"stores-{args['store']}")
    policy = RefreshPolicy(**args["policy"]) if args.get("policy") else None
    store = args["store"] if args.get("name_store", True) else None
    builder = configure(builder, "seaweedfs", CATALOG, uri=args["uri"], warehouse="stores",
                        credential="stores:not-a-secret", iceberg=args["iceberg"], store=store, refresh=policy,
                        extra_conf={"spark.task.maxFailures": "1", "spark.ui.enabled": "false"})
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(spark, args: dict) -> dict:
    table, rows, ms = f"{CATALOG}.db.{args['table']}", int(args.get("rows", 4)), int(args.get("ms", 0))
    parts = int(args.get("parts", 1))  # the staged creates' tasks, run side by side
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
    action = args["action"]
    if action == "roundtrip":
        # `data_path`: the table's data files go there (write.data.path), away from its location
        props = f" TBLPROPERTIES ('write.data.path'='{args['data_path']}')" if args.get("data_path") else ""
        props += f" LOCATION '{args['location']}'" if args.get("location") else ""
        spark.sql(f"CREATE TABLE {table} (id bigint, v bigint) USING iceberg{props}")
        spark.sql(f"INSERT INTO {table} SELECT id, id * 3 FROM range({rows})")
    elif action == "ctas-sql":
        located = f" LOCATION '{args['location']}'" if args.get("location") else ""
        spark.sql(f"CREATE TABLE {table} USING iceberg{located} TBLPROPERTIES ('write.target-file-size-bytes'='1') AS "
                  f"SELECT id, id * 3 AS v FROM range(0, {rows}, 1, {parts}) WHERE {slow(ms)}")
    elif action == "ctas-bulk":
        # a staged CTAS of ordinary files, `parts` tasks (the benchmark's: a store's request cost)
        spark.sql(f"CREATE TABLE {table} USING iceberg AS SELECT id, id * 3 AS v FROM range(0, {rows}, 1, {parts})")
    elif action == "files":
        # `rows` single-row files, read one task each (split target 1 byte): the table "read" reads.
        spark.sql(f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('write.target-file-size-bytes'='1', "
                  f"'read.split.target-size'='1') AS SELECT id, id * 3 AS v FROM range(0, {rows}, 1, {rows})")
    elif action == "read":
        # A read of a committed table made by "files", each task `ms` slow: store requests spread
        # over the whole job.
        read_started = time.time()
        got = spark.sql(f"SELECT count(*), sum(v) FROM {table} WHERE {slow(ms)}").first()
        return {"rows": got[0], "sum": got[1], "read_started": read_started, "read_ended": time.time()}
    elif action == "writeto":
        df = spark.range(0, rows, 1, parts).where(slow(ms)).selectExpr("id", "id * 3 AS v")
        df.writeTo(table).tableProperty("write.target-file-size-bytes", "1").create()
    else:
        raise ValueError(f"unknown action {action}")
    got = spark.sql(f"SELECT count(*), sum(v) FROM {table}").first()
    return {"rows": got[0], "sum": got[1]}


def summarize(text: str) -> str:
    """What a failed job's error says, in one line: the HTTP status and Azure error code where there is
    one, else the innermost cause's first line."""
    azure = re.search(r"Status code (\d+).*?<Code>(\w+)</Code>", text, re.S)
    if azure:
        return f"BlobStorageException: {azure[1]} {azure[2]}"
    for marker in ("Caused by: ", ": org.apache.spark.SparkException: "):
        if marker in text:
            text = text.rsplit(marker, 1)[1]
    return text.strip().splitlines()[0][:200] if text.strip() else ""


def run_job(args: dict, timeout: float = 900, python: str | Path | None = None) -> tuple[str, dict]:
    """Run this job in a fresh Python (its own JVM; `python`: another venv's, e.g. a Spark 4.1 one):
    ("RESULT" | "FAILED", the job's report)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([str(python or sys.executable), __file__, json.dumps(args)], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(root)}, cwd=root)
    for line in proc.stdout.splitlines():
        if line.startswith(("RESULT ", "FAILED ")):
            kind, _, payload = line.partition(" ")
            return kind, json.loads(payload)
    raise AssertionError(f"the store job ended (exit {proc.returncode}) without a report: {proc.stderr[-3000:]}")


def failure(exc: BaseException) -> str:
    """The head of the failure, its causes and the store's own answer: what the tests read."""
    text = str(exc)
    causes = [line[:400] for line in text.splitlines() if line.startswith("Caused by: ")]
    said = [f"store answered: Status code {m[0]}, <Code>{m[1]}</Code>"
            for m in re.findall(r"Status code (\d+).*?<Code>(\w+)</Code>", text, re.S)[:1]]
    return "\n".join([text[:4000], *causes, *said])


def run_step(spark, args: dict, step: dict) -> dict:
    started = time.monotonic()
    began = time.time()
    try:
        result = run(spark, {**args, **step})
        return {**result, "table": step["table"], "kind": "RESULT", "seconds": time.monotonic() - started,
                "started": began, "ended": time.time()}
    except Exception as exc:  # noqa: BLE001 - the test reads what failed
        return {"table": step["table"], "kind": "FAILED", "error": failure(exc), "seconds": time.monotonic() - started,
                "started": began, "ended": time.time()}


def run_steps(spark, args: dict) -> dict:
    if args.get("together"):  # the steps side by side, one thread each (Spark runs their jobs at once)
        from concurrent.futures import ThreadPoolExecutor

        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")  # once: the steps' own would race
        with ThreadPoolExecutor(len(args["steps"])) as pool:
            out = list(pool.map(lambda step: run_step(spark, args, step), args["steps"]))
    else:
        out = [run_step(spark, args, step) for step in args["steps"]]
    report: dict = {"steps": out, "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1}
    if args["mode"] == "package":
        from pyspark_catalog_ext.spark.credentials import attach

        manager = attach(spark)
        report["status"] = [{"name": s.name, "refreshes": s.refresh_count, "by_strategy": s.refreshes_by_strategy,
                             "failures": s.failure_count, "last_error": s.last_error} for s in manager.status()]
        report["plugin"] = manager.plugin_stats()
        report["events"] = credential_events(spark)
    return report


def credential_events(spark) -> list[dict]:
    """The driver's credential events still in the shim's ring: rejections the store answered (the
    driver's own and those executors reported) and the refreshes, each with its table."""
    from pyspark_catalog_ext.spark.shim_api import ShimJvm

    kinds = ("credentials.rejected", "credential_refresh.finished")
    return [{"type": e.type, "time": e.time, **e.fields} for e in ShimJvm(spark).drain_events_after(0).events
            if e.type in kinds]


def main() -> None:
    args = json.loads(sys.argv[1])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (package_session(args) if args["mode"] == "package"
             else plain_session(args["store"], args["uri"], iceberg=args["iceberg"], master=args["master"],
                                extra={"spark.task.maxFailures": "1"}))
    started = time.monotonic()
    try:
        result = run_steps(spark, args) if "steps" in args else run(spark, args)
        print("RESULT " + json.dumps({**result, "seconds": time.monotonic() - started}), flush=True)
    except Exception as exc:  # noqa: BLE001 - the test reads what failed
        print("FAILED " + json.dumps({"error": failure(exc), "type": type(exc).__name__, "seconds": time.monotonic() - started}),
              flush=True)
    finally:
        stop_and_remove_work(spark)


if __name__ == "__main__":
    main()
