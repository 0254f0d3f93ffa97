"""Issue 18's steps 7 (maintenance policies and notifications) on every emulated catalog family,
and Lakekeeper's quirks (shared/README.md §6) on its emulator, each against the real SeaweedFS.

Step 7: emulated Polaris serves its policy and notification APIs (the reference PolicyServer,
checked against the `apache-polaris` SDK models); `maintain` plans from them and notifications
reach the mirror (Polaris 1.7.0 and main stand for an external catalog there; 1.4.1's internal
catalog refuses them in one line, as the real one answered 400). Every other family has neither API: `maintain` stops with one line naming the
limit and the way out (a policy file), and a notification fails with one line naming it.

Quirks: lakekeeper#1959 (a replayed staged create answers 500) is handled in the JVM's
CommitGuard; lakekeeper#1862 (a conditional load answered 304 with expired keys) cannot reach
our clients, which never send a conditional load: proven here on the emulator.
"""
from __future__ import annotations

import json
import time
import uuid

import pyarrow as pa
import pytest
import requests

from pyspark_catalog_ext import events
from pyspark_catalog_ext.catalog.rest import CatalogClient, open_catalog
from pyspark_catalog_ext.doctor.matrix import NOT_APPLICABLE, REFUSED, WORKS, step_record
from pyspark_catalog_ext.errors import CatalogUnsupportedError, ConfigError
from pyspark_catalog_ext.governance.notifications import NotificationSink
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.spark.conf import catalog_properties, spark_conf
from tests.conftest import run_cli
from tests.emulators import FAMILIES, R2_TOKEN, Behaviour, Emulator, cli_args, connection
from tests.emulators.behaviour import (
    INTERNAL,
    LAKEKEEPER_0_13,
    LAKEKEEPER_0_13_SIGNING_CONFIG,
    NESSIE,
    NONE,
    POLARIS_MAIN,
    REJECTED,
    S3_TABLES,
)
from tests.emulators.recording import check_matrix
from tests.helpers import REST_ID_SCHEMA
from tests.servers import S3ExpiryProxy

NS = "emugov"
LIFETIME = 600.0  # these steps are about APIs and answers, not expiry: keys outlive every test
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=True)])


def catalog_name(b: Behaviour) -> str:
    return "gov_" + "".join(c if c.isalnum() else "_" for c in b.id)


@pytest.fixture(scope="module")
def s3(lakehouse):
    proxy = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    proxy.max_age_seconds = None
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def emulators(lakehouse, s3):
    emus = {b.id: Emulator(b, lakehouse, s3, LIFETIME).start() for b in FAMILIES}
    yield emus
    for emu in emus.values():
        emu.stop()


@pytest.fixture(scope="module")
def aws_env(lakehouse):
    """Glue's jobs sign with their own AWS keys (here the admin key)."""
    return {"AWS_ACCESS_KEY_ID": lakehouse.info.access_key, "AWS_SECRET_ACCESS_KEY": lakehouse.info.secret_key,
            "AWS_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def shared_table(lakehouse):
    """One committed table in the one SeaweedFS warehouse every family fronts (written by the admin)."""
    admin = pyiceberg_catalog(lakehouse)
    admin.create_namespace_if_not_exists(NS)
    name = f"{NS}.shared"
    if admin.table_exists(name):
        admin.drop_table(name)
    table = admin.create_table(name, SCHEMA)
    table.append(pa.table({"id": pa.array(range(10), pa.int64())}, schema=SCHEMA))
    return name


def _polaris_admin(b: Behaviour, emu: Emulator) -> CatalogClient:
    props = catalog_properties(b.profile, shim=False, **connection(b, emu))
    return open_catalog(props)


# ------------------------------------------------------------------------------------------ step 7
@pytest.mark.parametrize("b", FAMILIES, ids=lambda b: b.id)
def test_7_maintain_plans_from_the_catalogs_policies_or_names_the_limit(request, b, emulators, shared_table, aws_env):
    """`maintain --dry-run` with the family's profile: Polaris's applicable-policies drive the plan;
    elsewhere one line says the catalog has no policy API and to pass a policy file."""
    emu = emulators[b.id]
    target = f"lake.{shared_table}"
    if b.polaris_apis:
        policy = f"expiry_{uuid.uuid4().hex[:8]}"
        content = json.dumps({"version": "2025-02-03", "enable": True, "config": {"max_snapshot_age_days": 7,
                                                                                 "min_snapshot_to_keep": 1}})
        with _polaris_admin(b, emu) as admin:
            admin.call("POST", f"/polaris/v1/{{prefix}}/namespaces/{NS}/policies",
                          json={"name": policy, "type": "system.snapshot-expiry", "content": content})
            admin.call("PUT", f"/polaris/v1/{{prefix}}/namespaces/{NS}/policies/{policy}/mappings",
                          json={"target": {"type": "table-like", "path": [NS, "shared"]}})
        try:
            proc = run_cli("maintain", target, "--dry-run", "--json", "--force", *cli_args(b, emu), timeout=120)
            assert proc.returncode == 0, proc.stderr[-1500:]
            plan = json.loads(proc.stdout)
            (table,) = plan["tables"]
            assert table["versions"] == {"system.snapshot-expiry": f"{NS}.{policy}@v0"}, table
            assert [a["procedure"] for a in table["actions"]] == ["expire_snapshots"], table
            assert not emu.polaris.sdk_mismatches, emu.polaris.sdk_mismatches
            check_matrix(request, b, "step-7", step_record(
                WORKS, "maintain plans from the catalog's applicable-policies"))
        finally:
            with _polaris_admin(b, emu) as admin:  # detach: the other Polaris family shares the namespace
                admin.call("POST", f"/polaris/v1/{{prefix}}/namespaces/{NS}/policies/{policy}/mappings",
                              json={"target": {"type": "table-like", "path": [NS, "shared"]}})
        return
    proc = run_cli("maintain", target, "--dry-run", "--json", *cli_args(b, emu),
                   env=aws_env if b.auth == "sigv4" else None, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and not proc.stdout.strip(), (proc.returncode, proc.stdout[-500:])
    assert len(lines) == 1 and "has no Polaris policy API" in lines[0] and "--policy-file" in lines[0], proc.stderr[-1500:]
    assert emu.info.secret_key not in proc.stderr and R2_TOKEN not in proc.stderr
    check_matrix(request, b, "step-7", step_record(REFUSED, lines[0].removeprefix("error: ")))


def test_7_maintain_runs_the_catalogs_policy_on_emulated_polaris(spark, lakehouse, s3, tmp_path):
    """Not only the plan: `maintain` runs the snapshot-expiry policy Polaris hands out for a table
    written through emulated Polaris, and the table keeps exactly what the policy says."""
    from pyspark_catalog_ext.governance import maintenance

    b = POLARIS_MAIN
    with Emulator(b, lakehouse, s3, LIFETIME) as emu:
        cat = _register(spark, b, emu, "maint")
        name = f"maint_{uuid.uuid4().hex[:8]}"
        table = f"{cat}.{NS}.{name}"
        spark.sql(f"CREATE TABLE {table} (id BIGINT)")
        for i in range(3):
            spark.sql(f"INSERT INTO {table} VALUES ({i})")
        content = json.dumps({"version": "2025-02-03", "enable": True,
                              "config": {"max_snapshot_age_days": 0.00001, "min_snapshot_to_keep": 1}})
        with _polaris_admin(b, emu) as admin:
            admin.call("POST", f"/polaris/v1/{{prefix}}/namespaces/{NS}/policies",
                          json={"name": f"p_{name}", "type": "system.snapshot-expiry", "content": content})
            admin.call("PUT", f"/polaris/v1/{{prefix}}/namespaces/{NS}/policies/p_{name}/mappings",
                          json={"target": {"type": "table-like", "path": [NS, name]}})
        assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0] == 3
        time.sleep(1.5)  # every snapshot is now older than the policy's 0.864 s
        report = maintenance.run(spark, table, state_file=tmp_path / "state.json", force=True, progress=lambda _: None)
        assert not report.failed, report.as_dict()
        (result,) = report.tables
        assert result.status == "ok" and result.snapshots_expired == 2, report.as_dict()
        spark.sql(f"REFRESH TABLE {table}")
        assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0] == 1
        assert spark.table(table).count() == 3 and not emu.polaris.sdk_mismatches


@pytest.mark.parametrize("b", FAMILIES, ids=lambda b: b.id)
def test_7_notifications_reach_emulated_polaris_or_fail_naming_the_limit(b, emulators, shared_table, lakehouse,
                                                                         aws_env, monkeypatch):
    """A commit's notifications (VALIDATE, then CREATE) to the family as the mirror catalog: Polaris
    admits them; a family without the API reports one failed notification with one line naming it,
    and the sink sends nothing more for that table."""
    if b.auth == "sigv4":  # Glue: the mirror client signs with the job's own AWS keys
        for key, value in aws_env.items():
            monkeypatch.setenv(key, value)
    emu = emulators[b.id]
    source = open_catalog(catalog_properties("local", lakehouse=lakehouse, shim=False))
    mirror = _polaris_admin(b, emu)
    sink = NotificationSink(source, mirror, "lake", clock=time.time)
    seen: list[events.Event] = []
    listener = events.subscribe(lambda e: seen.append(e) if e.type == "notification.finished" else None)
    try:
        sink.deliver(events.Event("commit.finished", {"source": "jvm", "outcome": "committed", "create": True,
                                                       "table": f"lake.{shared_table}"}))
    finally:
        events.unsubscribe(listener)
        sink.close()
        source.close()
        mirror.close()
    outcomes = [(e.fields["notification_type"], e.fields["outcome"]) for e in seen]
    if b.polaris_apis and b.notifications == INTERNAL:  # Polaris 1.4.1 recorded: an internal catalog refuses them
        assert outcomes == [("VALIDATE", "failed")], outcomes
        error = seen[0].fields.get("error", "")
        assert "\n" not in error and "Cannot update internal catalog via notifications" in error, error
        return
    if b.polaris_apis:
        assert outcomes == [("VALIDATE", "sent"), ("CREATE", "sent")], outcomes
        assert emu.polaris.mirrored[shared_table]["table-name"] == "shared"
        assert not emu.polaris.sdk_mismatches, emu.polaris.sdk_mismatches
        # the mirror keeps the newest: a second CREATE is refused, and a DROP clears it for the next family run
        with _polaris_admin(b, emu) as admin:
            admin.call("POST", f"/v1/{{prefix}}/namespaces/{NS}/tables/shared/notifications",
                          json={"notification-type": "DROP", "payload": {
                              **{k: v for k, v in emu.polaris.mirrored[shared_table].items() if k != "metadata"},
                              "timestamp": int(time.time() * 1000) + 10_000}})
        return
    assert outcomes == [("VALIDATE", "failed")], outcomes
    error = seen[0].fields.get("error", "")
    assert "\n" not in error and "notifications" in error and "does not implement" in error, error


# ------------------------------------------------------------------------------------------ quirks
def _register(spark, b: Behaviour, emu: Emulator, suffix: str, **kwargs) -> str:
    """A Spark catalog for this emulator; a new name per emulator (Spark keeps a catalog once loaded)."""
    name = f"{catalog_name(b)}_{suffix}"
    for key, value in spark_conf(b.profile, name, jars=None, **connection(b, emu), **kwargs).items():
        if key.startswith(f"spark.sql.catalog.{name}"):
            spark.conf.set(key, value)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}.{NS}")
    return name


def test_lakekeeper_replayed_stage_create_500_does_not_fail_the_ctas(spark, lakehouse, s3):
    """lakekeeper#1959: the stage-create's answer is lost, the guard repeats it; under the same
    Idempotency-Key Lakekeeper 0.13 answers 500 and the CTAS would fail. A stage-create publishes
    nothing, so the JVM repeats it under a new key: one table, the rows exactly once."""
    b = LAKEKEEPER_0_13
    assert b.replayed_stage_create_500
    with Emulator(b, lakehouse, s3, LIFETIME) as emu:
        cat = _register(spark, b, emu, "replay")
        table = f"{cat}.{NS}.ctas_{uuid.uuid4().hex[:8]}"
        fault = emu.faults.add("drop", "POST", rf"/namespaces/{NS}/tables$")  # the stage-create: applied, answer lost
        spark.sql(f"CREATE TABLE {table} AS SELECT id, id * 2 AS v FROM range(0, 50)")
        assert fault.fired == 1
        assert spark.sql(f"SELECT count(*), sum(v) FROM {table}").first() == (50, 2 * sum(range(50)))
        stages = [e for e in emu.log if e["kind"] == "stage-create"]
        assert len(stages) == 2 and all(e["idempotency_key"] for e in stages), stages
        assert stages[0]["idempotency_key"] != stages[1]["idempotency_key"]
        assert not emu.refused and all(e["status"] != 500 for e in emu.log), emu.refused


def test_lakekeeper_replayed_stage_create_answers_500_on_the_emulator(lakehouse, s3, shared_table):
    """The switch itself: the same stage-create under a seen key is the 500 the test above avoids."""
    b = LAKEKEEPER_0_13
    with Emulator(b, lakehouse, s3, LIFETIME) as emu:
        body = {"name": f"s_{uuid.uuid4().hex[:8]}", "stage-create": True,
                "schema": REST_ID_SCHEMA}
        headers = _bearer(emu) | {"Idempotency-Key": str(uuid.uuid4())}
        url = f"{emu.url}/v1/{b.prefix}/namespaces/{NS}/tables"
        assert requests.post(url, json=body, headers=headers, timeout=30).status_code == 200
        assert requests.post(url, json=body, headers=headers, timeout=30).status_code == 500
        headers["Idempotency-Key"] = str(uuid.uuid4())
        assert requests.post(url, json=body, headers=headers, timeout=30).status_code == 200


def _bearer(emu: Emulator) -> dict:
    resp = requests.post(f"{emu.url}/v1/oauth/tokens", data={"grant_type": "client_credentials",
                                                             "client_id": emu.info.access_key,
                                                             "client_secret": emu.info.secret_key,
                                                             "scope": emu.b.scope or "catalog"}, timeout=30)
    resp.raise_for_status()
    return {"Authorization": f"Bearer {resp.json()['access_token']}"}


def test_lakekeeper_stale_304_never_reaches_our_clients(spark, lakehouse, s3):
    """lakekeeper#1862 needs a conditional load (If-None-Match). Neither Iceberg 1.10.2 (Spark, and
    the shim's reloads) nor PyIceberg sends one, though every load answer carries an ETag: no load
    is answered 304, so no expired key is kept. The switch answers 304 when asked (last lines)."""
    b = LAKEKEEPER_0_13
    assert b.stale_load_304
    with Emulator(b, lakehouse, s3, LIFETIME) as emu:
        cat = _register(spark, b, emu, "stale")
        table = f"{cat}.{NS}.stale_{uuid.uuid4().hex[:8]}"
        spark.sql(f"CREATE TABLE {table} (id BIGINT)")
        spark.sql(f"INSERT INTO {table} SELECT id FROM range(0, 5)")
        spark.sql(f"REFRESH TABLE {table}")
        assert spark.table(table).count() == 5
        py = pyiceberg_catalog(spark_conf(b.profile, cat, jars=None, **connection(b, emu)), cat, refresh=False)
        short = table.split(".", 1)[1]
        for _ in range(2):
            assert py.load_table(short).scan().to_arrow().num_rows == 5
        loads = [e for e in emu.log if e["kind"] == "load" and e["method"] == "GET"]
        assert sum(e["status"] == 200 for e in loads) >= 3, loads  # Spark's loads and PyIceberg's, each with an ETag
        assert emu.conditional_loads == 0 and not [e for e in loads if e["status"] == 304], loads
        # The emulator does answer 304 to a conditional load: a client that started sending one would show.
        url = f"{emu.url}/v1/{b.prefix}/namespaces/{NS}/tables/{short.split('.')[-1]}"
        first = requests.get(url, headers=_bearer(emu), timeout=30)
        assert first.status_code == 200 and first.headers.get("ETag")
        again = requests.get(url, headers=_bearer(emu) | {"If-None-Match": first.headers["ETag"]}, timeout=30)
        assert again.status_code == 304 and emu.conditional_loads == 1


def test_polaris_apis_only_on_polaris(emulators):
    """The switch: Polaris families route /polaris/v1 to the reference server, others have no route."""
    for b in FAMILIES:
        emu = emulators[b.id]
        assert (emu.polaris is not None) == b.polaris_apis == (b.family == "polaris"), b.id
    assert POLARIS_MAIN.polaris_apis


# ------------------------------------------------------------------------------------------ step 8
SIGNERS = (LAKEKEEPER_0_13, NESSIE, LAKEKEEPER_0_13_SIGNING_CONFIG)


@pytest.mark.parametrize("b", SIGNERS, ids=lambda b: b.id)
def test_8_remote_signing_ctas_and_read_with_no_storage_key(request, b, spark, lakehouse, s3):
    """The family's profile with delegation='remote-signing': a CTAS and a read where every S3
    request is signed by the catalog's signer (Iceberg 1.10's s3.signer.* form, or 1.12's
    remote-signing-config, which the shim turns into the former) and Spark never holds a key."""
    with Emulator(b, lakehouse, s3, LIFETIME) as emu:
        cat = _register(spark, b, emu, "sign", delegation="remote-signing")
        table = f"{cat}.{NS}.signed_{uuid.uuid4().hex[:8]}"
        s3.reset_counters()
        spark.sql(f"CREATE TABLE {table} AS SELECT id, id * 3 AS v FROM range(0, 200, 1, 2)")
        assert spark.sql(f"SELECT count(*), sum(v) FROM {table}").first() == (200, 3 * sum(range(200)))
        assert emu.signed >= 4 and not emu.sign_refused, emu.sign_refused
        assert set(s3.forwarded_by_key) == {lakehouse.info.access_key}  # only the signer's signatures reached S3
        loaded = spark._jsparkSession.sessionState().catalogManager().catalog(cat)
        ident = spark._jvm.org.apache.spark.sql.connector.catalog.Identifier.of(
            _java_array(spark, [NS]), table.rsplit(".", 1)[1])
        props = dict(loaded.loadTable(ident).table().io().properties())
        assert props.get("s3.remote-signing-enabled") == "true"
        assert not [k for k in props if k in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")], props
    if b in FAMILIES:
        check_matrix(request, b, "step-8", step_record(WORKS, "CTAS and read signed by the catalog's signer; Spark holds no storage key"))


def _java_array(spark, items: list[str]):
    arr = spark.sparkContext._gateway.new_array(spark._jvm.String, len(items))
    for i, item in enumerate(items):
        arr[i] = item
    return arr


@pytest.mark.parametrize("b", [f for f in FAMILIES if f.signer == REJECTED], ids=lambda b: b.id)
def test_8_remote_signing_is_refused_up_front_where_the_catalog_rejects_it(request, b, emulators, shared_table):
    """Polaris, Gravitino, Unity: the configuration itself is refused in one line naming the limit
    (before Spark starts, so before any data is written); the emulated catalog does answer a
    remote-signing load with 400, which is what the refusal spares the user."""
    emu = emulators[b.id]
    with pytest.raises(ConfigError) as err:
        spark_conf(b.profile, catalog_name(b), jars=None, delegation="remote-signing", **connection(b, emu))
    message = str(err.value)
    assert "\n" not in message and "cannot use delegation 'remote-signing'" in message and "vended-credentials" in message
    token = _bearer(emu)["Authorization"] if b.auth == "oauth2" else f"Bearer {R2_TOKEN}"
    url = f"{emu.url}/v1/{b.prefix}/namespaces/{NS}/tables/shared"
    vended = requests.get(url, headers={"Authorization": token, "X-Iceberg-Access-Delegation": "vended-credentials"}, timeout=30)
    signing = requests.get(url, headers={"Authorization": token, "X-Iceberg-Access-Delegation": "remote-signing"}, timeout=30)
    assert vended.status_code == 200 and signing.status_code == 400, (vended.status_code, signing.text[:300])
    check_matrix(request, b, "step-8", step_record(REFUSED, message))


@pytest.mark.parametrize("b", [f for f in FAMILIES if f.signer == NONE], ids=lambda b: b.id)
def test_8_without_a_signer_the_job_signs_its_own_requests(request, b, emulators, shared_table, aws_env):
    """Glue and R2 have no signer: a remote-signing load comes back in the ordinary form (no
    s3.remote-signing-enabled), so S3FileIO signs in the job with the vended or its own keys."""
    emu = emulators[b.id]
    url = f"{emu.url}/v1/{b.prefix}/namespaces/{NS}/tables/shared"
    headers = {"X-Iceberg-Access-Delegation": "remote-signing"}
    if b.auth == "sigv4":  # Glue: signed with the job's own keys
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        signed = AWSRequest("GET", url, headers=headers)
        SigV4Auth(Credentials(aws_env["AWS_ACCESS_KEY_ID"], aws_env["AWS_SECRET_ACCESS_KEY"]), b.signing_name,
                  "us-east-1").add_auth(signed)
        headers = dict(signed.headers)
    else:
        headers["Authorization"] = _bearer(emu)["Authorization"] if b.auth == "oauth2" else f"Bearer {R2_TOKEN}"
    answer = requests.get(url, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text[:300]
    assert str(answer.json().get("config", {}).get("s3.remote-signing-enabled", "")).lower() != "true"
    check_matrix(request, b, "step-8", step_record(NOT_APPLICABLE, "no remote signer: S3FileIO signs in the job"))


# ------------------------------------------------------------------------------------------ S3 Tables' drop
def test_s3_tables_drop_without_purge_is_refused_in_one_line_and_purge_works(spark, lakehouse, s3, aws_env, monkeypatch):
    """S3 Tables drops a table only with its data (purgeRequested=true). Spark's DROP TABLE and
    PyIceberg's drop_table each get one line naming the limit and the call that works; the table is
    untouched; DROP TABLE ... PURGE / purge_table() drop it."""
    b = S3_TABLES
    system = spark.sparkContext._jvm.java.lang.System
    system.setProperty("aws.accessKeyId", aws_env["AWS_ACCESS_KEY_ID"])  # the job's own keys (default chain)
    system.setProperty("aws.secretAccessKey", aws_env["AWS_SECRET_ACCESS_KEY"])
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    try:
        with Emulator(b, lakehouse, s3, LIFETIME) as emu:
            cat = _register(spark, b, emu, "purge")
            table = f"{cat}.{NS}.drop_{uuid.uuid4().hex[:8]}"
            spark.sql(f"CREATE TABLE {table} (id BIGINT)")
            spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
            with pytest.raises(CatalogUnsupportedError) as err:
                spark.sql(f"DROP TABLE {table}")
            message = str(err.value)
            assert "\n" not in message and "DROP TABLE ... PURGE" in message and "S3 Tables" in message, message
            assert spark.table(table).count() == 2
            spark.sql(f"DROP TABLE {table} PURGE")  # Spark drops without purge: refused, repeated with purge
            assert not spark.catalog.tableExists(table)
            spark_deletes = [e for e in emu.log if e["method"] == "DELETE"]
            assert [(e["status"], "purgerequested=true" in e["path"].lower()) for e in spark_deletes] == [
                (400, False), (400, False), (204, True)], spark_deletes

            py = pyiceberg_catalog(spark_conf(b.profile, cat, jars=None, **connection(b, emu)), cat, refresh=False)
            name = f"{NS}.pydrop_{uuid.uuid4().hex[:8]}"
            py.create_table(name, SCHEMA).append(pa.table({"id": pa.array([1, 2], pa.int64())}, schema=SCHEMA))
            with pytest.raises(CatalogUnsupportedError) as err:
                py.drop_table(name)
            message = str(err.value)
            assert "\n" not in message and "purge_table()" in message and "S3 Tables" in message, message
            assert py.load_table(name).scan().to_arrow().num_rows == 2
            py.purge_table(name)
            assert not py.table_exists(name)
            py_deletes = [e for e in emu.log if e["method"] == "DELETE"][len(spark_deletes):]
            assert [(e["status"], "purgerequested=true" in e["path"].lower()) for e in py_deletes] == [
                (400, False), (204, True)], py_deletes
    finally:
        system.clearProperty("aws.accessKeyId")
        system.clearProperty("aws.secretAccessKey")
