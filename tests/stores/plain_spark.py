"""A SparkSession with plain Iceberg (no shim) on a store catalog: the baseline the store tests and
benchmarks measure against. Iceberg's own SparkCatalog and REST client, its ADLSFileIO or GCSFileIO,
the runtime jar of the chosen Iceberg release and the store's SDK bundle (spark/jvm_deps/store_jars.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import select_stack
from pyspark_catalog_ext.spark.jvm_deps.store_jars import store_file_io, store_jars
from pyspark_catalog_ext.spark.shim_api import EXTENSIONS

CATALOG = "cat"


def plain_jars(store: str, iceberg: str, spark: str | None = None) -> list[Path]:
    """The Iceberg runtime of `iceberg` for `spark` (default: the installed pyspark's line) and the store's bundle."""
    stack = select_stack(spark, iceberg)
    return [*resolve_jars(stack=stack), *store_jars(store, stack)]


def plain_conf(store: str, catalog_uri: str, iceberg: str, catalog: str = CATALOG) -> dict[str, str]:
    """Spark settings: Iceberg's SparkCatalog on the REST catalog at `catalog_uri`, asking for vended
    credentials, with the store's FileIO."""
    prefix = f"spark.sql.catalog.{catalog}"
    return {
        "spark.jars": ",".join(str(j) for j in plain_jars(store, iceberg)),
        "spark.sql.extensions": EXTENSIONS,
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": catalog_uri,
        f"{prefix}.header.X-Iceberg-Access-Delegation": "vended-credentials",
        f"{prefix}.io-impl": store_file_io(store),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
    }


def plain_session(store: str, catalog_uri: str, *, iceberg: str = "1.11.0", master: str = "local[2]",
                  extra: dict[str, str] | None = None) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(f"stores-plain-{store}")
    for key, value in {**plain_conf(store, catalog_uri, iceberg), **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
