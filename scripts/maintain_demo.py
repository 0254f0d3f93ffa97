"""A real `pyspark-catalog-ext maintain` run, for the README and release notes.

Starts the embedded lakehouse (SeaweedFS) with the reference Polaris policy server in front of it
(tests/servers/policy_server.py), makes three tables of small files, creates and attaches
policies through Polaris's policy API (expiry on the catalog, compaction on the namespace,
orphan removal on one table, compaction disabled on another), then runs the CLI as a user would:
a dry run, a run, and a second run that skips the unchanged tables. The catalog credential goes
through PyIceberg's environment configuration (`--from-pyiceberg`), never the command line.

    .venv/bin/python scripts/maintain_demo.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark_catalog_ext.catalog.rest import open_catalog  # noqa: E402
from pyspark_catalog_ext.lakehouse.server import start_lakehouse  # noqa: E402
from pyspark_catalog_ext.spark.conf import catalog_properties  # noqa: E402
from pyspark_catalog_ext.spark.session import lakehouse_session  # noqa: E402
from tests.refresh_support import add_spark_catalog  # noqa: E402
from tests.servers import PolicyServer  # noqa: E402


def content(**kw: object) -> str:
    return json.dumps({"version": "2025-02-03", "enable": True, **kw})


def main() -> int:
    with start_lakehouse() as lake, PolicyServer(lake.info.iceberg_uri) as polaris:
        spark = lakehouse_session(lake, "lake", app_name="maintain-demo")
        spark.sparkContext.setLogLevel("ERROR")
        add_spark_catalog(spark, lake, "prod", polaris.url)
        spark.sql("CREATE NAMESPACE IF NOT EXISTS prod.sales")
        for name, files in (("orders", 12), ("refunds", 5), ("customers", 8)):
            spark.sql(f"CREATE TABLE prod.sales.{name} (id BIGINT, v STRING) USING iceberg")
            for i in range(files):  # one small file and one snapshot per append
                spark.range(i * 1000, (i + 1) * 1000, 1, 1).selectExpr("id", "cast(id AS STRING) AS v") \
                    .writeTo(f"prod.sales.{name}").append()
        spark.stop()

        props = catalog_properties("local", uri=polaris.url, lakehouse=lake, warehouse=lake.info.warehouse,
                                   credential=lake.info.credential, shim=False)
        with open_catalog(props) as c:
            def create(name: str, type_: str, body: str) -> None:
                c.call("POST", "/polaris/v1/{prefix}/namespaces/sales/policies",
                          json={"name": name, "type": type_, "content": body})

            def attach(name: str, type_: str, path: tuple = ()) -> None:
                c.call("PUT", f"/polaris/v1/{{prefix}}/namespaces/sales/policies/{name}/mappings",
                          json={"target": {"type": type_, "path": list(path)}})

            create("keep-recent", "system.snapshot-expiry",
                   content(config={"max_snapshot_age_days": 0.00001, "min_snapshot_to_keep": 2}))
            create("compact-128m", "system.data-compaction",
                   content(config={"target_file_size_bytes": 134217728, "min-input-files": 2}))
            create("orphans-7d", "system.orphan-file-removal", content(max_orphan_file_age_in_days=7))
            create("no-compaction", "system.data-compaction", json.dumps({"version": "2025-02-03", "enable": False}))
            attach("keep-recent", "catalog")
            attach("compact-128m", "namespace", ("sales",))
            attach("orphans-7d", "table-like", ("sales", "orders"))
            attach("no-compaction", "table-like", ("sales", "refunds"))

        env = {**os.environ, "PYICEBERG_CATALOG__PROD__URI": polaris.url,
               "PYICEBERG_CATALOG__PROD__WAREHOUSE": lake.info.warehouse,
               "PYICEBERG_CATALOG__PROD__CREDENTIAL": lake.info.credential}
        state = Path(tempfile.mkdtemp()) / "state.json"
        cli = [sys.executable, "-m", "pyspark_catalog_ext.cli", "maintain", "prod.sales", "--catalog", "prod",
               "--from-pyiceberg", "prod", "--state-file", str(state)]
        failed = 0
        for extra in (["--dry-run"], [], []):
            print("$ pyspark-catalog-ext maintain prod.sales --catalog prod --from-pyiceberg prod " + " ".join(extra))
            started = time.monotonic()
            proc = subprocess.run(cli + extra, capture_output=True, text=True, cwd=ROOT, env=env)
            progress = [line for line in proc.stderr.splitlines() if line.startswith(("[", "error"))]
            print("\n".join(progress + [proc.stdout.rstrip(), f"(exit {proc.returncode}, {time.monotonic() - started:.1f} s)", ""]),
                  flush=True)
            failed |= proc.returncode
        return failed


if __name__ == "__main__":
    sys.exit(main())
