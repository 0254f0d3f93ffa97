"""The location guard's reads of the table bucket (admin keys): a registered table's metadata file,
and files that show a table the guard's index does not know."""

from __future__ import annotations

import json
import threading
from typing import Any

from pyspark_catalog_ext.lakehouse.canonical import Refusal, bad_request
from pyspark_catalog_ext.lakehouse.locations import ancestors, parse_location
from pyspark_catalog_ext.lakehouse.proxy import MAX_CATALOG_BODY

__all__ = ["TableFiles"]


class TableFiles:
    """S3 reads of the lakehouse's table bucket at `endpoint`, with the admin keys."""

    def __init__(self, endpoint: str, access_key: str, secret_key: str) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._keys = (access_key, secret_key)
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<TableFiles {self.endpoint}>"

    def client(self) -> Any:
        """One boto3 client (thread-safe; making one per call would cost more than the call)."""
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                self._client = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id=self._keys[0],
                                            aws_secret_access_key=self._keys[1],
                                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))
            return self._client

    def any_under(self, path: str) -> bool:
        """Whether any object lies under directory `path` (`bucket/key-prefix`)."""
        bucket, _, key = path.partition("/")
        return bool(self.client().list_objects_v2(Bucket=bucket, Prefix=key + "/", MaxKeys=1).get("KeyCount", 0))

    def registered_location(self, metadata_location: str) -> str | Refusal:
        """The table location inside the metadata file a register call points at."""
        bucket, key = metadata_location.split("/", 1)
        where = f"s3://{metadata_location}"
        try:
            obj = self.client().get_object(Bucket=bucket, Key=key)
            if int(obj.get("ContentLength") or 0) > MAX_CATALOG_BODY:
                return bad_request(f"register: the metadata file {where} is too large")
            location = json.loads(obj["Body"].read()).get("location")
        except Exception:  # noqa: BLE001 - unreadable metadata: refused
            return bad_request(f"register: the metadata file {where} cannot be read as Iceberg metadata")
        # What the file says is never echoed (it would make the guard a reader of any file's content).
        table_loc = parse_location(location, strict=True)
        if table_loc is None:
            return bad_request(f"register: the metadata file {where} names no plain s3://bucket/path table location")
        if not metadata_location.startswith(table_loc + "/"):
            return Refusal(403, "ForbiddenException", f"register: metadata {where} lies outside the table location it names")
        return table_loc

    def unindexed_table(self, path: str, namespace_dir: str, expected: tuple[str, ...] = (), files_expected: bool = False) -> str | None:
        """Where files show a table that may hold `path` (the guard's index said it is free): a
        metadata directory at `path` or above it in the namespace, or (unless `files_expected`)
        any file under `path`. `expected`: directories whose metadata is accounted for (a registered
        table's own). None when nothing shows. A table moved behind the guard's back to a place
        with no file yet leaves no trace here: the guard is the catalog's one writer."""
        if not files_expected and self.any_under(path):
            return path
        for above in ancestors(path):
            if above != namespace_dir and not above.startswith(namespace_dir + "/"):
                break
            if (files_expected or above != path) and above not in expected and self.any_under(f"{above}/metadata"):
                return f"{above}/metadata"
        return None
