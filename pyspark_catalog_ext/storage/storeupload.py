"""GCS and ADLS writes with vended tokens that outlive the tokens: each store's own streaming upload,
which after an expiry re-sends only the part the store has not acknowledged, into the same upload.

- GCS: a resumable upload (gcsfs's `initiate_upload`, chunks in order to its session URI).
- ADLS: staged blocks (azure-storage-blob's `stage_block` / `commit_block_list`), up to
  parts-in-flight at once.
The part stream is `part_upload`'s, shared with S3: parts-in-flight + 1 parts in memory, nothing on
disk, every request with the table's current token, renewed and retried on expiry. Nothing is
visible until the upload completes.

Why: docs/stores.md, section 'PyIceberg 0.12: PyArrow and fsspec'.
"""

from __future__ import annotations

import io
import secrets
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from cachetools import LRUCache

from pyspark_catalog_ext.catalog.storage_keys import GCS_SERVICE_HOST
from pyspark_catalog_ext.refresh.vended import GCS_TOKEN
from pyspark_catalog_ext.storage.accounts import adls_account, gcs_filesystem
from pyspark_catalog_ext.storage.part_upload import PartUpload, Run, UploadBounds

__all__ = ["AdlsBlockUpload", "GcsResumableUpload", "StoreClients"]

_GCS_ALIGN = 256 * 1024  # GCS takes a resumable upload's chunks (all but the last) in multiples of this
_CONTENT_TYPE = "application/octet-stream"


class StoreClients:
    """The client of each token (a gcsfs filesystem; an Azure `BlobServiceClient`), the last few kept. Thread-safe."""

    def __init__(self, keep: int = 16) -> None:
        self._lock = threading.Lock()
        self._clients: LRUCache[tuple, Any] = LRUCache(maxsize=keep)

    def get(self, location: str, props: Mapping[str, Any]) -> Any:
        scheme, netloc = urlsplit(location).scheme, urlsplit(location).netloc
        if scheme in ("gs", "gcs"):
            key: tuple = ("gs", str(props.get(GCS_TOKEN) or ""), str(props.get(GCS_SERVICE_HOST) or ""))
        else:
            account = adls_account(dict(props), netloc)
            if account is None:
                raise PermissionError(f"no SAS token was vended for the account of {location}")
            key = ("adls", account.sas_token, account.endpoint)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = _new_client(key)
            return client


def _new_client(key: tuple) -> Any:
    if key[0] == "gs":
        return gcs_filesystem({GCS_TOKEN: key[1], GCS_SERVICE_HOST: key[2] or None})
    from azure.storage.blob import BlobServiceClient

    # As adlfs builds its client from a vended SAS (storefs.StoreFsspecFileIO).
    return BlobServiceClient.from_connection_string(f"BlobEndpoint={key[2]};SharedAccessSignature={key[1]}")


class _PartReader(io.RawIOBase):
    """A part as a file to read, without a copy. aiohttp sends a file in small reads, each waiting for the
    socket; given the bytes themselves, asyncio's transport would copy whatever the socket did not take
    at once: a second copy of the part in memory while it is sent."""

    def __init__(self, data: memoryview) -> None:
        super().__init__()
        self._data, self._pos = data, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), len(self._data) - self._pos)
        buffer[:n] = self._data[self._pos:self._pos + n]
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        self._pos = offset if whence == 0 else self._pos + offset if whence == 1 else len(self._data) + offset
        return self._pos

    def tell(self) -> int:
        return self._pos


class GcsResumableUpload(PartUpload):
    """A GCS resumable upload; `run(call)` runs `call(gcsfs filesystem with the current token)`."""

    sequential = True

    def __init__(self, run: Run, location: str, bounds: UploadBounds, overwrite: bool = True) -> None:
        parts = urlsplit(location)
        self._bucket, self._key = parts.netloc, parts.path.lstrip("/")
        self._session: str | None = None
        super().__init__(run, location, bounds, overwrite, align=_GCS_ALIGN)

    def _exists(self) -> bool:
        def info(fs: Any) -> bool:
            try:
                fs.info(f"{self._bucket}/{self._key}")  # not fs.exists: it answers False to any error, a refusal too
                return True
            except FileNotFoundError:
                return False

        return bool(self._run(info))

    def _begin(self) -> None:
        from fsspec.asyn import sync
        from gcsfs.core import initiate_upload

        self._session = str(self._run(lambda fs: sync(fs.loop, initiate_upload, fs, self._bucket, self._key, _CONTENT_TYPE)))

    def _chunk(self, data: Any, offset: int, total: int | None) -> None:
        """Send `data` at `offset` (`total`: the object's size, on the last chunk). Home-made on gcsfs's
        request: gcsfs's `upload_chunk` needs the object's size up front, which a stream knows only at
        its close; this is GCS's resumable protocol as gcsfs's `GCSFile._upload_chunk` speaks it."""
        view = memoryview(data)
        while True:
            end = offset + len(view) - 1
            size = "*" if total is None else str(total)
            head = {"Content-Type": _CONTENT_TYPE, "Content-Length": str(len(view)),
                    "Content-Range": f"bytes {offset}-{end}/{size}" if len(view) else f"bytes */{size}"}
            body = _PartReader(view) if len(view) else None

            def send(fs: Any, head: dict[str, str] = head, body: _PartReader | None = body) -> Any:
                return fs.call("POST", self._session, headers=head, data=body)  # gcsfs rewinds it for a retry

            headers, _ = self._run(send)
            kept = headers.get("Range")
            if kept is None:
                if total is None:  # 308 without a range: GCS kept nothing of a chunk it said it took
                    raise OSError(f"GCS kept none of the chunk at {offset} of {self.location}")
                return  # the last chunk: the object is complete
            stored_end = int(kept.rsplit("-", 1)[1])
            if stored_end >= end:
                return
            view, offset = view[stored_end + 1 - offset:], stored_end + 1  # the store kept less: send the rest

    def _upload_part(self, number: int, offset: int, data: bytearray) -> Any:
        self._chunk(data, offset, None)
        return number

    def _finish(self, tail: bytearray, offset: int) -> None:
        self._chunk(tail, offset, offset + len(tail))

    def _whole(self, data: bytearray) -> None:
        from fsspec.asyn import sync
        from gcsfs.core import simple_upload

        self._run(lambda fs: sync(fs.loop, simple_upload, fs, self._bucket, self._key, bytes(data), None, None, _CONTENT_TYPE))

    def _cancel(self) -> None:
        if self._session is not None:
            self._run(lambda fs: fs.call("DELETE", self._session))  # as gcsfs's GCSFile.discard


class AdlsBlockUpload(PartUpload):
    """A block blob written as staged blocks; `run(call)` runs `call(BlobServiceClient with the current SAS)`."""

    def __init__(self, run: Run, location: str, bounds: UploadBounds, overwrite: bool = True) -> None:
        parts = urlsplit(location)
        self._container, self._blob = parts.netloc.partition("@")[0], parts.path.lstrip("/")
        # Block ids of this stream only: a stale writer of the same blob never mixes its blocks with ours.
        self._stream_id = secrets.token_hex(8)
        super().__init__(run, location, bounds, overwrite)

    def _client(self, service: Any) -> Any:
        return service.get_blob_client(self._container, self._blob)

    def _exists(self) -> bool:
        return bool(self._run(lambda service: self._client(service).exists()))

    def _block_id(self, number: int) -> str:
        return f"{self._stream_id}-{number:06d}"  # all of one length, as Azure wants; the SDK encodes it

    def _begin(self) -> None:
        """Nothing to begin: a block staged is part of no blob until the commit."""

    def _upload_part(self, number: int, offset: int, data: bytearray) -> Any:
        block = self._block_id(number)
        self._run(lambda service: self._client(service).stage_block(block, data, length=len(data)))
        return block

    def _finish(self, tail: bytearray, offset: int) -> None:
        from azure.storage.blob import BlobBlock

        blocks = list(self._parts)
        if tail:
            blocks.append(self._upload_part(len(blocks) + 1, offset, tail))
        listed = [BlobBlock(block_id=b) for b in blocks]
        self._run(lambda service: self._client(service).commit_block_list(listed))

    def _whole(self, data: bytearray) -> None:
        self._run(lambda service: self._client(service).upload_blob(bytes(data), overwrite=True))

    def _cancel(self) -> None:
        """Nothing to send: uncommitted blocks never become part of the blob, and Azure drops them."""
