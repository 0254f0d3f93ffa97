"""`S3Clients` keeps one boto3 client per set of the settings `new_client` reads
(`s3upload.CLIENT_SETTINGS`): property sets that differ in a timeout or the addressing get their own."""

from __future__ import annotations

import ast
import inspect

from pyspark_catalog_ext.catalog.storage_keys import S3_CONNECT_TIMEOUT, S3_FORCE_VIRTUAL_ADDRESSING, S3_REQUEST_TIMEOUT
from pyspark_catalog_ext.storage import s3upload
from pyspark_catalog_ext.storage.s3upload import CLIENT_SETTINGS, S3Clients

BASE = {"s3.access-key-id": "AKID", "s3.secret-access-key": "S", "s3.endpoint": "http://127.0.0.1:9",
        "s3.region": "us-east-1"}


def test_property_sets_that_differ_in_any_setting_get_their_own_client() -> None:
    clients = S3Clients()
    first = clients.get(BASE)
    assert clients.get(dict(BASE)) is first
    for key, value in {S3_REQUEST_TIMEOUT: "5", S3_CONNECT_TIMEOUT: "7", S3_FORCE_VIRTUAL_ADDRESSING: "true"}.items():
        assert clients.get({**BASE, key: value}) is not first, key
    assert clients.get({**BASE, S3_REQUEST_TIMEOUT: "5"}).meta.config.read_timeout == 5
    assert clients.get({**BASE, S3_CONNECT_TIMEOUT: "7"}).meta.config.connect_timeout == 7


def test_the_cache_key_holds_every_setting_new_client_reads() -> None:
    tree = ast.parse(inspect.getsource(s3upload.new_client))
    read = {getattr(s3upload, call.args[0].id) for call in ast.walk(tree)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "get"
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "props"
            and call.args and isinstance(call.args[0], ast.Name)}
    assert read == set(CLIENT_SETTINGS)
