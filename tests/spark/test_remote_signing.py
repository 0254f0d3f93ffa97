"""Remote signing end to end: the embedded lakehouse with its signer in front of SeaweedFS
(`delegation="remote-signing"`), a real Spark CTAS + read whose JVM holds no storage key, and the
signer refusing anything outside a table's location."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.lakehouse.server import Lakehouse
from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID, sign_request
from pyspark_catalog_ext.processes import alive
from pyspark_catalog_ext.spark.conf import catalog_properties
from tests.conftest import assert_one_line_error, run_cli
from tests.helpers import REST_ID_SCHEMA

STORAGE_KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")


@pytest.fixture(scope="module")
def signing_lake():
    lake = Lakehouse(delegation="remote-signing").start()
    yield lake
    lake.stop()


def _token(lake: Lakehouse) -> str:
    resp = requests.post(lake.info.oauth2_server_uri, timeout=10, data={
        "grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": lake.info.client_secret, "scope": "catalog"})
    assert resp.status_code == 200, resp.text
    return resp.json()["access_token"]


def _auth(lake: Lakehouse) -> dict[str, str]:
    return {"Authorization": f"Bearer {_token(lake)}", "X-Iceberg-Access-Delegation": "remote-signing"}


def _create_table(lake: Lakehouse, ns: str, name: str) -> dict:
    uri, headers = lake.info.iceberg_uri, _auth(lake)
    requests.post(f"{uri}/v1/warehouse/namespaces", json={"namespace": [ns]}, headers=headers, timeout=10)
    resp = requests.post(f"{uri}/v1/warehouse/namespaces/{ns}/tables", json={"name": name, "schema": REST_ID_SCHEMA}, headers=headers, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _object_url(lake: Lakehouse, location: str, key: str) -> str:
    bucket_and_prefix = location.split("://", 1)[1]
    return f"{lake.info.s3_endpoint}/{bucket_and_prefix}/{key}"


def test_spark_ctas_and_read_with_no_storage_keys(signing_lake, tmp_path):
    """A fresh Spark job (its own JVM) creates and reads a table through the signer; neither its
    conf, its table's FileIO nor its logs hold a storage key, and refresh has nothing to do."""
    info = signing_lake.info
    args = {"uri": info.iceberg_uri, "warehouse": info.warehouse, "credential": info.credential, "table": "lake.rs.ctas"}
    signed_before = signing_lake.signer.signed
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1].joinpath("jobs", "remote_signing_job.py")), json.dumps(args)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[0][len("RESULT "):])
    print(f"remote-signing Spark job: {time.monotonic() - started:.1f}s, {signing_lake.signer.signed - signed_before} requests signed")

    assert (result["count"], result["total"]) == (1000, 999 * 1000 // 2)
    assert signing_lake.signer.signed - signed_before >= 4, "data and metadata went to S3 without the signer"
    # S3FileIO's bulk delete goes through the signer's DeleteObjects relay; outside the table it is refused
    assert result["bulk_delete"]["written"] == [True, True] and result["bulk_delete"]["exists_after"] == [False, False], result["bulk_delete"]
    assert result["bulk_delete"]["outside_error"] == "org.apache.iceberg.io.BulkDeletionFailureException", result["bulk_delete"]
    assert signing_lake.signer.refused >= 1  # the outside delete, and nothing else is expected to be refused
    assert result["fileio"].get("s3.remote-signing-enabled") == "true"
    assert result["fileio"].get("s3.signer.uri") == info.iceberg_uri
    for key in STORAGE_KEYS:
        assert key not in result["fileio"] and not any(k.endswith(key) for k in result["conf"]), key
    assert not any(k.endswith("s3.client-factory-impl") for k in result["conf"]), "nothing to refresh, so no refreshing factory"
    # The S3 keys exist only inside the signer: not in the conf, the FileIO, the logs.
    everything = json.dumps(result["conf"]) + json.dumps(result["fileio"]) + proc.stdout + proc.stderr
    assert info.secret_key not in everything and info.access_key not in everything
    assert result["refresh_needs"]["lake"].startswith("nothing: remote signing")
    assert result["tables_tracked"] == 0
    # a CTAS at the table's own location, from Spark: refused by the location rule, nothing created
    assert result["steal_error"] and "overlaps table rs.ctas" in result["steal_error"], result["steal_error"]
    assert not result["steal_exists"]


def test_signer_signs_inside_a_table_and_refuses_outside(signing_lake):
    """The signature is real (S3 accepts it), and the signer says 403 for objects of other tables,
    the bucket root, listings outside the table and other endpoints."""
    table = _create_table(signing_lake, "rs_scope", "t1")
    other = _create_table(signing_lake, "rs_scope", "t2")
    assert "storage-credentials" not in table
    assert not set(STORAGE_KEYS) & set(table["config"])
    assert table["config"]["s3.remote-signing-enabled"] == "true"
    location, metadata_location = table["metadata"]["location"], table["metadata-location"]
    token, signer = _token(signing_lake), signing_lake.info.iceberg_uri
    endpoint = table["config"]["s3.signer.endpoint"]
    assert endpoint.startswith("v1/aws/s3/sign/") and endpoint != other["config"]["s3.signer.endpoint"]

    # inside: a signed GET of the table's metadata file succeeds against the real S3
    assert metadata_location.startswith(location + "/")
    url = _object_url(signing_lake, location, metadata_location[len(location) + 1:])
    signed = sign_request(signer, token, "GET", url, "us-east-1", endpoint=endpoint)
    assert signed.status_code == 200, signed.text
    answer = signed.json()
    assert answer["uri"] == url
    s3 = requests.get(url, headers={k: v[0] for k, v in answer["headers"].items()}, timeout=10)
    assert s3.status_code == 200 and b"table-uuid" in s3.content
    assert requests.get(url, timeout=10).status_code == 403  # the same request unsigned: S3 really checks

    # outside: another table, the bucket root, a listing of the namespace, another S3 endpoint
    refused = [
        ("GET", _object_url(signing_lake, other["metadata"]["location"], "metadata/x.json")),
        ("PUT", f"{signing_lake.info.s3_endpoint}/warehouse/rs_scope/evil.parquet"),
        ("GET", f"{signing_lake.info.s3_endpoint}/warehouse?list-type=2&prefix=rs_scope/"),
        ("GET", f"{signing_lake.info.s3_endpoint}/warehouse"),
        ("GET", url.replace(signing_lake.info.s3_endpoint, "http://s3.example.com")),
        ("GET", _object_url(signing_lake, location + "-sibling", "data/x.parquet")),  # a shared name prefix is not inside
        ("GET", _object_url(signing_lake, location, "../t2/metadata/x.json")),  # no way out through ..
    ]
    for method, target in refused:
        resp = sign_request(signer, token, method, target, "us-east-1", endpoint=endpoint)
        assert resp.status_code == 403, (method, target, resp.status_code)
        assert "Authorization" not in resp.text
    # DeleteObjects (what S3FileIO's bulk delete sends): every key must be inside the table
    bucket, prefix = location.split("://", 1)[1].split("/", 1)
    delete_url = f"{signing_lake.info.s3_endpoint}/{bucket}?delete"

    def delete_body(*keys: str) -> str:
        return "<Delete>" + "".join(f"<Object><Key>{k}</Key></Object>" for k in keys) + "</Delete>"

    def sign_delete(xml: str) -> int:
        body = {"region": "us-east-1", "method": "POST", "uri": delete_url, "headers": {}, "body": xml}
        return requests.post(f"{signer}/{endpoint}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=10).status_code

    assert sign_delete(delete_body(f"{prefix}/data/a.parquet", f"{prefix}/data/b.parquet")) == 200
    assert sign_delete(delete_body(f"{prefix}/data/a.parquet", "rs_scope/t2/data/b.parquet")) == 403
    assert sign_delete("<Delete></Delete>") == 403
    # t2's own endpoint signs t2's objects, and the bare endpoint signs nothing
    assert sign_request(signer, token, "GET", refused[0][1], "us-east-1", endpoint=other["config"]["s3.signer.endpoint"]).status_code == 200
    assert sign_request(signer, token, "GET", url, "us-east-1").status_code == 403
    assert sign_request(signer, "not-a-token", "GET", url, "us-east-1", endpoint=endpoint).status_code == 401


def test_catalog_proxy_takes_only_its_own_client(signing_lake):
    """The S3 admin keys (SeaweedFS's OAuth2 client) are not a client of the signer proxy."""
    info = signing_lake.info
    resp = requests.post(info.oauth2_server_uri, timeout=10, data={
        "grant_type": "client_credentials", "client_id": info.access_key, "client_secret": info.secret_key})
    assert resp.status_code == 401
    assert requests.get(f"{info.iceberg_uri}/v1/warehouse/namespaces", timeout=10).status_code == 401
    assert requests.get(f"{info.iceberg_uri}/v1/warehouse/namespaces", headers=_auth(signing_lake), timeout=10).status_code == 200
    # Iceberg refreshes its token with a token exchange: one of ours gives a new one, anything else 401
    exchange = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}
    fresh = requests.post(info.oauth2_server_uri, data={**exchange, "subject_token": _token(signing_lake)}, timeout=10)
    assert fresh.status_code == 200 and fresh.json()["expires_in"] > 0
    assert requests.get(f"{info.iceberg_uri}/v1/warehouse/namespaces", timeout=10,
                        headers={"Authorization": f"Bearer {fresh.json()['access_token']}"}).status_code == 200
    assert requests.post(info.oauth2_server_uri, data={**exchange, "subject_token": "forged"}, timeout=10).status_code == 401


def test_remote_signing_conf_has_no_keys_and_rejects_them():
    props = catalog_properties("seaweedfs", uri="https://catalog.example.com/api/catalog", credential="id:secret",
                               delegation="remote-signing", signer_uri="https://signer.example.com")
    assert props["header.X-Iceberg-Access-Delegation"] == "remote-signing"
    assert props["s3.remote-signing-enabled"] == "true" and props["s3.signer.uri"] == "https://signer.example.com"
    assert "s3.client-factory-impl" not in props
    vended = catalog_properties("polaris", uri="https://catalog.example.com/api/catalog", credential="id:secret")
    assert "s3.remote-signing-enabled" not in vended and vended["s3.client-factory-impl"]
    with pytest.raises(ConfigError, match="signer_uri"):
        catalog_properties("polaris", uri="https://c.example.com", credential="id:secret", signer_uri="https://s.example.com")
    # a catalog that signs nothing: refused up front, naming why and what to use instead
    with pytest.raises(ConfigError, match=r"cannot use delegation 'remote-signing': Polaris signs no S3 requests .*vended-credentials"):
        catalog_properties("polaris", uri="https://c.example.com", credential="id:secret", delegation="remote-signing")


def test_spark_conf_cli_delegation_flag(tmp_path):
    yaml = tmp_path / ".pyiceberg.yaml"
    yaml.write_text("catalog:\n  keyed:\n    uri: https://catalog.example.com\n    credential: id:secret\n    s3.access-key-id: AKIAEXAMPLE\n")
    ok = run_cli("spark-conf", "--profile", "seaweedfs", "--uri", "https://catalog.example.com/api/catalog", "--credential-env", "PCE_TEST_CRED",
                 "--delegation", "remote-signing", "--signer-endpoint", "v1/sign", "--jars", "none", "--format", "defaults",
                 env={"PCE_TEST_CRED": "id:secret"})
    assert ok.returncode == 0, ok.stderr
    assert "spark.sql.catalog.lake.s3.remote-signing-enabled true" in ok.stdout
    assert "spark.sql.catalog.lake.s3.signer.endpoint v1/sign" in ok.stdout
    assert "X-Iceberg-Access-Delegation remote-signing" in ok.stdout
    bad = run_cli("spark-conf", "--profile", "seaweedfs", "--from-pyiceberg", "keyed", "--delegation", "remote-signing", "--jars", "none",
                  env={"PYICEBERG_HOME": str(tmp_path)})
    assert_one_line_error(bad, "takes no storage keys", "s3.access-key-id")



def test_cli_local_up_remote_signing(tmp_path):
    """`local up --delegation remote-signing` runs the signer as its own process in front of the
    catalog; `spark-conf` picks the mode up from the state file; `local down` stops both."""
    env = {"PYSPARK_CATALOG_EXT_CACHE": str(tmp_path)}
    up = run_cli("local", "up", "--delegation", "remote-signing", env=env)
    assert up.returncode == 0, up.stderr
    state = json.loads((tmp_path / "local" / "state.json").read_text())
    signer_pid = state["ports"]["signer_pid"]
    try:
        assert state["delegation"] == "remote-signing" and "remote-signing" in up.stdout
        assert state["iceberg_uri"].endswith(f":{state['ports']['signer']}")
        assert state["client_secret"] not in up.stdout and state["secret_key"] not in up.stdout
        assert (tmp_path / "local" / "state.json").stat().st_mode & 0o777 == 0o600  # it holds the random keys
        assert alive(signer_pid)
        clash = run_cli("local", "up", env=env)
        assert_one_line_error(clash, "delegation remote-signing is already running")
        conf = run_cli("spark-conf", "--profile", "local", "--jars", "none", "--check", "--format", "defaults", "--show-secrets", env=env)
        assert conf.returncode == 0, conf.stderr
        assert "spark.sql.catalog.lake.s3.remote-signing-enabled true" in conf.stdout
        assert f"spark.sql.catalog.lake.credential {CLIENT_ID}:{state['client_secret']}" in conf.stdout
        assert state["secret_key"] not in conf.stdout and "client-factory-impl" not in conf.stdout
        token = requests.post(state["iceberg_uri"] + "/v1/oauth/tokens", timeout=10, data={
            "grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": state["client_secret"]}).json()["access_token"]
        outside = sign_request(state["iceberg_uri"], token, "GET", f"{state['s3_endpoint']}/warehouse/x/y", "us-east-1")
        assert outside.status_code == 403
    finally:
        down = run_cli("local", "down", env=env)
    assert down.returncode == 0 and "stopped" in down.stdout
    assert not alive(state["pid"]) and not alive(signer_pid)


def test_doctor_remote_signing_probe_makes_a_real_signed_request(signing_lake):
    """The doctor's remote-signing probe gets a signature from the signer, reads the table's
    metadata file from S3 with it, and sees the signer refuse a request outside the table."""
    info = signing_lake.info
    signed_before = signing_lake.signer.signed
    proc = run_cli("doctor", "--json", "--profile", "seaweedfs", "--uri", info.iceberg_uri, "--warehouse", info.warehouse,
                   "--credential-env", "PCE_TEST_CRED", "--delegation", "remote-signing", "--skip", "spark,pyiceberg,inventory",
                   env={"PCE_TEST_CRED": info.credential}, timeout=240)
    report = json.loads(proc.stdout)
    probe = next(p for p in report["probes"] if p["id"] == "remote-signing")
    assert probe["status"] == "pass", probe
    check = probe["evidence"]["signed_request"]
    assert (check["sign_status"], check["s3_status"], check["outside_sign_status"]) == (200, 200, 403)
    assert (check["copy_sign_status"], check["delete_outside_sign_status"]) == (403, 403)  # asked for, never sent
    assert "Authorization" in check["signed_headers"]
    assert signing_lake.signer.signed > signed_before
    assert info.client_secret not in proc.stdout + proc.stderr and info.secret_key not in proc.stdout + proc.stderr
