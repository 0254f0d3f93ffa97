"""Spark and PyIceberg against the embedded lakehouse, through our configuration, for real."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from pyspark_catalog_ext.errors import CatalogAuthError, CatalogNotFoundError, CatalogUnavailableError
from pyspark_catalog_ext.ports import free_port
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.spark.catalog_check import check_catalog
from pyspark_catalog_ext.spark.conf import SHIM_CATALOG_IMPL, spark_conf
from pyspark_catalog_ext.spark.session import configure


def test_spark_uses_shim_and_vended_credentials_only(spark):
    conf = dict(spark.sparkContext.getConf().getAll())
    assert conf["spark.sql.catalog.lake.catalog-impl"] == SHIM_CATALOG_IMPL
    assert conf["spark.sql.catalog.lake.header.X-Iceberg-Access-Delegation"] == "vended-credentials"
    # Spark 4.1 sets two S3A read-tuning defaults of its own (spark.hadoop.fs.s3a.vectored.read.*): no
    # credential, nothing of ours.
    ours = [k for k in conf if k.startswith("spark.hadoop.fs.s3") and ".vectored.read." not in k]
    assert not [k for k in conf if "access-key" in k or "secret-access" in k] and not ours
    # The shim's catalog class is what Spark actually loaded.
    iceberg = spark._jsparkSession.sessionState().catalogManager().catalog("lake").icebergCatalog()
    if iceberg.getClass().getName() == "org.apache.iceberg.CachingCatalog":  # Spark wraps it for caching
        field = iceberg.getClass().getDeclaredField("catalog")
        field.setAccessible(True)
        iceberg = field.get(iceberg)
    assert iceberg.getClass().getName() == SHIM_CATALOG_IMPL


def test_ctas_and_read_back(spark):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.it")
    spark.sql("DROP TABLE IF EXISTS lake.it.ctas")
    spark.sql("CREATE TABLE lake.it.ctas USING iceberg AS SELECT id, id * 2 AS twice FROM range(200000)")
    row = spark.sql("SELECT count(*) AS n, sum(twice) AS s FROM lake.it.ctas").first()
    assert row["n"] == 200000 and row["s"] == 2 * sum(range(200000))
    assert spark.sql("SELECT count(*) AS n FROM lake.it.ctas.files").first()["n"] >= 1
    assert spark.sql("SELECT count(*) AS n FROM lake.it.ctas.snapshots").first()["n"] == 1


def test_pyiceberg_writes_spark_reads(spark, pyiceberg_catalog):
    pyiceberg_catalog.create_namespace_if_not_exists("it")
    if pyiceberg_catalog.table_exists("it.from_py"):
        pyiceberg_catalog.drop_table("it.from_py")
    data = pa.table({"k": pa.array(range(1000), pa.int64()), "v": pa.array([f"v{i}" for i in range(1000)])})
    table = pyiceberg_catalog.create_table("it.from_py", schema=data.schema)
    table.append(data)
    spark.sql("REFRESH TABLE lake.it.from_py")
    rows = spark.sql("SELECT count(*) AS n, max(k) AS mx, min(v) AS mn FROM lake.it.from_py").first()
    assert (rows["n"], rows["mx"], rows["mn"]) == (1000, 999, "v0")


def test_spark_writes_pyiceberg_reads(spark, pyiceberg_catalog):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.it")
    spark.sql("CREATE OR REPLACE TABLE lake.it.from_spark (id BIGINT, name STRING) USING iceberg")
    spark.sql("INSERT INTO lake.it.from_spark SELECT id, concat('n', CAST(id AS STRING)) FROM range(500)")
    arrow = pyiceberg_catalog.load_table("it.from_spark").scan().to_arrow()
    assert arrow.num_rows == 500 and sorted(arrow.column("id").to_pylist()) == list(range(500))
    assert set(arrow.column("name").to_pylist()) == {f"n{i}" for i in range(500)}


def test_spark_redacts_the_catalog_credential(spark, lakehouse):
    rows = {r["key"]: r["value"] for r in spark.sql("SET").collect()}
    assert rows["spark.sql.catalog.lake.credential"] == "*********(redacted)"
    assert lakehouse.info.secret_key not in " ".join(rows.values())


def test_pyiceberg_catalog_from_spark_conf(lakehouse):
    conf = spark_conf("local", lakehouse=lakehouse, jars=None)
    cat = pyiceberg_catalog(conf)
    assert cat.properties["header.X-Iceberg-Access-Delegation"] == "vended-credentials"
    assert isinstance(cat.list_namespaces(), list)


# -- bad input: one-line errors before any JVM starts ---------------------------------------------


def test_catalog_unreachable():
    port = free_port()
    with pytest.raises(CatalogUnavailableError) as err:
        configure(SparkSession.builder, "seaweedfs", uri=f"http://127.0.0.1:{port}", warehouse="warehouse", credential="a:b", jars=None)
    assert f"cannot reach the catalog at http://127.0.0.1:{port}" in str(err.value)


def test_wrong_credentials_401(lakehouse):
    with pytest.raises(CatalogAuthError) as err:
        configure(SparkSession.builder, "local", lakehouse=lakehouse, credential="lakeadmin:wrong-secret", jars=None)
    assert err.value.status == 401 and "wrong-secret" not in str(err.value) and "rejected the credentials" in str(err.value)
    with pytest.raises(CatalogAuthError):
        check_catalog(spark_conf("local", lakehouse=lakehouse, token="not-a-token", jars=None))
    with pytest.raises(CatalogAuthError):
        pyiceberg_catalog(spark_conf("local", lakehouse=lakehouse, credential="lakeadmin:wrong-secret", jars=None))


def test_wrong_warehouse_detected(lakehouse):
    with pytest.raises(CatalogNotFoundError) as err:
        configure(SparkSession.builder, "local", lakehouse=lakehouse, warehouse="no-such-bucket", jars=None)
    assert "warehouse 'no-such-bucket' not found" in str(err.value) and err.value.status == 404


def test_configure_keeps_existing_builder_settings(lakehouse):
    builder = SparkSession.Builder().config("spark.sql.extensions", "com.example.Ext").config("spark.jars", "/opt/x.jar")
    configure(builder, "local", lakehouse=lakehouse, jars="offline")
    assert builder._options["spark.sql.extensions"].startswith("com.example.Ext,")
    jars = builder._options["spark.jars"].split(",")
    assert jars[0] == "/opt/x.jar" and len(jars) > 1 and len(set(jars)) == len(jars)  # the user's first, ours after


def test_configure_and_spark_conf_append_our_plugin_to_the_users(lakehouse):
    """spark.plugins is a list: a user's plugin stays first, ours is added once (also via the CLI's
    extra conf)."""
    from pyspark_catalog_ext.spark.conf import SHIM_PLUGIN

    builder = SparkSession.Builder().config("spark.plugins", "com.example.Mine")
    configure(builder, "local", lakehouse=lakehouse, jars=None)
    configure(builder, "local", lakehouse=lakehouse, jars=None)  # twice: still once
    assert builder._options["spark.plugins"] == f"com.example.Mine,{SHIM_PLUGIN}"
    conf = spark_conf("local", lakehouse=lakehouse, jars=None, extra_conf={"spark.plugins": "a.B"})
    assert conf["spark.plugins"] == f"a.B,{SHIM_PLUGIN}"
    assert "spark.plugins" not in spark_conf("local", lakehouse=lakehouse, jars=None, shim=False)
