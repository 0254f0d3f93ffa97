"""The user path on every catalog family, each emulated on loopback in front of the real SeaweedFS
(tests/emulators): the family's profile and nothing else, real Spark, Iceberg, PyIceberg and S3.

Steps (the user path's numbering, as in docs/emulated-catalogs.md): 1 configure, 2 CTAS + writeTo().create() outliving >= 3 credential
lifetimes (or refused before any data is written), 3 a long read and a MERGE on a committed table,
6 a PyIceberg scan and append across expiry, 9 `doctor --json`. One Spark session for the module.

What the user sees in steps 2-6 and the doctor's answers are compared with the recording of the
family (pyspark_catalog_ext/resources/matrix/emulated/<family>-<release>.json, rendered into the
README's support matrix and docs/emulated-catalogs.md): a change fails until it is re-recorded with
CATALOG_EXT_RECORD_MATRIX=1.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

from pyspark_catalog_ext.catalog.profiles import get_profile
from pyspark_catalog_ext.doctor import matrix as support_matrix
from pyspark_catalog_ext.doctor.matrix import DEGRADED, NOT_APPLICABLE, REFUSED, WORKS, step_record
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.spark.catalog_check import check_catalog
from pyspark_catalog_ext.spark.conf import CatalogSparkConf, spark_conf
from tests.conftest import run_cli
from tests.emulators import FAMILIES, R2_TOKEN, Behaviour, Emulator, connection
from tests.emulators.behaviour import LAKEKEEPER_0_13_EMPTY_CREDENTIAL, NONE, POLARIS_1_4
from tests.emulators.recording import check_matrix
from tests.refresh_support import register_slow_udf, slow
from tests.servers import S3ExpiryProxy
from tests.user_path import DOCTOR_FAST
from tests.user_path import ctas_sql as _ctas_sql
from tests.user_path import ctas_writeto as _ctas_writeto

LIFETIME = 4.0  # seconds a vended key lives (Spark jobs); >= 3 of them per long job
PY_LIFETIME = 2.0  # PyIceberg steps: a separate emulator + S3 proxy with shorter keys
# Test-scale knobs, as a user sets them for their catalog. assumed_lifetime_s only matters where keys
# come without an expiry (Unity 0.6): the catalog's real credential lifetime, here the emulator's.
FAST = RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.4, assumed_lifetime_s=LIFETIME)
PY_POLICY = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.6, assumed_lifetime_s=PY_LIFETIME)
NS = "emu"

# Findings: (step, family id) -> why the package fails there today. Each runs as xfail(strict=True),
# so a fix turns it into an XPASS failure and the mark must go. (Unity 0.6's keys without expiry,
# unitycatalog#1885, were one until catalog-ext.refresh.assumed-lifetime-ms.)
FINDINGS: dict[tuple[str, str], str] = {}

# Minutes of short-lifetime jobs on ten emulated catalogs in their own SparkSession: `./dev test`
# runs them in the background process, before the real expiry, beside the main run.


def cases(step: str) -> list:
    """FAMILIES as pytest params, with the step's findings marked xfail(strict=True)."""
    out = []
    for b in FAMILIES:
        reason = FINDINGS.get((step, b.id))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(b, id=b.id, marks=marks))
    return out


def catalog_name(b: Behaviour) -> str:
    return "emu_" + "".join(c if c.isalnum() else "_" for c in b.id)


def writable(b: Behaviour) -> bool:
    return not b.read_only


@pytest.fixture(scope="module")
def s3_proxies(lakehouse):
    """Two fast-expiry S3 proxies: LIFETIME for Spark, PY_LIFETIME for PyIceberg. The admin key
    (the Glue family's 'own AWS keys', and test setup) never expires."""
    spark_s3 = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    py_s3 = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    spark_s3.max_age_seconds, py_s3.max_age_seconds = LIFETIME, PY_LIFETIME
    yield spark_s3, py_s3
    spark_s3.stop()
    py_s3.stop()


@pytest.fixture(scope="module")
def emulators(lakehouse, s3_proxies):
    spark_s3, py_s3 = s3_proxies
    emus = {b.id: (Emulator(b, lakehouse, spark_s3, LIFETIME).start(), Emulator(b, lakehouse, py_s3, PY_LIFETIME).start())
            for b in FAMILIES}
    yield emus
    for pair in emus.values():
        for emu in pair:
            emu.stop()


@pytest.fixture(scope="module")
def glue_keys(lakehouse):
    """Glue's and S3 Tables' jobs use their own AWS keys (default provider chain): here the admin key,
    as env vars for subprocesses and JVM system properties for the shared driver."""
    env = {"AWS_ACCESS_KEY_ID": lakehouse.info.access_key, "AWS_SECRET_ACCESS_KEY": lakehouse.info.secret_key,
           "AWS_REGION": "us-east-1"}
    return env


@pytest.fixture(scope="module")
def emu_spark(spark, lakehouse, emulators, glue_keys):
    """The shared session with one catalog per family, registered from spark_conf(profile, ...)."""
    system = spark.sparkContext._jvm.java.lang.System
    system.setProperty("aws.accessKeyId", glue_keys["AWS_ACCESS_KEY_ID"])
    system.setProperty("aws.secretAccessKey", glue_keys["AWS_SECRET_ACCESS_KEY"])
    register_slow_udf(spark)
    for b in FAMILIES:
        conf = spark_conf(b.profile, catalog_name(b), jars=None, refresh=FAST, **connection(b, emulators[b.id][0]))
        for key, value in conf.items():
            if key.startswith(f"spark.sql.catalog.{catalog_name(b)}"):
                spark.conf.set(key, value)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{NS}")  # read-only families read what `lake` wrote
    yield spark
    system.clearProperty("aws.accessKeyId")
    system.clearProperty("aws.secretAccessKey")


def _drop_if_exists(spark, b: Behaviour, table: str) -> None:
    """Where the catalog drops a table only with its data (S3 Tables), the drop users have is PURGE."""
    spark.sql(f"DROP TABLE IF EXISTS {table}{' PURGE' if b.purge_on_drop else ''}")


def _table(b: Behaviour, name: str) -> str:
    """Every family shares the one SeaweedFS warehouse: table names carry the family."""
    return f"{catalog_name(b)}.{NS}.{catalog_name(b)}_{name}"


# ------------------------------------------------------------------------------------------ step 1
@pytest.mark.parametrize("b", cases("1"))
def test_1_configure_with_the_profile_checks_the_catalog(b, emulators, glue_keys, monkeypatch):
    emu = emulators[b.id][0]
    if b.auth == "sigv4":  # the job's own AWS keys sign (default chain)
        for key, value in glue_keys.items():
            monkeypatch.setenv(key, value)
    conf = spark_conf(b.profile, catalog_name(b), jars=None, **connection(b, emu))
    props = CatalogSparkConf(conf).catalog(catalog_name(b))
    config = check_catalog(conf, catalog_name(b))
    profile = get_profile(b.profile)
    if b.auth == "sigv4":
        assert props["rest.signing-name"] == b.signing_name
    prefix = (config.get("overrides") or {}).get("prefix") or (config.get("defaults") or {}).get("prefix")
    assert prefix == b.prefix
    assert emu.count("config") >= 1
    if profile.scope:
        assert props["scope"] == b.scope
    assert props.get("header.X-Iceberg-Access-Delegation") == (None if b.vends == NONE else "vended-credentials")


# ------------------------------------------------------------------------------------------ step 2
@pytest.mark.parametrize("b", cases("2"))
def test_2_ctas_and_writeto_outlive_three_lifetimes_or_are_refused_up_front(b, emu_spark, emulators, s3_proxies, request):
    spark, emu, s3 = emu_spark, emulators[b.id][0], s3_proxies[0]
    names = [_table(b, "ctas_sql"), _table(b, "ctas_df")]
    for name in names:
        _drop_if_exists(spark, b, name) if writable(b) else None
    s3.reset_counters()
    emu.reset_counters()
    if b.stage_create and writable(b):
        rows, ms = 2800, 5  # ~14 s per job = 3.5 lifetimes; both jobs at once (two task slots)
        started = time.monotonic()
        with ThreadPoolExecutor(2) as pool:
            jobs = [pool.submit(_ctas_sql, spark, names[0], rows, ms), pool.submit(_ctas_writeto, spark, names[1], rows, ms)]
            for job in jobs:
                job.result()
        assert time.monotonic() - started >= 3 * LIFETIME
        for name in names:
            assert spark.sql(f"SELECT count(*), sum(v) FROM {name}").first() == (rows, 3 * sum(range(rows)))
        assert (late := s3.signed_with_dying_keys(0.0, LIFETIME)) is None, late
        assert len(s3.forwarded_by_key) >= 3 * 2  # each job really wrote with several keys
        check_matrix(request, b, "step-2", step_record(WORKS))
        return
    # Refused: the job must fail BEFORE any data is written, with one line naming the catalog's limit.
    refusals = []
    for job, name in ((_ctas_sql, names[0]), (_ctas_writeto, names[1])):
        with pytest.raises(Exception) as err:
            job(spark, name, 100, 0)
        assert not [e for e in s3.log if e["method"] == "PUT"], "data was written before the refusal"
        message = str(err.value)
        first = message.strip().splitlines()[0]
        # e.g. "the catalog does not support stageCreate (... glue: stage-create is not supported ...)"
        assert len(message.strip().splitlines()) == 1 and "does not support stagecreate" in first.lower(), message[:600]
        refusals.append(first)
    # Both lines are recorded, the writeTo one only where it differs from the SQL one but for the table.
    same = refusals[1].replace("ctas_df", "ctas_sql") == refusals[0]
    check_matrix(request, b, "step-2", step_record(REFUSED, refusals[0] if same else " / writeTo: ".join(refusals)))


# ------------------------------------------------------------------------------------------ step 3
@pytest.mark.parametrize("b", cases("3"))
def test_3_long_read_and_merge_on_a_committed_table(b, emu_spark, emulators, s3_proxies, request):
    spark, s3 = emu_spark, s3_proxies[0]
    if writable(b):
        table = _table(b, "events")
        _drop_if_exists(spark, b, table)
        spark.sql(f"CREATE TABLE {table} (id BIGINT, k BIGINT)")
        spark.range(0, 2000, 1, 10).selectExpr("id", "id % 7 AS k").writeTo(table).append()
    else:  # the family is read-only: the table is written through the plain catalog, read through it
        table = _table(b, "events")
        lake = f"lake.{NS}.{table.rsplit('.', 1)[1]}"
        spark.sql(f"DROP TABLE IF EXISTS {lake}")
        spark.range(0, 2000, 1, 10).selectExpr("id", "id % 7 AS k").writeTo(lake).create()
    s3.reset_counters()
    long = b.vends != NONE  # the job's own keys never expire: nothing to outlive
    # ~14 s: 2000 rows in 10 files read one after another (twice as slow when no MERGE shares the slots)
    ms = (7 if writable(b) else 14) if long else 0

    def read() -> int:
        return spark.table(table).where(slow(ms)).count()

    def merge() -> None:
        spark.sql(f"""MERGE INTO {table} t
                      USING (SELECT id, 8 AS k FROM range(0, 2500, 1, 1) WHERE slow_true({3 if long else 0})) s
                      ON t.id = s.id
                      WHEN MATCHED THEN UPDATE SET k = s.k
                      WHEN NOT MATCHED THEN INSERT (id, k) VALUES (s.id, s.k)""")

    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        counted = pool.submit(read)
        merged = pool.submit(merge) if writable(b) else None
        assert counted.result() == 2000
        if merged is not None:
            merged.result()
    if long:
        assert time.monotonic() - started >= 3 * LIFETIME
    if writable(b):
        assert spark.table(table).count() == 2500 and spark.table(table).where("k = 8").count() == 2500
    assert (late := s3.signed_with_dying_keys(0.0, LIFETIME)) is None, late
    if not writable(b):
        seen = step_record(DEGRADED, "read-only catalog: the long read works across expiry; no MERGE")
    else:
        seen = step_record(WORKS, None if long else "the job's own keys: nothing expires")
    check_matrix(request, b, "step-3", seen)


# ------------------------------------------------------------------------------------------ step 4
@pytest.mark.parametrize("b", cases("4"))
def test_4_lost_commit_answer_lands_exactly_once(b, emu_spark, emulators, s3_proxies, glue_keys, monkeypatch, request):
    """The commit reaches the catalog, then the answer is the family's 'unknown state' status
    (Polaris <= 1.7: 400, others 500): Spark's INSERT and PyIceberg's append each land exactly once."""
    if not writable(b):
        check_matrix(request, b, "step-4", step_record(NOT_APPLICABLE, "read-only catalog: no commits"))
        pytest.skip(f"{b.family} {b.release} is read-only: no commits")
    spark, emu = emu_spark, emulators[b.id][0]
    table = _table(b, "lost")
    short = table.rsplit(".", 1)[1]
    _drop_if_exists(spark, b, table)
    spark.sql(f"CREATE TABLE {table} (id BIGINT)")
    fault = emu.faults.add("after", "POST", rf"/tables/{short}$", status=b.unknown_commit_status)
    spark.sql(f"INSERT INTO {table} SELECT id FROM range(0, 10)")
    assert fault.fired == 1
    assert spark.sql(f"SELECT count(*), count(DISTINCT id) FROM {table}").first() == (10, 10)

    if b.vends == NONE:
        for key, value in glue_keys.items():
            monkeypatch.setenv(key, value)
    py_emu = emulators[b.id][1]
    cat = pyiceberg_catalog(spark_conf(b.profile, catalog_name(b), jars=None, **connection(b, py_emu)),
                            catalog_name(b), policy=PY_POLICY)
    py_table = cat.load_table(f"{NS}.{short}")
    fault = py_emu.faults.add("after", "POST", rf"/tables/{short}$", status=b.unknown_commit_status)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=True)])
    py_table.append(pa.table({"id": pa.array(range(100, 110), pa.int64())}, schema=schema))
    assert fault.fired == 1
    assert cat.load_table(f"{NS}.{short}").scan().to_arrow().num_rows == 20
    assert spark.sql(f"REFRESH TABLE {table}") is not None and spark.table(table).count() == 20
    check_matrix(request, b, "step-4", step_record(
        WORKS, f"commit answered HTTP {b.unknown_commit_status}: Spark's INSERT and PyIceberg's append land once"))


# ------------------------------------------------------------------------------------------ step 5
@pytest.mark.parametrize("b", cases("5"))
def test_5_staged_cleanup_dry_run_lists_a_dead_jobs_files(b, emu_spark, emulators, s3_proxies, lakehouse, request):
    """A staged table written once and never committed (its driver "died"): `staged cleanup` with the
    family's profile lists its files in a dry run and deletes nothing."""
    import json

    from pyspark_catalog_ext.staging.staged import stage_create
    from tests.spark.test_staging import s3_admin, s3_exists

    if not (writable(b) and b.stage_create):
        why = "read-only catalog" if not writable(b) else "no stage-create"
        check_matrix(request, b, "step-5", step_record(NOT_APPLICABLE, f"{why}: nothing is ever staged"))
        pytest.skip(f"{b.family} {b.release} has no stage-create: nothing is ever staged")
    spark, emu, s3 = emu_spark, emulators[b.id][0], s3_proxies[0]
    table = _table(b, f"orphan_{int(time.time())}")
    s3.max_age_seconds = None  # this step is about the files, not expiry: a slow CLI start can't matter
    try:
        staged = stage_create(spark, table, "id BIGINT")
        staged.write(spark.range(0, 20, 1, 2))
        written = set(staged.written_files())
        # Not committed, so the CLI needs the location the dead job logged (StagedTable.location).
        args = ["staged", "cleanup", "--table", f"{NS}.{table.rsplit('.', 1)[1]}", "--location", staged.location,
                "--min-age", "0.001", "--allow-min-age-under-24h", "--json",
                "--profile", b.profile]
        for key, value in connection(b, emu).items():
            args += [f"--{key.replace('_', '-')}", value]
        proc = run_cli(*args, timeout=120)
        assert proc.returncode == 0, proc.stderr[-1500:]
        listed = {o["uri"] for o in json.loads(proc.stdout)["orphans"]}
        assert written and written <= listed, (written, listed)
        admin = s3_admin(lakehouse)
        assert all(s3_exists(admin, uri) for uri in written)  # a dry run deletes nothing
        staged.abort()
        check_matrix(request, b, "step-5", step_record(WORKS, "the dry run lists every file of the dead job, deletes none"))
    finally:
        s3.max_age_seconds = LIFETIME


# ------------------------------------------------------------------------------------------ step 6
@pytest.mark.parametrize("b", cases("6"))
def test_6_pyiceberg_scan_and_append_across_expiry(b, emulators, lakehouse, s3_proxies, glue_keys, monkeypatch, request):
    emu, s3 = emulators[b.id][1], s3_proxies[1]
    if b.vends == NONE:  # the job's own keys, from the environment
        for key, value in glue_keys.items():
            monkeypatch.setenv(key, value)
    conf = spark_conf(b.profile, catalog_name(b), jars=None, **connection(b, emu))
    made_at = time.time()  # keys issued before then went to an earlier test's clients (the proxy is shared)
    cat = pyiceberg_catalog(conf, catalog_name(b), policy=PY_POLICY)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    name = f"{NS}.py_{catalog_name(b)}"
    if writable(b):
        cat.create_namespace_if_not_exists(NS)
        if cat.table_exists(name):
            cat.purge_table(name) if b.purge_on_drop else cat.drop_table(name)
        table = cat.create_table(name, schema)
    else:
        admin = pyiceberg_catalog(lakehouse)
        if admin.table_exists(name):
            admin.drop_table(name)
        admin.create_table(name, schema).append(pa.table({"id": pa.array(range(10), pa.int64())}, schema=schema))
        table = cat.load_table(name)
    s3.reset_counters()
    started, appended, rounds = time.monotonic(), 0 if writable(b) else 10, 0
    # One table object, keys dying under it: at least 3.5 lifetimes and 3 rounds, however slow the
    # machine runs them (a loaded one ran fewer than 3 in the time alone).
    while time.monotonic() - started < 3.5 * PY_LIFETIME or rounds < 3:
        assert time.monotonic() - started < 120, f"{rounds} rounds in 120 s"
        if writable(b):
            table.append(pa.table({"id": pa.array(range(appended, appended + 10), pa.int64())}, schema=schema))
            appended += 10
        assert table.scan().to_arrow().num_rows == appended
        rounds += 1
        time.sleep(0.3)
    assert (late := s3.signed_with_dying_keys(0.0, PY_LIFETIME, issued_since=made_at)) is None, late
    if b.vends != NONE:
        assert len(s3.forwarded_by_key) >= 2, "the scans never needed fresh keys"
    cat.close() if hasattr(cat, "close") else None
    if not writable(b):
        seen = step_record(DEGRADED, "read-only catalog: scans across expiry work; no appends")
    else:
        seen = step_record(WORKS, "the job's own keys: nothing expires" if b.vends == NONE else None)
    check_matrix(request, b, "step-6", seen)


# ------------------------------------------------------------------------------------------ step 9
# The Behaviour switches behind each doctor capability: their refs are the matrix's references.
PROBE_SWITCHES: dict[str, tuple[str, ...]] = {
    "config": ("prefix", "prefix_in", "endpoints"), "auth": ("auth", "scope", "signing_name", "expired_token_status"),
    "namespaces": ("read_only",), "tables": ("read_only", "purge_on_drop"), "vended-credentials": ("vends",),
    "credential-scope": ("vends",), "refresh-endpoint": ("refresh_endpoint",),
    "credentials-endpoint": ("credentials_endpoint",), "storage-refresh-token": ("empty_storage_credential",),
    "re-stage": ("stage_create",), "stage-commit": ("stage_create",), "idempotency-advertised": ("idempotency",),
    "idempotency-replay": ("idempotency", "idempotent_operations"), "remote-signing": ("remote_signing",),
}


def doctor_refs(b: Behaviour) -> dict[str, str]:
    """Per doctor capability, the family's references for the switches behind it."""
    out = {}
    for probe, switches in PROBE_SWITCHES.items():
        refs = [b.refs[s] for s in switches if b.refs.get(s)]
        if refs:
            out[probe] = "; ".join(dict.fromkeys(refs))
    return out


@pytest.mark.parametrize("b", cases("9"))
def test_9_doctor_json(b, emulators, glue_keys, request):
    import json

    emu = emulators[b.id][0]
    args = ["--profile", b.profile, "--uri", emu.url, "--warehouse", b.warehouse]
    conn = connection(b, emu)
    for key in ("credential", "token", "oauth2_server_uri", "region"):
        if key in conn:
            args += [f"--{key.replace('_', '-')}", conn[key]]
    proc = run_cli("doctor", "--json", *args, *DOCTOR_FAST, env=glue_keys if b.auth == "sigv4" else None, timeout=180)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    got = {p["id"]: p["status"] for p in report["probes"]}
    DOCTOR_SEEN[b.id] = got
    assert got["config"] == "pass" and got["auth"] == "pass", got
    if b.read_only:  # the doctor's first write is refused: reported as read-only (unsupported), still exit 1
        assert got["namespaces"] == "unsupported" and proc.returncode == 1, got
        summary = next(p["summary"] for p in report["probes"] if p["id"] == "namespaces")
        assert "read-only" in summary, summary
    else:  # what the emulated family offers is what the doctor reports, and exit 0
        expected = {
            "vended-credentials": "unsupported" if b.vends == NONE else "pass",
            "refresh-endpoint": "pass" if b.refresh_endpoint != NONE else "unsupported",
            "credentials-endpoint": "pass" if b.credentials_endpoint != NONE else "unsupported",
            "stage-commit": "pass" if b.stage_create else "unsupported",
            "idempotency-advertised": "pass" if b.idempotency else "unsupported",
            "idempotency-replay": "pass" if b.idempotency else "unsupported",
        }
        not_passed = {p["id"]: f'{p["status"]}: {p.get("summary")}' for p in report["probes"] if p["status"] != "pass"}
        assert {k: got[k] for k in expected} == expected and proc.returncode == 0, f"exit {proc.returncode}; not passed: {not_passed}"
    assert R2_TOKEN not in proc.stdout + proc.stderr and emu.info.secret_key not in proc.stdout + proc.stderr
    check_matrix(request, b, "doctor", support_matrix.doctor_record(report, doctor_refs(b)))


DOCTOR_SEEN: dict[str, dict] = {}  # family id -> probe statuses (for the report's matrix)


# ------------------------------------------------------------------------------------------ quirks
def test_lakekeeper_empty_storage_credential_entry_is_ignored(emu_spark, lakehouse, s3_proxies):
    """lakekeeper#1923: Iceberg 1.10 alone rejects the whole answer ('Invalid config: must be non-empty');
    the shim drops such entries where it reads the catalog's answers (RefreshTokenCapture)."""
    spark, b = emu_spark, LAKEKEEPER_0_13_EMPTY_CREDENTIAL
    with Emulator(b, lakehouse, s3_proxies[0], LIFETIME) as emu:
        conf = spark_conf(b.profile, catalog_name(b), jars=None, refresh=FAST, **connection(b, emu))
        for key, value in conf.items():
            if key.startswith(f"spark.sql.catalog.{catalog_name(b)}"):
                spark.conf.set(key, value)
        table = _table(b, "quirk")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {table} (id BIGINT)")
        spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
        assert spark.table(table).count() >= 2


@pytest.mark.parametrize("b", [b for b in FAMILIES if b.auth == "oauth2" and b.id in ("polaris-1.7.0", "gravitino-1.3.0")],
                         ids=lambda b: b.id)
def test_expired_oauth_token_is_renewed(b, lakehouse, s3_proxies):
    """Tokens of 2 s: the next catalog call after expiry gets the family's status (Polaris 401,
    Gravitino 419) unless the client renewed first. Spark's and PyIceberg's paths must both go on."""
    with Emulator(b, lakehouse, s3_proxies[1], PY_LIFETIME, token_ttl_seconds=2) as emu:
        cat = pyiceberg_catalog(spark_conf(b.profile, catalog_name(b), jars=None, **connection(b, emu)),
                                catalog_name(b), refresh=False)
        cat.create_namespace_if_not_exists(NS)
        assert (NS,) in cat.list_namespaces()
        time.sleep(3)
        assert (NS,) in cat.list_namespaces()
        assert emu.count("oauth") >= 2, "the token was never renewed"
        # The client met the family's expired-token status once and recovered (renewed, retried).
        assert any(e["status"] == b.expired_token_status for e in emu.log)


# ------------------------------------------------------------------------------------------ the JVM on Polaris
# What Polaris 1.4.1 showed (tests/emulators/observed/) that Spark's JVM does not handle yet; each is
# xfail(strict=True) until the JVM half lands (jvm-shim), when it passes and the mark must go.
def _register(spark, b: Behaviour, emu: Emulator, name: str, policy: RefreshPolicy) -> None:
    for key, value in spark_conf(b.profile, name, jars=None, refresh=policy, **connection(b, emu)).items():
        if key.startswith(f"spark.sql.catalog.{name}"):
            spark.conf.set(key, value)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}.{NS}")


def _status(spark, catalog: str, table: str):
    from pyspark_catalog_ext.spark.credentials import attach

    return [s for s in attach(spark, catalogs=[catalog]).status() if s.name == table]


def test_polaris_jvm_counts_a_renewal_only_when_the_catalog_hands_out_new_keys(emu_spark, lakehouse):
    """Keys of 20 s renewed when under 75 % of their life remains: the first renewal comes ~5 s after the
    fetch, inside Polaris's cache window (half their life), and gets the same keys back."""
    spark, b, lifetime = emu_spark, POLARIS_1_4, 20.0
    s3 = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    s3.max_age_seconds = lifetime
    try:
        with Emulator(b, lakehouse, s3, lifetime) as emu:
            name = "emu_polaris_cache"
            _register(spark, b, emu, name, RefreshPolicy(check_interval_s=0.2, min_ahead_s=0, lifetime_fraction=0.75))
            table = f"{name}.{NS}.jvm_cache"
            spark.sql(f"DROP TABLE IF EXISTS {table}")
            spark.range(0, 2000, 1, 10).selectExpr("id").writeTo(table).create()
            assert spark.table(table).where(slow(13)).count() == 2000  # ~26 s: 10 files, one after another
            (entry,) = _status(spark, name, table)
            location = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").first()[1]
            minted = emu.keys_cached[location.rstrip("/")]
            assert (late := s3.signed_with_dying_keys(0.0, lifetime)) is None, late
            # every renewal counted brought a key set Polaris minted for this table (the first came with a load)
            assert entry.refresh_count <= minted - 1, (entry.refresh_count, minted, entry.refreshes_by_strategy)
    finally:
        s3.stop()


def test_polaris_jvm_tries_an_unlisted_credentials_endpoint_once(emu_spark, lakehouse, s3_proxies):
    """Polaris without a refresh endpoint in its table answers: a committed table's keys are renewed with
    the GET .../credentials it serves but does not list, not with a reload."""
    from dataclasses import replace

    spark, s3 = emu_spark, s3_proxies[0]
    b = replace(POLARIS_1_4, release="1.4.1+no-refresh-endpoint", refresh_endpoint=NONE)
    with Emulator(b, lakehouse, s3, LIFETIME) as emu:
        name = "emu_polaris_unlisted"
        _register(spark, b, emu, name, FAST)
        table = f"{name}.{NS}.jvm_unlisted"
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.range(0, 2000, 1, 10).selectExpr("id").writeTo(table).create()
        emu.reset_counters()
        s3.reset_counters()  # the proxy serves the module: judge this read, not earlier tests' requests
        assert spark.table(table).where(slow(7)).count() == 2000  # ~14 s: 3.5 lifetimes
        assert (late := s3.signed_with_dying_keys(0.0, LIFETIME)) is None, late
        assert emu.count("credentials") >= 1, emu.counts()  # asked, though /v1/config does not list it
