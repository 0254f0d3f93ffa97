"""In vended-credentials mode, no credential a client of the embedded lakehouse holds reaches past
its catalog front: the client's OAuth2 login is the front's own (no SeaweedFS port accepts it), and
the S3 keys vended for a table cannot create or overwrite anything through SeaweedFS's own catalog
port, nor outside the table on S3. (Before, every client logged in with SeaweedFS's admin key pair,
which its own catalog port also accepts: the location guard could be bypassed.)"""

from __future__ import annotations

import uuid

import boto3
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError


def _login(uri: str, credential: str) -> requests.Response:
    cid, secret = credential.split(":", 1)
    return requests.post(f"{uri}/v1/oauth/tokens", timeout=10, data={"grant_type": "client_credentials", "client_id": cid,
                                                                     "client_secret": secret, "scope": "catalog"})


def test_a_clients_login_is_no_s3_key_and_seaweedfs_refuses_it(lakehouse):
    info = lakehouse.info
    raw = f"http://127.0.0.1:{info.ports['iceberg']}"
    cid, secret = info.credential.split(":", 1)
    assert (cid, secret) != (info.access_key, info.secret_key) and cid != info.access_key and secret != info.secret_key
    assert _login(info.iceberg_uri, info.credential).status_code == 200
    assert _login(raw, info.credential).status_code in (400, 401, 403)


def test_vended_keys_cannot_change_the_catalog_or_other_tables_through_seaweedfs(lakehouse):
    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    info = lakehouse.info
    catalog = pyiceberg_catalog(lakehouse)
    ns = "ident" + uuid.uuid4().hex[:8]
    catalog.create_namespace(ns)
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    mine = catalog.create_table((ns, "mine"), Schema(NestedField(1, "x", LongType(), required=False)))
    other = catalog.create_table((ns, "other"), Schema(NestedField(1, "x", LongType(), required=False)))
    props = mine.io.properties
    keys = Credentials(props["s3.access-key-id"], props["s3.secret-access-key"], props.get("s3.session-token"))
    # SeaweedFS's own catalog port, SigV4 with the vended keys: no namespace, no table, no commit.
    raw = f"http://127.0.0.1:{info.ports['iceberg']}"
    for method, path, body in (("POST", f"/v1/{info.warehouse}/namespaces", '{"namespace": ["stolen"]}'),
                               ("POST", f"/v1/{info.warehouse}/namespaces/{ns}/tables", '{"name": "stolen", "schema": '
                                '{"type": "struct", "schema-id": 0, "fields": []}}')):
        request = AWSRequest(method=method, url=raw + path, data=body, headers={"Content-Type": "application/json"})
        SigV4Auth(keys, "s3", "us-east-1").add_auth(request)
        resp = requests.request(method, raw + path, data=body, headers=dict(request.headers), timeout=10)
        assert resp.status_code in (400, 401, 403), (path, resp.status_code, resp.text[:200])
    assert not catalog.namespace_exists("stolen") and not catalog.table_exists((ns, "stolen"))
    # S3 with the vended keys: another table's metadata cannot be overwritten.
    s3 = boto3.client("s3", endpoint_url=info.s3_endpoint, region_name="us-east-1", aws_access_key_id=keys.access_key,
                      aws_secret_access_key=keys.secret_key, aws_session_token=keys.token,
                      config=Config(s3={"addressing_style": "path"}))
    bucket, key = other.metadata_location.split("://", 1)[1].split("/", 1)
    with pytest.raises(ClientError):
        s3.put_object(Bucket=bucket, Key=key, Body=b"{}")
    assert catalog.load_table((ns, "other")).metadata_location == other.metadata_location
    catalog.close()
