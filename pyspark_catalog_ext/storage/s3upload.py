"""S3 writes with vended keys that outlive the keys: an S3 multipart upload of our own, which after an
expiry re-sends only the part S3 has not acknowledged.

`ResumableS3Upload` writes the object through botocore, for both FileIOs (PyArrow's stream cannot
resume; s3fs's only through private fields): parts of `catalog-ext.pyiceberg.s3-part-bytes`, up to
`...s3-parts-in-flight` of a stream at once; every request runs through `run`, with the table's
current keys, renewed and retried on expiry, into the same upload; a stream holds at most
parts-in-flight + 1 parts in memory and nothing on disk; nothing is visible until the upload
completes, and a failed stream aborts it.

Why: docs/pyiceberg.md, section 'Writes and local disk'.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

from cachetools import LRUCache

from pyspark_catalog_ext.catalog.storage_keys import (
    CLIENT_REGION,
    S3_ACCESS_KEY_ID,
    S3_CONNECT_TIMEOUT,
    S3_ENDPOINT,
    S3_FORCE_VIRTUAL_ADDRESSING,
    S3_PATH_STYLE_ACCESS,
    S3_PROXY_URI,
    S3_REGION,
    S3_REQUEST_TIMEOUT,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
)
from pyspark_catalog_ext.storage.part_upload import (
    PART_BYTES_KNOB,
    PARTS_IN_FLIGHT_KNOB,
    UPLOAD_THREADS,
    PartUpload,
    UploadBounds,
    upload_bounds,
    upload_pool,
)

T = TypeVar("T")
__all__ = ["PARTS_IN_FLIGHT_KNOB", "PART_BYTES_KNOB", "ResumableS3Upload", "S3Clients", "UploadBounds",
           "new_client", "upload_bounds", "upload_pool"]

_session_lock = threading.Lock()
_session: list[Any] = []


#: Every FileIO property `new_client` reads: two property sets that differ in none of them share a client.
CLIENT_SETTINGS = (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN, S3_ENDPOINT, S3_REGION, CLIENT_REGION,
                   S3_PATH_STYLE_ACCESS, S3_FORCE_VIRTUAL_ADDRESSING, S3_PROXY_URI, S3_CONNECT_TIMEOUT, S3_REQUEST_TIMEOUT)


def new_client(props: Mapping[str, Any], **config: Any) -> Any:
    """A boto3 S3 client configured from FileIO properties (endpoint, region, keys, addressing, proxy,
    timeouts), `config` added to its botocore Config. All come from one botocore session, which builds
    one client at a time (S3's model is parsed once: in a session per client that is ~0.1 s of CPU
    holding the GIL, at every renewal)."""
    import boto3
    from botocore.config import Config

    s3: dict[str, Any] = {"addressing_style": "path"} if str(props.get(S3_PATH_STYLE_ACCESS, "")).lower() == "true" \
        else {"addressing_style": "virtual"} if str(props.get(S3_FORCE_VIRTUAL_ADDRESSING, "")).lower() == "true" else {}
    # Bodies are covered by the CRC32 checksum S3 verifies (a signed header), not by a SHA-256 of the
    # whole body in the signature: botocore does so over https, and PyArrow's own S3 client always;
    # over http botocore would hash every part once more (0.15 s of CPU per 256 MB here).
    s3["payload_signing_enabled"] = False
    proxy = props.get(S3_PROXY_URI)
    settings = Config(s3=s3, proxies={"http": proxy, "https": proxy} if proxy else None,
                      connect_timeout=float(props.get(S3_CONNECT_TIMEOUT) or 60),
                      read_timeout=float(props.get(S3_REQUEST_TIMEOUT) or 60),
                      retries={"max_attempts": 3, "mode": "standard"}, max_pool_connections=UPLOAD_THREADS + 2, **config)
    with _session_lock:
        if not _session:
            _session.append(boto3.session.Session())
        return _session[0].client(
            "s3", endpoint_url=props.get(S3_ENDPOINT) or None,
            region_name=props.get(S3_REGION) or props.get(CLIENT_REGION) or None,
            aws_access_key_id=props.get(S3_ACCESS_KEY_ID) or None,
            aws_secret_access_key=props.get(S3_SECRET_ACCESS_KEY) or None,
            aws_session_token=props.get(S3_SESSION_TOKEN) or None, config=settings)


class S3Clients:
    """boto3 S3 clients (`new_client`) for the FileIO properties of each key set; the last few key
    sets are kept. Thread-safe."""

    def __init__(self, keep: int = 8) -> None:
        self._lock = threading.Lock()
        self._clients: LRUCache[tuple, Any] = LRUCache(maxsize=keep)

    def get(self, props: Mapping[str, Any]) -> Any:
        key = tuple(str(props.get(k) or "") for k in CLIENT_SETTINGS)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = new_client(props)
            return client


def _bucket_key(location: str) -> tuple[str, str]:
    parts = urlsplit(location)
    return parts.netloc, parts.path.lstrip("/")


class ResumableS3Upload(PartUpload):
    """A binary write stream to one S3 object (see the module docstring): an S3 multipart upload, or one
    PutObject for a file under one part."""

    def __init__(self, run: Callable[[Callable[[Any], T]], T], location: str, bounds: UploadBounds,
                 overwrite: bool = True) -> None:
        self._bucket, self._key = _bucket_key(location)
        self._upload_id: str | None = None
        super().__init__(run, location, bounds, overwrite)

    def _exists(self) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._run(lambda s3: s3.head_object(Bucket=self._bucket, Key=self._key))
            return True
        except ClientError as exc:
            if str((exc.response.get("Error") or {}).get("Code")) in ("404", "NoSuchKey", "NotFound"):
                return False
            raise

    def _begin(self) -> None:
        created = self._run(lambda s3: s3.create_multipart_upload(Bucket=self._bucket, Key=self._key))
        self._upload_id = str(created["UploadId"])

    def _upload_part(self, number: int, offset: int, data: bytearray) -> dict[str, Any]:
        answer = self._run(lambda s3: s3.upload_part(Bucket=self._bucket, Key=self._key, UploadId=self._upload_id,
                                                     PartNumber=number, Body=data))
        return {"PartNumber": number, "ETag": answer["ETag"]}

    def _finish(self, tail: bytearray, offset: int) -> None:
        parts = list(self._parts)
        if tail:
            parts.append(self._upload_part(len(parts) + 1, offset, tail))
        listed = {"Parts": parts}
        self._run(lambda s3: s3.complete_multipart_upload(Bucket=self._bucket, Key=self._key,
                                                          UploadId=self._upload_id, MultipartUpload=listed))

    def _whole(self, data: bytearray) -> None:
        self._run(lambda s3: s3.put_object(Bucket=self._bucket, Key=self._key, Body=data))

    def _cancel(self) -> None:
        upload_id = self._upload_id  # best effort (the caller ignores a failure): S3 lifecycle rules expire one left behind
        self._run(lambda s3: s3.abort_multipart_upload(Bucket=self._bucket, Key=self._key, UploadId=upload_id))
