"""What a catalog's answers and a table's properties may set (trust-rules.json's allow-list), on the
PyIceberg face, against the embedded lakehouse behind a hostile `Injector` catalog.

- The code-loading sweep: every property key through which PyIceberg loads a class, found in
  PyIceberg's own sources (string constants ending in `impl`), is injected through each channel
  (`/v1/config` defaults and overrides, a table's config, its storage credentials, its metadata
  properties) and names `tests.code_marker.Marker`. A create, an append, a scan and a reload must
  load it zero times, with exact rows.
- Knobs (`catalog-ext.*`) from `/v1/config` are not followed.
- A storage endpoint only a server names receives no credential the catalog did not issue.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pyspark_catalog_ext.catalog.server_settings import table_io_properties
from pyspark_catalog_ext.catalog.trust import Origin, TrustedOrigins
from pyspark_catalog_ext.catalog.trust_rules import SPEC_PATH, server_may_set
from pyspark_catalog_ext.errors import UntrustedOriginError
from tests import code_marker
from tests.servers.attacker import Attacker
from tests.servers.injector import Injector

CODE_CHANNELS = ("config-defaults", "config-overrides", "table-config", "storage-credentials", "table-properties")


def pyiceberg_code_keys() -> dict[str, str]:
    """Property keys PyIceberg loads a class from: every string constant in its sources that ends in
    `impl` (`py-io-impl`, `s3.retry-strategy-impl`, `write.py-location-provider.impl`, ...), with the
    file that declares it."""
    import pyiceberg

    root = Path(pyiceberg.__file__).parent
    found = {}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            value = getattr(node, "value", None) if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and re.search(r"(^|[.-])impl$", value.value):
                found[value.value] = str(path.relative_to(root))
    return found


def test_the_sweep_finds_pyiceberg_code_keys_in_its_sources():
    keys = pyiceberg_code_keys()
    # If PyIceberg renames these, the finder must still see them (else the sweep below tests nothing).
    assert {"py-io-impl", "s3.retry-strategy-impl", "write.py-location-provider.impl"} <= set(keys), keys
    assert not any(server_may_set(k, config=True) for k in keys)


@pytest.fixture(scope="module")
def hostile(lakehouse):
    with Injector(lakehouse.info.iceberg_uri) as injector:
        yield injector


def _catalog(lakehouse, url: str, **overrides):
    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    return pyiceberg_catalog(lakehouse.connection(uri=url), **overrides)


FILEIOS = {"pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO", "fsspec": "pyiceberg.io.fsspec.FsspecFileIO"}


@pytest.mark.parametrize("io", sorted(FILEIOS))
@pytest.mark.parametrize("channel", CODE_CHANNELS)
def test_no_answer_or_table_property_loads_code(lakehouse, hostile, channel, io):
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    code_marker.LOADED.clear()
    hostile.arm(channel, {key: code_marker.NAME for key in pyiceberg_code_keys()})
    try:
        catalog = _catalog(lakehouse, hostile.url, **{"py-io-impl": FILEIOS[io]})  # the user's choice: followed
        ns = f"code_{uuid.uuid4().hex[:8]}"
        catalog.create_namespace(ns)
        table = catalog.create_table((ns, "t"), Schema(NestedField(1, "x", LongType(), required=False)))
        table.append(pa.table({"x": pa.array([1, 2, 3], pa.int64())}))
        again = catalog.load_table((ns, "t"))
        again.append(pa.table({"x": pa.array([4], pa.int64())}))
        rows = sorted(catalog.load_table((ns, "t")).scan().to_arrow()["x"].to_pylist())
        catalog.close()
    finally:
        hostile.arm(None)
    assert code_marker.LOADED == [], f"{channel}: a server-named class was loaded"
    assert rows == [1, 2, 3, 4]


@pytest.mark.parametrize("client", ["staged-cleanup", "maintain-plan", "doctor"])
def test_the_cli_and_the_doctor_load_no_code_a_server_names(lakehouse, hostile, client, tmp_path):
    """The same keys in every channel at once (one subprocess per client): `staged cleanup` (a dry
    run that loads the table and lists its files), `maintain --dry-run` (plans a table's snapshot
    expiry from a policy file: loads it and reads its snapshots) and the doctor (its PyIceberg probes
    create, write and read tables) load the marker zero times. The control: the marker class loads
    in that process."""
    from tests.conftest import ROOT, run_cli

    info = lakehouse.info
    ns = f"code_{uuid.uuid4().hex[:8]}"
    _catalog(lakehouse, info.iceberg_uri).create_namespace(ns)
    if client in ("staged-cleanup", "maintain-plan"):
        from pyiceberg.schema import Schema
        from pyiceberg.types import LongType, NestedField

        _catalog(lakehouse, info.iceberg_uri).create_table((ns, "t"), Schema(NestedField(1, "x", LongType(), required=False)))
    if client == "staged-cleanup":
        args = ["staged", "cleanup", "--table", f"{ns}.t", "--min-age", "86400"]
    elif client == "maintain-plan":
        policies = tmp_path / "policies.json"
        policies.write_text(json.dumps({"policies": [
            {"policy-type": "system.snapshot-expiry", "name": "keep-2", "version": 1, "inheritable": True,
             "content": json.dumps({"version": "2025-02-03", "enable": True, "config": {"min_snapshot_to_keep": 2}}),
             "target": {"type": "namespace", "path": [ns]}}]}))
        args = ["maintain", f"lake.{ns}.t", "--dry-run", "--json", "--policy-file", str(policies),
                "--state-file", str(tmp_path / "state.json")]
    else:
        args = ["doctor", "--json", "--skip", "spark"]
    log = tmp_path / "loaded.log"
    hostile.arm("every", {key: code_marker.NAME for key in pyiceberg_code_keys()})
    try:
        proc = run_cli(*args, "--uri", hostile.url, "--warehouse", info.warehouse, "--credential-env", "PCE_CODE_CRED",
                       env={code_marker.LOG_ENV: str(log), "PCE_CODE_CRED": info.credential}, timeout=300)
    finally:
        hostile.arm(None)
    assert "Traceback" not in proc.stderr and (proc.returncode == 0 or client == "doctor"), proc.stderr[-2000:]
    if client == "maintain-plan":  # it planned from the table the hostile server answered
        [table] = json.loads(proc.stdout)["tables"]
        assert table["error"] is None and [a["procedure"] for a in table["actions"]] == ["expire_snapshots"], table
    assert not log.exists(), f"{client}: a server-named class was loaded: {log.read_text()}"
    # The control: the marker records from a process of its own, as the CLI's would.
    subprocess.run([sys.executable, "-c", f"import {code_marker.__name__} as m; m.Marker()"], check=True, cwd=ROOT,
                   env={**os.environ, code_marker.LOG_ENV: str(log)}, timeout=60)
    assert log.read_text().startswith("instantiated with 0 args (")


def test_catalog_ext_knobs_from_config_are_not_followed(lakehouse, hostile):
    from pyspark_catalog_ext.pyiceberg_ext.fileio import write_bounds

    hostile.arm("config-overrides", {"catalog-ext.pyiceberg.s3-part-bytes": str(5 << 30),
                                     "catalog-ext.pyiceberg.s3-parts-in-flight": "64",
                                     "catalog-ext.pyiceberg.spool-max-bytes": "0", "py-io-impl": code_marker.NAME,
                                     "auth": "x", "header.X-Evil": "1", "prefix-evil": "1"})
    try:
        catalog = _catalog(lakehouse, hostile.url)
        served = _catalog(lakehouse, lakehouse.info.iceberg_uri)
    finally:
        hostile.arm(None)
    assert not any(k.startswith("catalog-ext.") or k in ("py-io-impl", "auth", "header.X-Evil", "prefix-evil")
                   for k in catalog.properties), sorted(catalog.properties)
    assert write_bounds(catalog.properties) == write_bounds(served.properties)
    catalog.close()
    served.close()


def test_a_config_override_of_a_user_setting_keeps_the_users_value(lakehouse, hostile):
    hostile.arm("config-overrides", {"py-io-impl": code_marker.NAME})
    try:
        catalog = _catalog(lakehouse, hostile.url, **{"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO"})
    finally:
        hostile.arm(None)
    assert catalog.properties["py-io-impl"] == "pyiceberg.io.fsspec.FsspecFileIO"
    catalog.close()


@pytest.mark.parametrize("channel", ["table-config", "table-properties"])
def test_the_tools_table_io_keeps_the_users_own_endpoint(lakehouse, hostile, channel):
    """The tools' client (`CatalogClient`: the doctor, `staged cleanup`, `maintain`), the user's own
    S3 keys and no vended ones: an S3 endpoint that a table's config names, or its metadata
    properties (any table writer's), never reaches the table's FileIO. The load succeeds (the tools
    read no data through it) and the FileIO keeps the user's endpoint."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    from pyspark_catalog_ext.catalog.rest import open_catalog

    info = lakehouse.info
    own = {"s3.access-key-id": info.access_key, "s3.secret-access-key": info.secret_key, "s3.endpoint": info.s3_endpoint}
    ns = f"tool_{uuid.uuid4().hex[:8]}"
    setup = _catalog(lakehouse, info.iceberg_uri)
    setup.create_namespace(ns)
    setup.create_table((ns, "t"), Schema(NestedField(1, "x", LongType(), required=False)))
    hostile.arm(channel, {"s3.endpoint": "http://attacker.invalid:9"})
    try:
        with open_catalog(lakehouse.connection(uri=hostile.url), delegation="", **own) as client:
            table = client.load_table((ns, "t"))
    finally:
        hostile.arm(None)
    assert table.io.properties["s3.endpoint"] == info.s3_endpoint
    assert table.io.properties["s3.access-key-id"] == info.access_key


def test_users_own_s3_keys_never_go_to_a_server_named_endpoint(lakehouse, hostile):
    """No vended keys (no delegation asked), the user's own S3 keys: a table config naming another
    S3 endpoint is refused at load in one line naming the key, the origin and the setting; the
    attacker receives nothing."""
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    info = lakehouse.info
    own = {"header.X-Iceberg-Access-Delegation": "", "s3.access-key-id": info.access_key,
           "s3.secret-access-key": info.secret_key, "s3.endpoint": info.s3_endpoint}
    ns = f"own_{uuid.uuid4().hex[:8]}"
    setup = _catalog(lakehouse, lakehouse.info.iceberg_uri)
    setup.create_namespace(ns)
    setup.create_table((ns, "t"), Schema(NestedField(1, "x", LongType(), required=False))).append(
        pa.table({"x": pa.array([7], pa.int64())}))
    with Attacker() as attacker:
        hostile.arm("table-config", {"s3.endpoint": attacker.url})
        try:
            catalog = _catalog(lakehouse, hostile.url, **own)
            with pytest.raises(UntrustedOriginError) as refused:
                catalog.load_table((ns, "t"))
        finally:
            hostile.arm(None)
        assert attacker.received == []
    message = str(refused.value)
    assert "\n" not in message and "s3.endpoint" in message and str(Origin.of(attacker.url)) in message
    assert "catalog-ext.trusted-origins" in message and info.secret_key not in message
    # The same table through the real catalog (no injected endpoint): the user's endpoint serves it.
    rows = _catalog(lakehouse, lakehouse.info.iceberg_uri, **own).load_table((ns, "t")).scan().to_arrow()
    assert rows["x"].to_pylist() == [7]


TRUST = TrustedOrigins.from_user_properties({"uri": "http://catalog.test:8181"})


def _io(answer, user=None, location="s3://bucket/t"):
    user = user or {}
    return table_io_properties("c", "ns.t", user=user, catalog_properties=dict(user), answer=answer, trust=TRUST,
                               location=location)


def test_endpoint_rules_by_who_issued_the_credentials():
    evil = "http://evil.test:9000"
    # Vended S3 keys: the catalog's own keys may go to the endpoint it names.
    assert _io({"s3.access-key-id": "AK", "s3.secret-access-key": "SK", "s3.endpoint": evil})["s3.endpoint"] == evil
    # The user's own GCS token (none vended): a server-named GCS host is dropped (the table is on S3).
    props = _io({"s3.access-key-id": "AK", "gcs.service.host": evil, "adls.blob-storage-authority": "evil.test"},
                user={"gcs.oauth2.token": "mine", "adls.sas-token": "mine"})
    assert "gcs.service.host" not in props and "adls.blob-storage-authority" not in props
    # ... and refused when the table's files are on that store.
    with pytest.raises(UntrustedOriginError, match="gcs.service.host"):
        _io({"gcs.service.host": evil}, location="gs://bucket/t")
    with pytest.raises(UntrustedOriginError, match="adls.connection-string"):
        _io({"adls.connection-string.acct": f"BlobEndpoint={evil}/acct;"}, location="abfss://c@acct.dfs.core.windows.net/t")
    # A host the user trusts, or configured, is followed.
    trusted = TrustedOrigins.from_user_properties({"uri": "http://catalog.test:8181", "catalog-ext.trusted-origins": evil})
    assert table_io_properties("c", "t", user={}, catalog_properties={}, answer={"gcs.service.host": evil}, trust=trusted,
                               location="gs://b/t")["gcs.service.host"] == evil
    assert _io({"s3.endpoint": evil + "/x"}, user={"s3.endpoint": evil})["s3.endpoint"] == evil + "/x"
    # A refresh endpoint alone vends nothing: the FileIO would hold the user's own (or the machine's)
    # credentials, so a server-named endpoint of that store is refused as with no answer at all (the
    # leak sweep found a user's ADLS account key signing requests to the authority such an answer named).
    for refresh, endpoint, location in [
            ("gcs.oauth2.refresh-credentials-endpoint", {"gcs.service.host": evil}, "gs://bucket/t"),
            ("adls.refresh-credentials-endpoint", {"adls.blob-storage-authority": "evil.test:9000"},
             "abfss://c@acct.dfs.core.windows.net/t"),
            ("client.refresh-credentials-endpoint", {"s3.endpoint": evil}, "s3://bucket/t")]:
        with pytest.raises(UntrustedOriginError, match=next(iter(endpoint))):
            _io({refresh: "v1/ns/t/credentials", **endpoint}, location=location)
    # Keys outside the allow-list never reach the FileIO, whoever issued what.
    assert "s3.proxy-uri" not in _io({"s3.access-key-id": "AK", "s3.proxy-uri": evil, "py-io-impl": "x"})


def test_trust_rules_origin_vectors():
    cases = json.loads(SPEC_PATH.read_text(encoding="utf-8"))["origin-vectors"]["cases"]
    assert len(cases) >= 20
    for case in cases:
        if "origin" in case:
            assert str(Origin.of(case["url"])) == case["origin"], case
        else:
            with pytest.raises(ValueError):
                Origin.of(case["url"])


def test_trust_rules_endpoint_vectors():
    """Where each endpoint setting sends, and which stores an answer issues: the vectors the JVM's
    ServerEndpointsVectorsTest replays too."""
    from pyspark_catalog_ext.catalog.server_settings import _endpoint_urls, issued_stores

    spec = json.loads(SPEC_PATH.read_text(encoding="utf-8"))["endpoint-vectors"]
    assert len(spec["urls"]) >= 10 and len(spec["issued"]) >= 10
    for case in spec["urls"]:
        props = {case["key"]: case["value"], **case.get("props", {})}
        assert _endpoint_urls(case["key"], case["value"], props) == case["urls"], case
    for case in spec["issued"]:
        assert sorted(issued_stores(case["answer"])) == case["stores"], case
