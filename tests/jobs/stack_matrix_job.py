"""The user path on one Spark x Iceberg combination, run by tests/slow/test_stack_matrix.py with the
Python of a venv holding that pyspark (and this package). It imports only the package, pyspark and
PyIceberg's dependencies, as a user's job does; the loopback proxies run in the test process.

Prints `STEP <name> <json>` per step; the test checks them. argv[1]: JSON with conn (configure()'s
connection arguments but the credential, which comes in
$MATRIX_CREDENTIAL), iceberg, jars (the route: "offline", Maven Central, or "pypi"), ns, rows, ms (the
slow CTAS), repo (a folder for `maven-repo`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


T0 = time.monotonic()


def step(name: str, **facts: object) -> None:
    print(f"STEP {name} {json.dumps(facts)}", flush=True)
    print(f"at {time.monotonic() - T0:.1f} s: {name} done", file=sys.stderr, flush=True)


def main() -> None:
    args = json.loads(sys.argv[1])
    conn, ns, iceberg = {**args["conn"], "credential": os.environ["MATRIX_CREDENTIAL"]}, args["ns"], args["iceberg"]
    jars = args.get("jars", "offline")
    from pyspark.sql import SparkSession

    import pyspark_catalog_ext as pce
    from pyspark_catalog_ext.refresh import RefreshPolicy

    started = time.monotonic()
    builder = (SparkSession.builder.master("local[2]").appName("stack-matrix")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2"))
    # The README's builder example with the Iceberg release picked; a fast refresh for short-lived keys.
    spark = pce.configure(builder, "local", "lake", iceberg=iceberg, jars=jars,
                          refresh=RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4), **conn).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    step("configure", spark=spark.version, iceberg=jvm.org.apache.iceberg.IcebergBuild.version(),
         seconds=round(time.monotonic() - started, 1))
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{ns}")

    # A CTAS whose one task writes a file per row for longer than the keys live.
    started = time.monotonic()
    rows, ms = args["rows"], args["ms"]
    spark.sql(f"CREATE TABLE lake.{ns}.ctas TBLPROPERTIES ('write.target-file-size-bytes'='1') AS "
              f"SELECT id, id * 3 AS v FROM range(0, {rows}, 1, 1) "
              f"WHERE java_method('java.lang.Thread', 'sleep', CAST({ms} AS BIGINT)) IS NOT NULL")
    count, total = spark.sql(f"SELECT count(*), sum(v) FROM lake.{ns}.ctas").first()
    step("ctas", rows=count, sum=total, seconds=round(time.monotonic() - started, 1))
    if args.get("only") == "ctas":  # the README example alone
        spark.stop()
        return

    # A staged create: invisible until its commit.
    staged = pce.stage_create(spark, f"lake.{ns}.staged", "id BIGINT, v BIGINT")
    staged.write(spark.range(0, 50).selectExpr("id", "id * 3 AS v"))
    visible_before = spark.catalog.tableExists(f"lake.{ns}.staged")
    staged.commit()
    step("staged", visible_before=visible_before, rows=spark.table(f"lake.{ns}.staged").count())

    # The test process made the catalog proxy lose the answer to this table's first commit.
    spark.sql(f"CREATE TABLE lake.{ns}.lost (id BIGINT)")
    spark.sql(f"INSERT INTO lake.{ns}.lost SELECT id FROM range(0, 10)")
    count, distinct = spark.sql(f"SELECT count(*), count(DISTINCT id) FROM lake.{ns}.lost").first()
    step("lost", rows=count, distinct=distinct)
    spark.stop()

    # PyIceberg on the same catalog definition.
    cat = pce.pyiceberg_catalog(pce.spark_conf("local", "lake", jars=None, **conn), "lake")
    step("pyiceberg", rows=cat.load_table(f"{ns}.ctas").scan().to_arrow().num_rows)

    # `maintain --dry-run` (policies from a file: SeaweedFS has no policy API).
    policies = Path(args["repo"]).with_suffix(".policies.json")
    policies.write_text(json.dumps({"policies": [{
        "policy-type": "system.snapshot-expiry", "name": "expire", "version": 0, "inheritable": True,
        "content": json.dumps({"version": "2025-02-03", "enable": True, "config": {"max_snapshot_age_days": 7}}),
        "target": {"type": "namespace", "path": [ns]}}]}))
    env = dict(os.environ)
    cli = [sys.executable, "-m", "pyspark_catalog_ext.cli"]
    conn_flags = ["--uri", conn["uri"], "--warehouse", conn["warehouse"], "--credential-env", "MATRIX_CREDENTIAL",
                  "--s3-endpoint", conn["s3_endpoint"]]
    proc = subprocess.run([*cli, "maintain", f"lake.{ns}.ctas", "--dry-run", "--json", "--policy-file", str(policies), *conn_flags],
                          capture_output=True, text=True, env=env, timeout=300)
    plan = json.loads(proc.stdout) if proc.returncode == 0 else {}
    step("maintain", exit=proc.returncode, tables=[t.get("table") for t in plan.get("tables", [])], stderr=proc.stderr[-500:])

    # --packages: a Maven repository of this combination's jars, resolved by spark-submit's Ivy.
    proc = subprocess.run([*cli, "maven-repo", args["repo"], "--iceberg", iceberg, "--jars", jars], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        step("packages", exit=proc.returncode, stderr=proc.stderr[-800:])
        return
    print(f"at {time.monotonic() - T0:.1f} s: maven-repo done", file=sys.stderr, flush=True)
    conf = pce.spark_conf("local", "lake", jars="packages", repository=args["repo"], iceberg=iceberg, **conn)
    props = Path(args["repo"]).with_suffix(".conf")
    props.write_text("".join(f"{k} {v}\n" for k, v in {**conf, "spark.ui.enabled": "false"}.items()))
    import pyspark

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    job = Path(args["repo"]).with_suffix(".job.py")
    job.write_text("from pyspark.sql import SparkSession\nimport pyspark_catalog_ext as pce\n"
                   "spark = SparkSession.builder.getOrCreate()\npce.attach(spark)\n"
                   f"spark.sql('CREATE TABLE lake.{ns}.submitted AS SELECT id FROM range(0, 100, 1, 2)')\n"
                   f"print('SUBMITTED', spark.table('lake.{ns}.submitted').count(), spark.sparkContext._jvm.org.apache.iceberg.IcebergBuild.version())\n"
                   "spark.stop()\n")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run([str(submit), "--master", "local[2]", "--properties-file", str(props), str(job)],
                          capture_output=True, text=True, timeout=600, env=env)
    out = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("SUBMITTED ")]
    step("packages", exit=proc.returncode, packages=conf["spark.jars.packages"], submitted=out[0] if out else None,
         stderr=proc.stderr[-1500:] if proc.returncode else "")


if __name__ == "__main__":
    main()
