"""The doctor's S3 client settings come from where catalogs put them, resolved as Iceberg's S3FileIO
resolves them: the catalog properties, then the table answer's `config`, then the credential's own
config. A real Polaris 1.4.1 puts s3.endpoint, path-style access and the region only in the table
config (tests/emulators/observed/polaris-1.4.1.json); reading only the credential sent boto3 to AWS."""

from __future__ import annotations

import json

from pyspark_catalog_ext.catalog.profiles import get_profile
from pyspark_catalog_ext.doctor.context import Cleanup, ProbeContext, SecretBag
from tests.helpers import ROOT

OBSERVED = ROOT / "tests" / "emulators" / "observed" / "polaris-1.4.1.json"


def _ctx(props: dict[str, str]) -> ProbeContext:
    return ProbeContext(profile=get_profile("polaris"), props=props, connection={}, client=None,  # type: ignore[arg-type]
                        namespace="doctor_x", secrets=SecretBag(), cleanup=Cleanup())


def _polaris_stage_create() -> dict:
    """The recorded stage-create answer of Polaris 1.4.1 (port filled in, masked keys made up)."""
    observed = json.loads(OBSERVED.read_text())["observed"]
    text = json.dumps({"config": observed["stage-create.config"],
                       "storage-credentials": observed["stage-create.storage-credentials"]})
    return json.loads(text.replace("PORT", "9000").replace('"***"', '"made-up-secret"'))


def test_the_table_config_names_the_endpoint_polaris_leaves_out_of_the_credential():
    ctx = _ctx({})
    creds = ctx.credentials(_polaris_stage_create())
    assert [c.source for c in creds] == ["storage-credentials", "config"]
    assert "s3.endpoint" not in creds[0].config  # the credential alone would send boto3 to AWS
    for cred in creds:
        assert ctx.s3_settings(cred) == {"endpoint": "http://127.0.0.1:9000", "endpoint_from": "table config",
                                         "region": "us-east-1", "path_style": True}
    client = ctx.s3_client(creds[0])  # what every S3 probe and the staged-table cleanup use
    assert client.meta.endpoint_url == "http://127.0.0.1:9000"
    assert client.meta.config.s3["addressing_style"] == "path"


def test_a_credential_overrides_the_table_config_which_overrides_the_catalog_properties():
    props = {"s3.endpoint": "http://user-given:1", "s3.path-style-access": "true", "client.region": "eu-west-1"}
    ctx = _ctx(props)
    body = {"config": {"s3.endpoint": "http://table:2", "client.region": "us-west-2"},
            "storage-credentials": [{"prefix": "s3://b/t", "config": {"s3.access-key-id": "AKIA1", "s3.endpoint": "http://cred:3"}}]}
    (cred,) = ctx.credentials(body)
    assert ctx.s3_settings(cred) == {"endpoint": "http://cred:3", "endpoint_from": "storage-credentials",
                                     "region": "us-west-2", "path_style": True}
    del body["storage-credentials"][0]["config"]["s3.endpoint"]
    (cred,) = ctx.credentials(body)
    assert ctx.s3_settings(cred)["endpoint"] == "http://table:2"
    body["config"] = {}
    (cred,) = ctx.credentials(body)
    assert ctx.s3_settings(cred) == {"endpoint": "http://user-given:1", "endpoint_from": "catalog properties",
                                     "region": "eu-west-1", "path_style": True}
    assert _ctx({}).s3_settings(cred) == {"endpoint": None, "endpoint_from": None, "region": "us-east-1", "path_style": False}
