"""`staged cleanup` with keys a catalog vends WITHOUT an S3 endpoint (Iceberg's REST fixture does so):
the user's --s3-endpoint is where they go; with no endpoint at all they go to AWS S3 in their region,
as Iceberg's S3FileIO sends them (a catalog on AWS vends keys without an endpoint). A loopback catalog answers the stage-create as the fixture does (its keys in `config`,
no `s3.endpoint`); the storage is the real SeaweedFS."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.staging.cleanup import _s3_from_props, find_orphans
from tests.servers.scripted_catalog import R, Scripted, make
from tests.spark.test_staging import s3_admin

BUCKET = "warehouse"


@pytest.fixture
def staged(lakehouse) -> Iterator[tuple[Scripted, str, list[str]]]:
    """A dead job's staged files in SeaweedFS, and a catalog that vends the keys without an endpoint."""
    location = f"s3://{BUCKET}/cleanup_ep/t_{uuid.uuid4().hex[:8]}"
    keys = [f"{location.split('/', 3)[3]}/data/{i}.parquet" for i in range(3)]
    admin = s3_admin(lakehouse)
    for key in keys:
        admin.put_object(Bucket=BUCKET, Key=key, Body=b"x")
    srv = Scripted()
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": []}))
    srv.on("POST", "/v1/wh/namespaces/db/tables", R(200, {
        "metadata": {"location": location},
        "config": {"s3.access-key-id": lakehouse.info.access_key, "s3.secret-access-key": lakehouse.info.secret_key,
                   "s3.path-style-access": "true"}}))
    try:
        yield srv, location, [f"s3://{BUCKET}/{k}" for k in keys]
    finally:
        srv.close()
        admin.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys]})


def _dry_run(client, location: str):
    return find_orphans(client, location, table="db.t", min_age_seconds=0.001, allow_min_age_under_24h=True,
                        allow_non_table_prefix=True)


def test_vended_keys_without_an_endpoint_go_to_the_users_endpoint(lakehouse, staged) -> None:
    srv, location, written = staged
    client = make(srv, **{"s3.endpoint": lakehouse.info.s3_endpoint})
    report = _dry_run(client, location)
    assert sorted(u for u, _, _ in report.orphans) == sorted(written) and report.deleted == []


def test_vended_keys_without_any_endpoint_go_to_aws_s3_in_their_region() -> None:
    client = _s3_from_props({"s3.access-key-id": "AKIAEXAMPLE", "s3.secret-access-key": "x", "client.region": "eu-west-1"})
    assert client.meta.endpoint_url == "https://s3.eu-west-1.amazonaws.com"


def test_a_region_that_is_not_one_is_refused_in_one_line() -> None:
    """A table config's `client.region` is the catalog's to say; a URL there is no boto3 traceback."""
    with pytest.raises(ConfigError) as refused:
        _s3_from_props({"s3.access-key-id": "AKIAEXAMPLE", "s3.secret-access-key": "x", "client.region": "http://a.test/"})
    assert "\n" not in str(refused.value) and "is not a region name" in str(refused.value)
