"""Every profile yields the expected Spark conf; PyIceberg config feeds the same settings."""

from __future__ import annotations

import re

import pytest

from pyspark_catalog_ext.catalog.profiles import PROFILES, get_profile
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.secret_keys import REDACTION_REGEX
from pyspark_catalog_ext.spark.conf import EXTENSIONS, SHIM_CATALOG_IMPL, SHIM_CLIENT_FACTORY, spark_conf
from pyspark_catalog_ext.spark.shim_api import SHIM_SQL_EXTENSIONS

P = "spark.sql.catalog.lake."
# profile -> (extra arguments, expected catalog properties)
CASES = {
    "seaweedfs": (
        dict(uri="http://weed.internal:8181", warehouse="tables", credential="ak:sk"),
        {"uri": "http://weed.internal:8181", "warehouse": "tables", "rest.auth.type": "oauth2", "credential": "ak:sk",
         "oauth2-server-uri": "http://weed.internal:8181/v1/oauth/tokens", "s3.path-style-access": "true", "client.region": "us-east-1",
         "header.X-Iceberg-Access-Delegation": "vended-credentials"},
    ),
    "polaris": (
        dict(uri="https://polaris.example.com/api/catalog", warehouse="prod", credential="id:sec"),
        {"rest.auth.type": "oauth2", "credential": "id:sec", "scope": "PRINCIPAL_ROLE:ALL",
         "oauth2-server-uri": "https://polaris.example.com/api/catalog/v1/oauth/tokens", "header.X-Iceberg-Access-Delegation": "vended-credentials"},
    ),
    "lakekeeper": (
        dict(uri="https://lk.example.com/catalog", warehouse="wh", credential="id:sec", oauth2_server_uri="https://idp.example.com/realms/x/protocol/openid-connect/token"),
        {"rest.auth.type": "oauth2", "oauth2-server-uri": "https://idp.example.com/realms/x/protocol/openid-connect/token",
         "header.X-Iceberg-Access-Delegation": "vended-credentials"},
    ),
    "unity": (
        dict(uri="https://uc.example.com/api/2.1/unity-catalog/iceberg", warehouse="main", token="uctok"),
        {"rest.auth.type": "oauth2", "token": "uctok", "header.X-Iceberg-Access-Delegation": "vended-credentials"},
    ),
    "nessie": (
        dict(uri="https://nessie.example.com/iceberg", warehouse="wh", credential="id:sec", oauth2_server_uri="https://idp.example.com/token"),
        {"rest.auth.type": "oauth2", "oauth2-server-uri": "https://idp.example.com/token", "header.X-Iceberg-Access-Delegation": "vended-credentials"},
    ),
    "gravitino": (
        dict(uri="http://gravitino:9001/iceberg", warehouse="cat", credential="id:sec", oauth2_server_uri="https://idp.example.com/token"),
        {"uri": "http://gravitino:9001/iceberg", "rest.auth.type": "oauth2", "header.X-Iceberg-Access-Delegation": "vended-credentials"},
    ),
    "glue": (
        dict(region="eu-west-1", warehouse="123456789012"),
        {"uri": "https://glue.eu-west-1.amazonaws.com/iceberg", "rest.auth.type": "sigv4", "rest.signing-name": "glue",
         "rest.signing-region": "eu-west-1", "warehouse": "123456789012"},
    ),
    "s3tables": (
        dict(region="eu-west-1", warehouse="arn:aws:s3tables:eu-west-1:123456789012:bucket/b"),
        {"uri": "https://s3tables.eu-west-1.amazonaws.com/iceberg", "rest.auth.type": "sigv4", "rest.sigv4-enabled": "true",
         "rest.signing-name": "s3tables", "rest.signing-region": "eu-west-1", "client.region": "eu-west-1"},
    ),
    "r2": (
        dict(uri="https://catalog.cloudflarestorage.com/acc/bkt", warehouse="acc_bkt", token="r2tok"),
        {"rest.auth.type": "oauth2", "token": "r2tok", "header.X-Iceberg-Access-Delegation": "vended-credentials"},
    ),
    "rustfs": (
        dict(uri="http://rustfs:9000/iceberg", warehouse="tb"),
        {"rest.auth.type": "sigv4", "rest.signing-name": "s3", "rest.signing-region": "us-east-1", "s3.path-style-access": "true"},
    ),
    "rustfs-compat": (
        dict(uri="http://rustfs:9000/_iceberg", warehouse="tb"),
        {"uri": "http://rustfs:9000/_iceberg", "rest.signing-name": "s3tables", "rest.auth.type": "sigv4"},
    ),
    "minio-aistor": (
        dict(uri="https://aistor.example.com/_iceberg", warehouse="wh"),
        {"rest.auth.type": "sigv4", "rest.signing-name": "s3tables", "s3.path-style-access": "true"},
    ),
    "oss-tables": (
        dict(region="cn-hangzhou", warehouse="tb"),
        {"uri": "https://cn-hangzhou.oss-tables.aliyuncs.com/iceberg", "rest.auth.type": "sigv4", "rest.signing-name": "oss-tables"},
    ),
}


def test_every_profile_has_a_case():
    assert set(CASES) | {"local"} == set(PROFILES)
    assert {name for name, p in PROFILES.items() if p.tested_here} == {"local", "seaweedfs"}
    # Emulated: tests/slow/test_emulated_catalogs.py runs the user path on each (tests/emulators/behaviour.py FAMILIES).
    from tests.emulators import FAMILIES

    assert {name for name, p in PROFILES.items() if p.emulated} == {b.profile for b in FAMILIES}


@pytest.mark.parametrize("name", sorted(CASES))
def test_profile_conf(name):
    args, expected = CASES[name]
    conf = spark_conf(name, "lake", jars=None, **args)
    assert conf["spark.sql.extensions"] == f"{EXTENSIONS},{SHIM_SQL_EXTENSIONS}"
    assert conf["spark.sql.catalog.lake"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf[P + "catalog-impl"] == SHIM_CATALOG_IMPL and P + "type" not in conf
    assert conf[P + "s3.client-factory-impl"] == SHIM_CLIENT_FACTORY
    assert conf[P + "io-impl"] == "io.catalogext.shim.RefreshingResolvingFileIO"  # every store, no store= needed
    assert P + "catalog-ext.stores" not in conf
    assert conf["spark.redaction.regex"] == REDACTION_REGEX
    assert "spark.driver.host" not in conf and "spark.jars" not in conf
    for key, value in expected.items():
        assert conf.get(P + key) == value, key
    if get_profile(name).delegation is None:
        assert P + "header.X-Iceberg-Access-Delegation" not in conf


def test_local_profile_and_plain_iceberg(lakehouse):
    conf = spark_conf("local", lakehouse=lakehouse, jars=None, shim=False)
    info = lakehouse.info
    assert conf[P + "type"] == "rest" and P + "catalog-impl" not in conf and P + "s3.client-factory-impl" not in conf
    assert conf[P + "uri"] == info.iceberg_uri and conf[P + "warehouse"] == "warehouse"
    assert conf[P + "credential"] == info.credential and info.access_key not in info.credential  # never the S3 admin keys
    assert conf[P + "oauth2-server-uri"] == info.iceberg_uri + "/v1/oauth/tokens"
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert not any("access-key" in k or "secret-access" in k for k in conf)  # vended credentials only


def test_secrets_are_masked_in_repr():
    conf = spark_conf("polaris", uri="https://p.example.com/api/catalog", warehouse="w", credential="id:topsecret", jars=None)
    assert conf[P + "credential"] == "id:topsecret"  # held for Spark ...
    assert "topsecret" not in repr(conf) and "topsecret" not in str(conf)  # ... never shown
    assert "***" in repr(conf)


def test_redaction_regex_covers_catalog_secrets():
    # Java and Python agree on this subset of regex syntax.
    regex = re.compile(REDACTION_REGEX)
    for key in ("spark.sql.catalog.lake.credential", "spark.sql.catalog.lake.token", "spark.sql.catalog.lake.s3.session-token",
                "spark.sql.catalog.lake.s3.secret-access-key", "spark.hadoop.fs.s3a.access.key"):
        assert regex.search(key), key
    assert not re.compile("(?i)secret|password|token|access[.]?key").search("spark.sql.catalog.lake.credential")


def test_unknown_profile_lists_known_ones():
    with pytest.raises(ConfigError) as err:
        spark_conf("hive-metastore", uri="https://x", jars=None)
    assert "unknown profile 'hive-metastore'" in str(err.value) and "polaris" in str(err.value) and "s3tables" in str(err.value)


@pytest.mark.parametrize("uri", ["ftp://host/catalog", "http://", "catalog.example.com", "https://user:pw@host/x"])
def test_bad_uri_is_config_error(uri):
    with pytest.raises(ConfigError) as err:
        spark_conf("polaris", uri=uri, credential="a:b", jars=None)
    assert "pw" not in str(err.value) and "\n" not in str(err.value)


def test_missing_inputs_are_config_errors(monkeypatch, tmp_path):
    with pytest.raises(ConfigError, match="needs a catalog URI"):
        spark_conf("polaris", credential="a:b", jars=None)
    with pytest.raises(ConfigError, match="--credential"):
        spark_conf("polaris", uri="https://p.example.com/api/catalog", jars=None)
    with pytest.raises(ConfigError, match="oauth2-server-uri"):
        spark_conf("lakekeeper", uri="https://lk.example.com/catalog", credential="a:b", jars=None)
    with pytest.raises(ConfigError, match="region"):
        spark_conf("s3tables", jars=None)
    with pytest.raises(ConfigError, match="jar mode"):
        spark_conf("polaris", uri="https://p.example.com/api/catalog", credential="a:b", jars="ivy")
    monkeypatch.setenv("PYSPARK_CATALOG_EXT_CACHE", str(tmp_path))  # no `local up` state here
    with pytest.raises(ConfigError, match="local up"):
        spark_conf("local", jars=None)


def test_settings_from_pyiceberg_yaml_and_env(monkeypatch, tmp_path):
    (tmp_path / ".pyiceberg.yaml").write_text(
        "catalog:\n"
        "  shared:\n"
        "    uri: https://polaris.example.com/api/catalog\n"
        "    warehouse: from-yaml\n"
        "    credential: yid:ysecret\n"
        "    header.X-Custom: hello\n"
        "    s3.endpoint: https://s3.example.com\n"
        "    py-io-impl: pyiceberg.io.pyarrow.PyArrowFileIO\n"
    )
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    monkeypatch.setenv("PYICEBERG_CATALOG__SHARED__SCOPE", "PRINCIPAL_ROLE:reader")
    conf = spark_conf("polaris", from_pyiceberg="shared", jars=None)
    assert conf[P + "uri"] == "https://polaris.example.com/api/catalog"
    assert conf[P + "warehouse"] == "from-yaml" and conf[P + "credential"] == "yid:ysecret"
    assert conf[P + "scope"] == "PRINCIPAL_ROLE:reader"  # env var wins over the profile default
    assert conf[P + "header.x-custom"] == "hello" and conf[P + "s3.endpoint"] == "https://s3.example.com"
    assert not any("py-io-impl" in k for k in conf)
    # explicit arguments win over the PyIceberg definition
    assert spark_conf("polaris", from_pyiceberg="shared", warehouse="explicit", jars=None)[P + "warehouse"] == "explicit"
    with pytest.raises(ConfigError, match="no PyIceberg catalog 'absent'"):
        spark_conf("polaris", from_pyiceberg="absent", jars=None)


@pytest.mark.parametrize("store,plain_io,bundle", [
    ("gcs", "org.apache.iceberg.gcp.gcs.GCSFileIO", "iceberg-gcp-bundle"),
    ("adls", "org.apache.iceberg.azure.adlsv2.ADLSFileIO", "iceberg-azure-bundle"),
])
def test_store_brings_the_sdk_bundle_and_refuses_the_other_stores(store, plain_io, bundle):
    args = dict(uri="https://polaris.example.com/api/catalog", warehouse="w", credential="a:b")
    conf = spark_conf("polaris", jars="maven", spark="3.5", iceberg="1.11", store=store, **args)
    assert conf[P + "io-impl"] == "io.catalogext.shim.RefreshingResolvingFileIO"  # the same FileIO with or without store=
    assert conf[P + "catalog-ext.stores"] == store
    assert f"org.apache.iceberg:{bundle}:" in conf["spark.jars.packages"]
    unnamed = spark_conf("polaris", jars="maven", spark="3.5", iceberg="1.11", **args)
    assert unnamed[P + "io-impl"] == conf[P + "io-impl"] and P + "catalog-ext.stores" not in unnamed
    assert "bundle" not in unnamed["spark.jars.packages"].replace("iceberg-aws-bundle", "")
    both = spark_conf("polaris", jars="maven", spark="3.5", iceberg="1.11", store=["s3", store, "gcs"], **args)
    assert both[P + "catalog-ext.stores"] == ("s3,gcs" if store == "gcs" else f"s3,{store},gcs")
    plain = spark_conf("polaris", jars=None, shim=False, store=store, **args)
    assert plain[P + "io-impl"] == plain_io
    assert spark_conf("polaris", jars=None, shim=False, **args)[P + "io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"  # as before
    assert spark_conf("polaris", jars=None, shim=False, store="s3,adls", **args)[P + "io-impl"] == "org.apache.iceberg.io.ResolvingFileIO"
    with pytest.raises(ConfigError, match="store 'hdfs' is not one of s3, gcs, adls"):
        spark_conf("polaris", jars=None, store="hdfs", **args)
    with pytest.raises(ConfigError, match="holds no .* and its Ivy settings"):
        spark_conf("polaris", jars="packages", repository="/nowhere", store=store, **args)


def test_profiles_declare_what_their_catalog_replays_under_an_idempotency_key():
    """Polaris (1.7.0, the first release with idempotency) replays createTable and updateTable only: its
    profile says so to both runtimes; a profile that declares nothing leaves the narrowest set."""
    from pyspark_catalog_ext.catalog.connection import CatalogConnection
    from pyspark_catalog_ext.commit.decision import table
    from pyspark_catalog_ext.commit.policy import CommitPolicy

    known = set(table()["deduplicated_operations"]["operations"])
    for p in PROFILES.values():
        assert set(p.deduplicated_operations or ()) <= known and bool(p.deduplicated_operations) == bool(p.idempotency_source), p.name
    conn = CatalogConnection.resolve("polaris", uri="https://polaris.example/api/catalog", warehouse="w", credential="a:b")
    knob = "catalog-ext.commit.deduplicated-operations"
    assert conn.spark_properties()[knob] == conn.pyiceberg_properties()[knob] == "createTable,updateTable"
    assert CommitPolicy.from_properties({knob: conn.spark_properties()[knob]}).deduplicated == {"createTable", "updateTable"}
    conf = spark_conf("polaris", "p", jars=None, uri="https://polaris.example/api/catalog", warehouse="w", credential="a:b")
    assert conf[f"spark.sql.catalog.p.{knob}"] == "createTable,updateTable"
    local = CatalogConnection.resolve("nessie", uri="https://n.example/iceberg", warehouse="w", token="t")
    assert knob not in local.spark_properties()
    with pytest.raises(ConfigError, match=r"unknown operation dropEverything; use none or some of createTable, "):
        CommitPolicy.from_properties({knob: "createTable,dropEverything"})
