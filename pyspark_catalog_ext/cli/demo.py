"""`pyspark-catalog-ext demo`: the whole path on one machine, end to end.

Starts the embedded lakehouse, runs a PySpark CTAS of 1M rows through the Iceberg REST catalog
with vended credentials only (no static S3 keys in Spark), reads it back, prints a summary and
stops everything.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import JvmStack
    from pyspark_catalog_ext.spark.jvm_deps.shim_build import JavaInfo

__all__ = ["DemoResult", "DemoJvm", "prepare_jvm", "run_demo", "register"]

TABLE = "demo.events"


@dataclass(frozen=True)
class DemoResult:
    """What the demo measured. `credential_expires_at` is the vended credential's expiry (never the secret)."""

    rows: int
    data_files: int
    snapshot_id: int
    credential_expires_at: datetime | None
    elapsed_s: float


@dataclass(frozen=True)
class DemoJvm:
    """What the demo's Spark runs on: the Java, the stack of the installed pyspark, its jars and the
    route they came by ("maven" or "pypi", which `jars=` to configure it with)."""

    java: JavaInfo
    stack: JvmStack
    jars: list[Path]
    route: str


def prepare_jvm(step: Callable[[str], None] = print) -> DemoJvm:
    """Check Java and fetch the jars for the installed pyspark's stack (as configure() picks it), so
    a pyspark 4.1 install fetches the Spark 4.1 runtime, from Maven Central (PyPI's wheels where
    Central does not answer and the pyspark is 3.5)."""
    from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_stack_jars
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import pinned_maven_jars, select_stack
    from pyspark_catalog_ext.spark.jvm_deps.shim_build import check_java, local_java_major, shim_jar

    stack = select_stack(java=local_java_major(), progress=step)
    pins = pinned_maven_jars()
    size = sum(int(str(pins[c]["size"])) for c in (stack.runtime, stack.aws_bundle)) / 1e6
    step(f"checking Java and resolving the JVM jars for {stack.label} (first run downloads ~{size:.0f} MB from Maven Central)")
    java = check_java(spark=stack.spark, iceberg=stack.iceberg)
    got = resolve_stack_jars(stack, progress=step)
    jars = [*got.jars, shim_jar()]
    step(f"Java {java.version} ok; jars ready ({got.stack.label}, {'Apache Iceberg from Maven Central' if got.route == 'maven' else 'from PyPI wheels'})")
    return DemoJvm(java=java, stack=got.stack, jars=jars, route=got.route)


def _credential_expiry(lake, catalog: str) -> datetime | None:
    """Expiry of the credentials the catalog vends for the table, from a PyIceberg load."""
    from pyspark_catalog_ext.catalog.storage_keys import S3_EXPIRY
    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    table = pyiceberg_catalog(lake, catalog).load_table(TABLE)
    ms = table.io.properties.get(S3_EXPIRY)
    return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc) if ms else None


def run_demo(rows: int = 1_000_000, catalog: str = "lake", out: Callable[[str], None] = print) -> DemoResult:
    """Run the demo and return its numbers; `out` receives the progress lines."""
    from pyspark_catalog_ext.lakehouse.server import start_lakehouse
    from pyspark_catalog_ext.spark.session import lakehouse_session

    start = time.monotonic()

    def step(msg: str) -> None:
        out(f"[{time.monotonic() - start:5.1f}s] {msg}")

    jvm = prepare_jvm(step)
    step("starting the embedded lakehouse (SeaweedFS: S3 + Iceberg REST + STS) on 127.0.0.1")
    with start_lakehouse() as lake:
        assert lake.info is not None
        step(f"lakehouse ready: catalog {lake.info.iceberg_uri}, warehouse {lake.info.warehouse}")
        step(f"starting Spark (local[2]) on {jvm.stack.label} with the shim")
        spark = lakehouse_session(lake, catalog, app_name="pyspark-catalog-ext-demo", iceberg=jvm.stack.iceberg,
                                  jars="pypi" if jvm.route == "pypi" else "offline")
        try:
            spark.sparkContext.setLogLevel("ERROR")
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.demo")
            step(f"CREATE TABLE {catalog}.{TABLE} AS SELECT ... ({rows:,} rows, vended credentials only)")
            spark.sql(
                f"CREATE TABLE {catalog}.{TABLE} USING iceberg AS "
                f"SELECT id, id % 100 AS bucket, CAST(rand(42) * 1000 AS DOUBLE) AS amount, "
                f"concat('event-', CAST(id AS STRING)) AS name FROM range({rows})"
            )
            step("reading the table back")
            counted = spark.table(f"{catalog}.{TABLE}").count()
            files = spark.sql(f"SELECT count(*) AS n FROM {catalog}.{TABLE}.files").collect()[0]["n"]
            snapshot = spark.sql(f"SELECT snapshot_id FROM {catalog}.{TABLE}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()[0]["snapshot_id"]
        finally:
            spark.stop()
        expires = _credential_expiry(lake, catalog)
        step("stopping the lakehouse")
    if counted != rows:
        from pyspark_catalog_ext.errors import LakehouseError

        raise LakehouseError(f"demo read back {counted} rows but wrote {rows}; see the lakehouse log")
    return DemoResult(rows=counted, data_files=int(files), snapshot_id=int(snapshot), credential_expires_at=expires, elapsed_s=time.monotonic() - start)


def _summary(result: DemoResult) -> str:
    if result.credential_expires_at is not None:
        left = (result.credential_expires_at - datetime.now(timezone.utc)).total_seconds()
        expiry = f"{result.credential_expires_at.isoformat(timespec='seconds')} (in {left / 60:.0f} min; secret not shown)"
    else:
        expiry = "the catalog vended no expiry"
    return "\n".join([
        "demo finished:",
        f"  rows                  {result.rows:,}",
        f"  data files            {result.data_files}",
        f"  snapshot id           {result.snapshot_id}",
        f"  vended creds expire   {expiry}",
        f"  elapsed               {result.elapsed_s:.1f} s",
    ])


def _cmd(args: argparse.Namespace) -> int:
    result = run_demo(rows=args.rows, out=lambda line: print(line, flush=True))
    print(_summary(result))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `demo` to the CLI."""
    p = subparsers.add_parser("demo", help="embedded lakehouse + a 1M-row Spark CTAS with vended credentials, end to end")
    p.add_argument("--rows", type=int, default=1_000_000, help="rows to write (default 1,000,000)")
    p.set_defaults(func=_cmd)
