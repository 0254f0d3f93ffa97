"""Policy-driven maintenance on the real stack: Spark + Iceberg procedures on SeaweedFS, policies from
the reference Polaris policy server (tests/servers/policy_server.py) in front of it."""

from __future__ import annotations

import json
import time

import pytest

import pyspark_catalog_ext as pce
from pyspark_catalog_ext.catalog.rest import open_catalog
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.governance.policies import ApplicablePolicy, FilePolicySource, parse_content
from pyspark_catalog_ext.spark.conf import catalog_properties
from tests.conftest import SECRET, assert_one_line_error, run_cli
from tests.helpers import add_admin_spark_catalog
from tests.refresh_support import add_spark_catalog
from tests.servers import CatalogProxy, PolicyServer, S3ExpiryProxy

COMPACTION = "system.data-compaction"
EXPIRY = "system.snapshot-expiry"
ORPHANS = "system.orphan-file-removal"


def content(**kw) -> str:
    return json.dumps({"version": "2025-02-03", "enable": True, **kw})


@pytest.fixture(scope="module")
def policies(lakehouse):
    with PolicyServer(lakehouse.info.iceberg_uri) as server:
        yield server


@pytest.fixture(scope="module")
def client(lakehouse, policies):
    props = catalog_properties("local", uri=policies.url, lakehouse=lakehouse, warehouse=lakehouse.info.warehouse,
                               credential=lakehouse.info.credential, shim=False)
    with open_catalog(props) as c:
        yield c


class Polaris:
    """The policy API calls a Polaris admin would make (create, update, attach)."""

    def __init__(self, client):
        self.client = client

    def create(self, ns, name, type_, body):
        return self.client.call("POST", f"/polaris/v1/{{prefix}}/namespaces/{'%1F'.join(ns)}/policies",
                                   json={"name": name, "type": type_, "content": body})["policy"]

    def update(self, ns, name, body, version):
        return self.client.call("PUT", f"/polaris/v1/{{prefix}}/namespaces/{'%1F'.join(ns)}/policies/{name}",
                                   json={"content": body, "current-policy-version": version})["policy"]

    def attach(self, ns, name, type_, path=()):
        self.client.call("PUT", f"/polaris/v1/{{prefix}}/namespaces/{'%1F'.join(ns)}/policies/{name}/mappings",
                            json={"target": {"type": type_, "path": list(path)}})

    def applicable(self, **params):
        return self.client.call("GET", "/polaris/v1/{prefix}/applicable-policies", params=params)


@pytest.fixture(scope="module")
def polaris(client):
    return Polaris(client)


@pytest.fixture(scope="module")
def gov(spark, lakehouse, policies, polaris):
    """Spark catalog `gov` (with the shim) reached through the policy server; namespace gov.m."""
    add_spark_catalog(spark, lakehouse, "gov", policies.url)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS gov.m")
    return "gov"


def small_files_table(spark, name: str, files: int, rows_per_file: int = 50) -> None:
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v STRING) USING iceberg")
    for i in range(files):  # one snapshot and one small file per insert
        spark.range(i * rows_per_file, (i + 1) * rows_per_file, 1, 1).selectExpr("id", "cast(id AS STRING) AS v") \
            .writeTo(name).append()


def data_files(spark, name: str) -> int:
    spark.sql(f"REFRESH TABLE {name}")  # a CLI run in another process changed it: skip the catalog's table cache
    return spark.sql(f"SELECT count(*) FROM {name}.files").first()[0]


# --------------------------------------------------------------------------- the reference server


def test_policy_server_follows_the_polaris_spec(spark, gov, polaris):
    """Create, attach at three levels, inheritance and `inherited`, one page, versions, conflicts."""
    polaris.create(["m"], "cat-expiry", EXPIRY, content(config={"min_snapshot_to_keep": 5}))
    created = polaris.create(["m"], "ns-compaction", COMPACTION, content())
    assert created == {"policy-type": COMPACTION, "inheritable": True, "name": "ns-compaction", "version": 0,
                       "description": None, "content": content()}
    polaris.create(["m"], "t-compaction", COMPACTION, content(config={"target_file_size_bytes": 1024}))
    polaris.attach(["m"], "cat-expiry", "catalog")
    polaris.attach(["m"], "ns-compaction", "namespace", ["m"])
    spark.sql("CREATE TABLE gov.m.spec_t (id BIGINT) USING iceberg")
    polaris.attach(["m"], "t-compaction", "table-like", ["m", "spec_t"])
    try:
        table = polaris.applicable(namespace="m", **{"target-name": "spec_t"})["applicable-policies"]
        by_type = {p["policy-type"]: p for p in table}
        assert by_type[COMPACTION]["name"] == "t-compaction" and by_type[COMPACTION]["inherited"] is False
        assert by_type[EXPIRY]["name"] == "cat-expiry" and by_type[EXPIRY]["inherited"] is True
        assert by_type[EXPIRY]["namespace"] == ["m"] and json.loads(by_type[EXPIRY]["content"])["enable"] is True
        ns_level = polaris.applicable(namespace="m")["applicable-policies"]
        assert {p["name"]: p["inherited"] for p in ns_level} == {"ns-compaction": False, "cat-expiry": True}
        only = polaris.applicable(namespace="m", policyType=EXPIRY, **{"target-name": "spec_t"})
        assert [p["name"] for p in only["applicable-policies"]] == ["cat-expiry"]

        # Polaris does not read page-size here (1.4.1 recorded, its source through main): one page, all of them.
        paged = polaris.applicable(namespace="m", **{"target-name": "spec_t", "page-size": 1})
        assert {p["name"] for p in paged["applicable-policies"]} == {"t-compaction", "cat-expiry"}
        assert paged["next-page-token"] is None

        assert polaris.update(["m"], "cat-expiry", content(), 0)["version"] == 1
        with pytest.raises(pce.CatalogError) as stale:
            polaris.update(["m"], "cat-expiry", content(), 0)
        assert stale.value.status == 409
        with pytest.raises(pce.CatalogError) as conflict:  # an inheritable type is attached once per target
            polaris.attach(["m"], "t-compaction", "namespace", ["m"])
        assert conflict.value.status == 409
        with pytest.raises(pce.CatalogError) as missing:
            polaris.attach(["m"], "t-compaction", "table-like", ["m", "nope"])
        assert missing.value.status == 404
        with pytest.raises(pce.CatalogError) as invalid:  # `enable` is required by the 2025-02-03 schema
            polaris.create(["m"], "bad", EXPIRY, json.dumps({"config": {}}))
        assert invalid.value.status == 400
    finally:
        polaris.client.call("POST", "/polaris/v1/{prefix}/namespaces/m/policies/t-compaction/mappings",
                               json={"target": {"type": "table-like", "path": ["m", "spec_t"]}})
        polaris.client.call("POST", "/polaris/v1/{prefix}/namespaces/m/policies/cat-expiry/mappings",
                               json={"target": {"type": "catalog"}})
        polaris.client.call("POST", "/polaris/v1/{prefix}/namespaces/m/policies/ns-compaction/mappings",
                               json={"target": {"type": "namespace", "path": ["m"]}})


def test_policy_content_is_validated_with_one_line_errors():
    def policy(type_, body):
        return ApplicablePolicy.model_validate({"policy-type": type_, "name": "p", "version": 3, "inheritable": True,
                                                "namespace": ["db"], "content": body})

    assert parse_content(policy(ORPHANS, content(max_orphan_file_age_in_days=7))).max_orphan_file_age_in_days == 7
    for body, needle in ((json.dumps({"config": {}}), "enable: Field required"),
                         (content(extra=1), "extra: Extra inputs are not permitted"),
                         (json.dumps({"enable": "yes"}), "enable: Input should be a valid boolean"),
                         ("not json", "content is not JSON")):
        with pytest.raises(ConfigError) as err:
            parse_content(policy(EXPIRY, body))
        assert needle in str(err.value) and "\n" not in str(err.value)
        assert "policy db.p (system.snapshot-expiry v3)" in str(err.value)


# --------------------------------------------------------------------------- plans and runs


def test_dry_run_prints_the_plan_with_origin_parameters_and_reasons(spark, gov, polaris, lakehouse, policies, tmp_path):
    small_files_table(spark, "gov.m.plan_t", files=2)
    polaris.create(["m"], "plan-compaction", COMPACTION, content(config={
        "target_file_size_bytes": 4096, "compaction_strategy": "bin-pack", "min-input-files": 2, "colour": "blue"}))
    polaris.create(["m"], "plan-orphans", ORPHANS, json.dumps({
        "enable": True, "locations": ["s3://warehouse", "s3://warehouse/elsewhere"], "max_orphan_file_age_in_days": 5}))
    polaris.attach(["m"], "plan-compaction", "namespace", ["m"])
    polaris.attach(["m"], "plan-orphans", "table-like", ["m", "plan_t"])
    try:
        proc = run_cli("maintain", "gov.m.plan_t", "--dry-run", "--catalog", "gov", "--uri", policies.url,
                       "--credential", lakehouse.info.credential, "--state-file", str(tmp_path / "state.json"))
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout
        assert "gov.m.plan_t:" in out
        assert "system.data-compaction plan-compaction@v0 [inherited (policy m.plan-compaction)]" in out
        assert ("run: CALL gov.system.rewrite_data_files(table => 'm.plan_t', strategy => 'binpack', options => "
                "map('target-file-size-bytes', '4096', 'min-input-files', '2'))") in out
        assert "ignored unknown config keys: colour" in out
        assert "REFUSED: s3://warehouse is a bucket root" in out
        assert "REFUSED: s3://warehouse/elsewhere is outside the table's location" in out
        assert "older_than => TIMESTAMP" in out and SECRET not in out + proc.stderr
        assert data_files(spark, "gov.m.plan_t") == 2  # a dry run changes nothing
        as_json = run_cli("maintain", "gov.m.plan_t", "--dry-run", "--json", "--catalog", "gov", "--uri", policies.url,
                          "--credential", lakehouse.info.credential, "--state-file", str(tmp_path / "state.json"))
        [table] = json.loads(as_json.stdout)["tables"]
        compaction = next(a for a in table["actions"] if a["procedure"] == "rewrite_data_files")
        assert compaction["unknown_keys"] == ["colour"] and compaction["policy"] == "plan-compaction@v0"
        assert [a["refused"] is not None for a in table["actions"] if a["procedure"] == "remove_orphan_files"] == [True, True]

        # The same policies from a file (catalogs without the policy API) give the same plan.
        policy_file = tmp_path / "policies.json"
        policy_file.write_text(json.dumps({"policies": [
            {"policy-type": COMPACTION, "name": "plan-compaction", "version": 0, "inheritable": True,
             "content": polaris.applicable(namespace="m", policyType=COMPACTION)["applicable-policies"][0]["content"],
             "target": {"type": "namespace", "path": ["m"]}}]}))
        from_file = pce.maintenance.plan(spark, "gov.m.plan_t", policy_file=policy_file, state_file=tmp_path / "s")
        [action] = from_file.tables[0].actions
        assert action.procedure == "rewrite_data_files" and action.origin == "inherited from namespace m"
        assert action.args["options"] == {"target-file-size-bytes": "4096", "min-input-files": "2"}
        assert FilePolicySource(policy_file).applicable(["other"], "t") == []
    finally:
        polaris.client.call("POST", "/polaris/v1/{prefix}/namespaces/m/policies/plan-compaction/mappings",
                               json={"target": {"type": "namespace", "path": ["m"]}})


def test_a_catalog_without_the_policy_api_is_one_clear_error(spark, lakehouse, tmp_path):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.nopolicy")
    spark.sql("CREATE TABLE IF NOT EXISTS lake.nopolicy.t (id BIGINT) USING iceberg")
    proc = run_cli("maintain", "lake.nopolicy", "--dry-run", "--uri", lakehouse.info.iceberg_uri,
                   "--credential", lakehouse.info.credential, "--state-file", str(tmp_path / "s.json"))
    assert_one_line_error(proc, "has no Polaris policy API", "--policy-file")


def test_run_compacts_expires_and_skips_unchanged_tables(spark, gov, polaris, tmp_path):
    small_files_table(spark, "gov.m.run_t", files=6)
    polaris.create(["m"], "run-compaction", COMPACTION, content(config={"target_file_size_bytes": 64 * 1024 * 1024}))
    polaris.create(["m"], "run-expiry", EXPIRY, content(config={"max_snapshot_age_days": 0.00001,
                                                                 "min_snapshot_to_keep": 1}))
    polaris.attach(["m"], "run-compaction", "table-like", ["m", "run_t"])
    polaris.attach(["m"], "run-expiry", "table-like", ["m", "run_t"])
    polaris.create(["m"], "run-orphans", ORPHANS, content(max_orphan_file_age_in_days=3))
    polaris.attach(["m"], "run-orphans", "table-like", ["m", "run_t"])
    snapshots_before = spark.sql("SELECT count(*) FROM gov.m.run_t.snapshots").first()[0]
    time.sleep(1.0)  # every snapshot is now older than max_snapshot_age_days
    state = tmp_path / "state.json"
    seen = []
    pce.events.subscribe(seen.append)
    try:
        report = pce.maintenance.run(spark, "gov.m.run_t", state_file=state, progress=seen.append)
    finally:
        pce.events.unsubscribe(seen.append)
    [row] = report.tables
    assert row.status == "ok", row.error
    assert row.files_rewritten == 6 and row.bytes_rewritten > 0
    assert data_files(spark, "gov.m.run_t") == 1
    assert spark.table("gov.m.run_t").count() == 300
    assert snapshots_before == 6
    assert row.snapshots_expired == 6  # all but the compaction's own snapshot
    assert spark.sql("SELECT count(*) FROM gov.m.run_t.snapshots").first()[0] == 1
    assert any("[1/1] gov.m.run_t: rewrite_data_files done" in str(s) for s in seen)
    kinds = [(e.type, e.fields["action"]) for e in seen
             if isinstance(e, pce.events.Event) and e.type.startswith("maintenance.")]
    assert kinds == [("maintenance.action.started", "rewrite_data_files"), ("maintenance.action.finished", "rewrite_data_files"),
                     ("maintenance.action.started", "expire_snapshots"), ("maintenance.action.finished", "expire_snapshots"),
                     ("maintenance.action.started", "remove_orphan_files"), ("maintenance.action.finished", "remove_orphan_files")]
    assert row.orphans_removed == 0  # every file is younger than 3 days: listed, none deleted
    print(report.render())

    again = pce.maintenance.run(spark, "gov.m.run_t", state_file=state)
    assert again.tables[0].status == "skipped"
    polaris.update(["m"], "run-expiry", content(config={"min_snapshot_to_keep": 1}), 0)  # version 1
    changed = pce.maintenance.plan(spark, "gov.m.run_t", state_file=state)
    assert changed.tables[0].skip is None and changed.tables[0].versions[EXPIRY] == "m.run-expiry@v1"


def test_one_failing_table_does_not_stop_the_others_and_sets_the_exit_status(spark, gov, polaris, lakehouse, policies, tmp_path):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS gov.f")
    small_files_table(spark, "gov.f.good", files=3)
    small_files_table(spark, "gov.f.bad", files=3)
    polaris.create(["f"], "f-compaction", COMPACTION, content(config={"min-input-files": 2}))
    polaris.create(["f"], "bad-compaction", COMPACTION, content(config={"compaction_strategy": "sort",
                                                                         "sort_order": "no_such_column ASC"}))
    polaris.attach(["f"], "f-compaction", "namespace", ["f"])
    polaris.attach(["f"], "bad-compaction", "table-like", ["f", "bad"])  # overrides the namespace's
    proc = run_cli("maintain", "gov.f", "--catalog", "gov", "--uri", policies.url, "--credential",
                   lakehouse.info.credential, "--state-file", str(tmp_path / "state.json"), "--force")
    print(proc.stdout)
    assert proc.returncode == 1, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["table", "status", "files", "rewritten", "bytes", "snapshots", "expired", "orphans",
                                "removed", "duration"]
    good = next(line for line in lines if line.startswith("gov.f.good"))
    assert good.split()[1:3] == ["ok", "3"]
    assert next(line for line in lines if line.startswith("gov.f.bad")).split()[1] == "failed"
    assert "2 table(s): 1 maintained, 0 skipped, 1 failed" in proc.stdout
    assert "[2/2]" in proc.stderr or "[1/2]" in proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    assert data_files(spark, "gov.f.good") == 1 and data_files(spark, "gov.f.bad") == 3


# --------------------------------------------------------------------------- reading through Spark's own catalog


def test_run_reads_through_sparks_catalog_when_the_conf_holds_no_secret(spark, lakehouse, policies, polaris, tmp_path):
    """Issue 17: inside Spark, maintain reads namespaces, tables and policies through the Spark
    catalog's own session. Once that catalog has started, its secrets are removed from the conf
    (where the Spark UI would show them): maintain still plans and compacts, with no second session
    built from credentials read back out of the JVM."""
    add_spark_catalog(spark, lakehouse, "sealed", policies.url)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS sealed.s")  # the catalog starts here, with its credential
    prefix = "spark.sql.catalog.sealed."
    conf = spark.sparkContext._jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(
        spark._jsparkSession.conf().getAll()).asJava()
    secret_keys = [k for k in conf if k.startswith(prefix) and SECRET in str(conf[k])]
    assert secret_keys, "the catalog's credential should be in the conf before it is removed"
    for key in secret_keys:
        spark.conf.unset(key)
    from pyspark_catalog_ext.spark.catalog_reader import SparkCatalogReader

    reader = SparkCatalogReader(spark, "sealed")  # the state file's key parts, as CatalogClient has them
    assert (reader.safe_uri, reader.warehouse) == (polaris.client.safe_uri, polaris.client.warehouse)
    small_files_table(spark, "sealed.s.t", files=3)
    polaris.create(["s"], "sealed-compaction", COMPACTION, content(config={"min-input-files": 2}))
    polaris.attach(["s"], "sealed-compaction", "table-like", ["s", "t"])
    seen: list = []
    report = pce.maintenance.run(spark, "sealed.s", state_file=tmp_path / "state.json", progress=seen.append)
    [row] = report.tables
    assert row.status == "ok", row.error
    assert row.files_rewritten == 3 and data_files(spark, "sealed.s.t") == 1
    assert not any(SECRET in str(line) for line in seen)


def test_policies_through_spark_need_the_shim_or_a_policy_file(spark, lakehouse, tmp_path):
    """A catalog without the policy API (SeaweedFS itself) is PolicyApiUnavailableError through the
    shim's raw GET too; a catalog without the shim cannot GET its routes, so it names the fixes,
    and with a policy file it is planned through Spark all the same."""
    from pyspark_catalog_ext.errors import PolicyApiUnavailableError

    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.nopolicy")
    spark.sql("CREATE TABLE IF NOT EXISTS lake.nopolicy.t (id BIGINT) USING iceberg")
    with pytest.raises(PolicyApiUnavailableError) as none:
        pce.maintenance.plan(spark, "lake.nopolicy", state_file=tmp_path / "s.json")
    assert "has no Polaris policy API" in str(none.value) and "--policy-file" in str(none.value)
    assert "\n" not in str(none.value)

    admin = add_admin_spark_catalog(spark, lakehouse)  # type=rest without the shim
    with pytest.raises(PolicyApiUnavailableError) as plain:
        pce.maintenance.plan(spark, f"{admin}.nopolicy", state_file=tmp_path / "s.json")
    assert "does not use catalog-impl" in str(plain.value) and "--policy-file" in str(plain.value)
    policy_file = tmp_path / "policies.json"
    policy_file.write_text(json.dumps({"policies": [
        {"policy-type": EXPIRY, "name": "keep-2", "version": 1, "inheritable": True,
         "content": content(config={"min_snapshot_to_keep": 2}), "target": {"type": "namespace", "path": ["nopolicy"]}}]}))
    planned = pce.maintenance.plan(spark, f"{admin}.nopolicy.t", policy_file=policy_file, state_file=tmp_path / "s.json")
    [table] = planned.tables
    assert table.error is None and [a.procedure for a in table.actions] == ["expire_snapshots"]
    assert table.location.startswith("s3://")
    for target, needle in (("nosuchcatalog.db", "no Spark catalog 'nosuchcatalog' in this session"),
                           ("spark_catalog.default", "Spark catalog 'spark_catalog' is not an Iceberg catalog")):
        with pytest.raises(ConfigError) as wrong:
            pce.maintenance.plan(spark, target, policy_file=policy_file, state_file=tmp_path / "s.json")
        assert needle in str(wrong.value) and "\n" not in str(wrong.value), str(wrong.value)
    with pytest.raises(pce.CatalogNotFoundError) as missing:
        pce.maintenance.plan(spark, f"{admin}.nopolicy.nope", policy_file=policy_file, state_file=tmp_path / "s.json")
    assert "no table or namespace nopolicy.nope" in str(missing.value)


# --------------------------------------------------------------------------- long maintenance, short credentials

LIFETIME = 10


def test_compaction_outlives_fast_expiring_credentials(spark, lakehouse, tmp_path):
    """The rewrite reads 24 files through an S3 proxy that slows every GET and kills keys after
    10 s; the catalog proxy vends 10 s credentials. The shim's refresh keeps the job alive."""
    with S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)) as s3, \
            CatalogProxy(lakehouse.info.iceberg_uri, short_lifetime_seconds=LIFETIME, s3_endpoint=s3.url,
                         s3_proxy=s3) as catalog, PolicyServer(catalog.url) as server:
        add_spark_catalog(spark, lakehouse, "slowgov", server.url)
        manager = pce.attach(spark, policy=pce.RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4))
        spark.sql("CREATE NAMESPACE IF NOT EXISTS slowgov.long")
        spark.range(0, 1200, 1, 24).selectExpr("id", "cast(id AS STRING) AS v").writeTo("slowgov.long.t").create()
        props = catalog_properties("local", uri=server.url, lakehouse=lakehouse, warehouse=lakehouse.info.warehouse,
                                   credential=lakehouse.info.credential, shim=False)
        with open_catalog(props) as c:
            admin = Polaris(c)
            admin.create(["long"], "c", COMPACTION, content(config={"max-concurrent-file-group-rewrites": 1}))
            admin.attach(["long"], "c", "namespace", ["long"])
        s3.reset_counters()
        s3.max_age_seconds = LIFETIME
        s3.get_delay_seconds = 0.6  # Iceberg 1.12 reads these files in fewer GETs than 1.10 did
        try:
            started = time.monotonic()
            report = pce.maintenance.run(spark, "slowgov.long", state_file=tmp_path / "s.json", progress=lambda s: None)
            elapsed = time.monotonic() - started
        finally:
            s3.get_delay_seconds = 0.0
            s3.max_age_seconds = None
            manager.set_policy(pce.RefreshPolicy())
        [row] = report.tables
        assert row.status == "ok", row.error
        assert row.files_rewritten == 24
        print(f"compaction took {elapsed:.1f}s with {LIFETIME}s credentials")
        assert elapsed > 1.5 * LIFETIME, f"the compaction took {elapsed:.1f}s: too short to prove anything"
        assert (late := s3.signed_with_dying_keys(0.0, LIFETIME)) is None, late
        vended = [k for k in s3.forwarded_by_key if k != lakehouse.info.access_key]
        assert len(vended) >= 2, "the compaction should have needed refreshed credentials"
        assert spark.table("slowgov.long.t").count() == 1200


# --------------------------------------------------------------------------- orphan removal: whose files are here


def test_orphan_removal_keeps_the_files_of_a_table_nested_in_the_location(spark, gov, polaris, client, lakehouse,
                                                                          tmp_path):
    """Another table keeps data under this table's location: remove_orphan_files would delete it
    (only that table's metadata references it). Refused when planning, and again when a plan made
    before the nested table was created is run. Same check as `staged cleanup` (tables_under)."""
    from tests.spark.test_staging import s3_admin, s3_exists, table_files, unique

    outer, nested = unique("outer"), unique("nested")
    spark.sql(f"CREATE TABLE gov.m.{outer} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO gov.m.{outer} SELECT id FROM range(3)")
    location = client.load_table_json(("m", outer))["metadata"]["location"].rstrip("/")
    polaris.create(["m"], f"{outer}-orphans", ORPHANS, content(max_orphan_file_age_in_days=3))
    polaris.attach(["m"], f"{outer}-orphans", "table-like", ["m", outer])
    state = tmp_path / "state.json"
    early = pce.maintenance.plan(spark, f"gov.m.{outer}", state_file=state)
    [action] = early.tables[0].actions
    assert action.procedure == "remove_orphan_files" and action.refused is None  # nothing nested yet

    admin = add_admin_spark_catalog(spark, lakehouse)
    spark.sql(f"CREATE TABLE {admin}.m.{nested} (id BIGINT) USING iceberg "
              f"TBLPROPERTIES ('write.data.path'='{location}/data/nested')")
    spark.sql(f"INSERT INTO {admin}.m.{nested} SELECT id FROM range(5)")
    files = table_files(spark, f"{admin}.m.{nested}")
    assert any(f.replace("s3a://", "s3://").startswith(location + "/data/nested/") for f in files), files

    [refused] = pce.maintenance.plan(spark, f"gov.m.{outer}", state_file=state).tables[0].actions
    assert refused.refused and f"m.{nested}" in refused.refused and "\n" not in refused.refused
    seen: list = []
    report = pce.maintenance.run(spark, early, state_file=state, progress=seen.append)  # the stale plan
    assert report.tables[0].status == "ok" and report.tables[0].actions == []
    assert any(f"remove_orphan_files refused: table(s) m.{nested}" in str(s) for s in seen), seen
    s3 = s3_admin(lakehouse)
    assert all(s3_exists(s3, f) for f in files)
    assert spark.table(f"{admin}.m.{nested}").count() == 5


@pytest.mark.parametrize("tail", ["/../..", "/data/..", "/%2e%2e/%2E%2E", "/%252e%252e"])
def test_orphan_removal_refuses_locations_with_dot_segments(spark, gov, polaris, client, tmp_path, tail):
    from tests.spark.test_staging import unique

    name = unique("dots")
    spark.sql(f"CREATE TABLE gov.m.{name} (id BIGINT) USING iceberg")
    location = client.load_table_json(("m", name))["metadata"]["location"].rstrip("/")
    polaris.create(["m"], f"{name}-orphans", ORPHANS, content(locations=[location + tail]))
    polaris.attach(["m"], f"{name}-orphans", "table-like", ["m", name])
    [action] = pce.maintenance.plan(spark, f"gov.m.{name}", state_file=tmp_path / "s.json").tables[0].actions
    assert action.procedure == "remove_orphan_files"
    assert action.refused and "'..' path segment" in action.refused and "\n" not in action.refused
