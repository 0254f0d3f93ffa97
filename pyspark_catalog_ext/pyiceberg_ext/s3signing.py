"""S3 requests signed by the catalog's signer, in both PyIceberg FileIOs (the S3-specific part of
remote signing; the signer client is `signing.RemoteSigner`).

- fsspec (`SigningFsspecFileIO`): an anonymous s3fs whose aiobotocore clients sign nothing
  themselves and ask the table's `RemoteSigner` in `before-sign` for every request, on a small
  thread pool off fsspec's event loop; a kept signature S3 refuses is dropped and signed afresh.
- PyArrow (`SigningPyArrowFileIO`): S3 paths through a PyArrow filesystem over that same s3fs.
- Writes, in both: `s3upload.ResumableS3Upload` through a botocore client signing the same way.
Each FileIO has its own filesystem and client: a table's requests are signed only by its signer.

Why: docs/signing.md, section 'PyIceberg'.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pyiceberg.io import (
    AWS_REGION,
    S3_CONNECT_TIMEOUT,
    S3_ENDPOINT,
    S3_FORCE_VIRTUAL_ADDRESSING,
    S3_PROXY_URI,
    S3_REGION,
    S3_REQUEST_TIMEOUT,
    S3_SERVER_SIDE_ENCRYPTION,
    S3_SSE_KMS_KEY_ID,
    FileIO,
    InputFile,
    OutputFile,
    OutputStream,
)
from pyiceberg.io.fsspec import FsspecFileIO
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.typedef import Properties

from pyspark_catalog_ext.catalog.storage_keys import S3_PATH_STYLE_ACCESS
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.storage.s3upload import ResumableS3Upload, new_client, upload_bounds
from pyspark_catalog_ext.storage.signing import RemoteSigner, Signed

__all__ = ["S3_SCHEMES", "SigningFsspecFileIO", "SigningPyArrowFileIO", "signing_filesystem"]

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
_POOL_THREADS = 16  # sign requests waiting on the signer at once (per process)
_pool_lock = threading.Lock()
_pool: list[ThreadPoolExecutor] = []
_session: list[Any] = []  # one aiobotocore session: S3's model is parsed once, not per filesystem
_KEPT = "catalog_ext_kept_signature"  # request context: the cache key of the kept signature it was sent with


def _sign_pool() -> ThreadPoolExecutor:
    with _pool_lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(_POOL_THREADS, thread_name_prefix="catalog-ext-signer"))
        return _pool[0]


def _aio_session() -> Any:
    """The process's aiobotocore session for signing filesystems. Creating a client parses S3's service
    model (~0.1 s of CPU holding the GIL) in a session of its own; in a shared one only the first
    time. Clients are created on fsspec's one event-loop thread, so never two at once."""
    from aiobotocore.session import AioSession

    with _pool_lock:
        if not _session:
            _session.append(AioSession())
        return _session[0]


class _Handlers:
    """The botocore event handlers that hand every request of one client to `signer`: `install`
    for aiobotocore clients (s3fs; the sign request runs on a thread pool, off the event loop),
    `install_sync` for a botocore client (the resumable writer's)."""

    def __init__(self, signer: RemoteSigner) -> None:
        self.signer = signer

    def install(self, events: Any) -> None:
        # unique ids: installing twice (a refreshed session) replaces rather than duplicates
        events.register("choose-signer.s3", self.choose_signer, unique_id="catalog-ext-remote-signing-choose")
        events.register("before-sign.s3", self.before_sign, unique_id="catalog-ext-remote-signing-sign")
        events.register("needs-retry.s3", self.needs_retry, unique_id="catalog-ext-remote-signing-retry")

    def install_sync(self, events: Any) -> None:
        events.register("choose-signer.s3", self.choose_signer, unique_id="catalog-ext-remote-signing-choose")
        events.register("before-sign.s3", self.before_sign_sync, unique_id="catalog-ext-remote-signing-sign")
        events.register("needs-retry.s3", self.needs_retry, unique_id="catalog-ext-remote-signing-retry")

    @staticmethod
    def choose_signer(**_: Any) -> Any:
        import botocore

        return botocore.UNSIGNED  # botocore signs nothing itself: the catalog's signer does (before_sign)

    def _asked(self, request: Any, kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        """The arguments of `RemoteSigner.sign` for `request` (a DeleteObjects gets its Content-MD5 first)."""
        body = _delete_objects_body(request)
        if body is not None and not _has_header(request.headers, "Content-MD5"):
            # S3 requires an integrity header on DeleteObjects; MD5 is the one every S3 and signer knows
            request.headers["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()  # noqa: S324
        region = kwargs.get("region_name") or request.context.get("client_region") or "us-east-1"
        return request.method, request.url, {k: v for k, v in request.headers.items()}, region, body

    @staticmethod
    def _apply(request: Any, signed: Signed) -> None:
        request.url = signed.url
        for name, value in signed.headers.items():
            if name in request.headers:
                del request.headers[name]
            request.headers[name] = value
        # the request's context lives across botocore's attempts: needs_retry reads it
        if signed.kept is not None:
            request.context[_KEPT] = signed.kept
        else:
            request.context.pop(_KEPT, None)

    async def before_sign(self, request: Any, **kwargs: Any) -> None:
        asked = self._asked(request, kwargs)
        kept = self.signer.kept_signature(*asked)  # a kept one: no thread hop, no sign request
        if kept is None:
            loop = asyncio.get_running_loop()
            kept = await loop.run_in_executor(_sign_pool(), self.signer.signed, *asked)
        self._apply(request, kept)

    def before_sign_sync(self, request: Any, **kwargs: Any) -> None:
        self._apply(request, self.signer.signed(*self._asked(request, kwargs)))

    def needs_retry(self, response: Any = None, request_dict: Any = None, **_: Any) -> int | None:
        """S3 refused (403) a request sent with a kept signature: drop it and send the request again at
        once, signed afresh (before-sign runs again). Once: a fresh signature S3 refuses is the answer."""
        context = (request_dict or {}).get("context")
        key = context.pop(_KEPT, None) if isinstance(context, dict) else None
        if key is None or response is None or getattr(response[0], "status_code", None) != 403:
            return None
        self.signer.forget(key)
        return 0


def _has_header(headers: Any, name: str) -> bool:
    return any(k.lower() == name.lower() for k in headers.keys())


def _delete_objects_body(request: Any) -> bytes | None:
    """A DeleteObjects request's XML body (POST ?delete), else None: the signer must see what it deletes."""
    if request.method != "POST":
        return None
    try:
        if "delete" not in dict(parse_qsl(urlsplit(request.url).query, keep_blank_values=True)):
            return None
    except ValueError:
        return None
    body = request.body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    return None  # botocore serialises DeleteObjects to bytes; anything else reaches the signer without a body


def _signing_s3fs_class() -> type:
    try:
        from s3fs import S3FileSystem
    except ImportError:
        raise ConfigError("remote signing in PyIceberg needs s3fs (both FileIOs sign through it): "
                          "pip install 'pyspark-catalog-ext[signing]'") from None

    class SigningS3FileSystem(S3FileSystem):
        """An anonymous s3fs filesystem whose every client signs through one table's `RemoteSigner`."""

        def __init__(self, *, signer: RemoteSigner, **kwargs: Any) -> None:
            self._catalog_ext_handlers = _Handlers(signer)
            super().__init__(anon=True, session=_aio_session(), **kwargs)

        async def set_session(self, refresh: bool = False, kwargs: Mapping[str, Any] | None = None) -> Any:
            s3 = await super().set_session(refresh=refresh, kwargs=dict(kwargs or {}))
            self._catalog_ext_handlers.install(s3.meta.events)
            return s3

        async def _info(self, path: str, bucket: Any = None, key: Any = None, refresh: bool = False,
                        version_id: Any = None) -> dict[str, Any]:
            """An object's details from a GET of its first byte rather than s3fs's HEAD: the reads
            that follow are GETs of the same object, so one signature serves them all (a HEAD is
            another method, hence another sign request per file). Anything else (a bucket, a
            version, a directory, a missing or empty object) is s3fs's own answer."""
            bucket, key, path_version = self.split_path(self._strip_protocol(path))
            if not key or version_id or path_version or (not refresh and self._ls_from_cache(f"{bucket}/{key}")):
                return await super()._info(path, refresh=refresh, version_id=version_id)
            try:
                out = await self._call_s3("get_object", self.kwargs, Bucket=bucket, Key=key, Range="bytes=0-0")
            except PermissionError:
                raise  # the signer's or S3's refusal, as it came (a HEAD would be refused the same way)
            except OSError:  # missing, empty (416), or odd: s3fs's HEAD and listing decide
                return await super()._info(path, refresh=refresh, version_id=version_id)
            body, total = out["Body"], str(out.get("ContentRange") or "").rpartition("/")[2]
            try:
                if total.isdigit():
                    await body.read()  # one byte; read so the connection goes back to the pool
                    size = int(total)
                else:  # a server that ignored the Range: its length, and the body left unread
                    size = int(out["ContentLength"])
            finally:
                body.close()
            return {"ETag": out.get("ETag", ""), "LastModified": out.get("LastModified", ""), "size": size,
                    "name": f"{bucket}/{key}", "type": "file", "StorageClass": out.get("StorageClass", "STANDARD"),
                    "VersionId": out.get("VersionId"), "ContentType": out.get("ContentType")}

    return SigningS3FileSystem


_S3FS_CLASS: list[type] = []


def signing_filesystem(properties: Mapping[str, Any], signer: RemoteSigner) -> Any:
    """An s3fs filesystem for one table that signs through `signer`, configured from the FileIO's
    properties as PyIceberg configures its own (endpoint, region, addressing, proxy, timeouts,
    server-side encryption). Checksums only where S3 requires them: a streaming checksum trailer
    (botocore's default over TLS) needs a payload hash the signer never sees."""
    with _pool_lock:
        if not _S3FS_CLASS:
            _S3FS_CLASS.append(_signing_s3fs_class())
    config: dict[str, Any] = {"request_checksum_calculation": "when_required", "response_checksum_validation": "when_required"}
    if str(properties.get(S3_PATH_STYLE_ACCESS, "")).lower() == "true":
        config["s3"] = {"addressing_style": "path"}
    elif str(properties.get(S3_FORCE_VIRTUAL_ADDRESSING, "")).lower() == "true":
        config["s3"] = {"addressing_style": "virtual"}
    if properties.get(S3_PROXY_URI):
        config["proxies"] = {"http": properties[S3_PROXY_URI], "https": properties[S3_PROXY_URI]}
    if properties.get(S3_CONNECT_TIMEOUT):
        config["connect_timeout"] = float(properties[S3_CONNECT_TIMEOUT])
    if properties.get(S3_REQUEST_TIMEOUT):
        config["read_timeout"] = float(properties[S3_REQUEST_TIMEOUT])
    extra: dict[str, Any] = {}
    if properties.get(S3_SERVER_SIDE_ENCRYPTION):
        extra["ServerSideEncryption"] = properties[S3_SERVER_SIDE_ENCRYPTION]
    if properties.get(S3_SSE_KMS_KEY_ID):
        extra["SSEKMSKeyId"] = properties[S3_SSE_KMS_KEY_ID]
    region = properties.get(S3_REGION) or properties.get(AWS_REGION)
    # skip_instance_cache: fsspec would otherwise hand this table's FileIO another FileIO's filesystem
    # (and so its signer) whenever their arguments look alike
    return _S3FS_CLASS[0](signer=signer, skip_instance_cache=True, endpoint_url=properties.get(S3_ENDPOINT) or None,
                          client_kwargs={"region_name": region} if region else {}, config_kwargs=config,
                          **({"s3_additional_kwargs": extra} if extra else {}))


def _handler_class() -> type:
    from pyarrow import PythonFile
    from pyarrow.fs import FSSpecHandler

    class SigningHandler(FSSpecHandler):
        """PyArrow's FSSpecHandler, except where it asks fsspec's `isfile`/`exists`, which answer False
        for any error: the signer's refusal would reach the user as FileNotFoundError. `info` raises
        it as it is (and a missing file as FileNotFoundError), and its size spares s3fs a second HEAD."""

        def _file_size(self, path: str) -> int:
            info = self.fs.info(path)
            if info.get("type") != "file":
                raise FileNotFoundError(path)
            return int(info["size"])

        def open_input_file(self, path: str) -> Any:
            size = self._file_size(path)
            # Random access (Parquet): Arrow asks exact, coalesced ranges, so fsspec's read-ahead cache
            # would only fetch past them and copy each once more (PyArrow scan against static keys:
            # 0.70-0.83 with it, 0.91-0.93 without, on the same machine; docs/benchmarks.md). One
            # signature serves every range of an object, so exact ranges cost no sign requests.
            return PythonFile(self.fs.open(path, mode="rb", size=size, cache_type="none"), mode="r")

        def open_input_stream(self, path: str) -> Any:
            size = self._file_size(path)
            return PythonFile(self.fs.open(path, mode="rb", size=size), mode="r")

        def delete_file(self, path: str) -> None:
            self._file_size(path)
            self.fs.rm(path)

    return SigningHandler


class _SignedWrites:
    """What both signing FileIOs share: writes to S3 are `ResumableS3Upload`s through a botocore client
    that signs every request at the table's signer (parts of `catalog-ext.pyiceberg.s3-part-bytes` sent
    while the next fills: parts-in-flight + 1 parts of memory per stream, nothing on disk). s3fs's own
    write stream holds a 50 MB block and uploads it while the writer waits; PyArrow's filesystem over
    s3fs would inherit that."""

    signer: RemoteSigner
    properties: Properties

    def _writes_init(self) -> None:
        self._client: Any = None
        self._client_lock = threading.Lock()
        self.upload_bounds = upload_bounds(self.properties)

    def s3_call(self, location: str) -> Any:
        """`run(call)`: `call(client)` with the table's signing botocore client."""
        with self._client_lock:
            if self._client is None:
                import botocore

                # UNSIGNED: botocore never looks for keys (the FileIO has none; no ambient one is used)
                self._client = new_client(self.properties, signature_version=botocore.UNSIGNED,
                                          request_checksum_calculation="when_required",
                                          response_checksum_validation="when_required")
                _Handlers(self.signer).install_sync(self._client.meta.events)
            client = self._client
        return lambda call: call(client)


class _SignedOutputFile(OutputFile):
    """An OutputFile whose stream is a signed `ResumableS3Upload`; length and existence are the FileIO's own."""

    def __init__(self, io: Any, location: str, plain: OutputFile) -> None:
        super().__init__(location)
        self._io, self._plain = io, plain

    def __len__(self) -> int:
        return len(self._plain)

    def exists(self) -> bool:
        return self._plain.exists()

    def to_input_file(self) -> InputFile:
        return self._io.new_input(self.location)

    def create(self, overwrite: bool = False) -> OutputStream:
        return ResumableS3Upload(self._io.s3_call(self.location), self.location, self._io.upload_bounds,  # type: ignore[return-value]
                                 overwrite=overwrite)


def _signed_output(io: Any, base: type[FileIO], location: str) -> OutputFile:
    plain = base.new_output(io, location)
    if location.split("://", 1)[0] not in S3_SCHEMES:
        return plain
    return _SignedOutputFile(io, location, plain)


class SigningFsspecFileIO(_SignedWrites, FsspecFileIO):
    """PyIceberg's FsspecFileIO whose S3 requests are signed by one table's signer."""

    def __init__(self, properties: Mapping[str, Any], signer: RemoteSigner) -> None:
        self.signer = signer
        self._s3fs: Any = None
        self._s3fs_lock = threading.Lock()
        FsspecFileIO.__init__(self, properties=dict(properties))
        self._writes_init()

    def _get_fs(self, scheme: str, hostname: str | None = None) -> Any:
        if scheme not in S3_SCHEMES:
            return super()._get_fs(scheme, hostname)
        with self._s3fs_lock:  # one filesystem for every thread (PyIceberg would make one per thread)
            if self._s3fs is None:
                self._s3fs = signing_filesystem(self.properties, self.signer)
            return self._s3fs

    def new_output(self, location: str) -> OutputFile:  # type: ignore[override]
        return _signed_output(self, FsspecFileIO, location)

    def __repr__(self) -> str:
        return f"SigningFsspecFileIO({self.signer.table!r})"


class SigningPyArrowFileIO(_SignedWrites, PyArrowFileIO):
    """PyIceberg's PyArrowFileIO whose S3 paths go through a PyArrow filesystem backed by the signing
    s3fs (PyArrow's own S3 client cannot sign remotely); other schemes are PyArrow's own."""

    def __init__(self, properties: Mapping[str, Any], signer: RemoteSigner) -> None:
        self.signer = signer
        PyArrowFileIO.__init__(self, properties=dict(properties))
        self._writes_init()

    def _initialize_fs(self, scheme: str, netloc: str | None = None) -> Any:
        if scheme not in S3_SCHEMES:
            return super()._initialize_fs(scheme, netloc)
        from pyarrow.fs import PyFileSystem

        return PyFileSystem(_handler_class()(signing_filesystem(self.properties, self.signer)))

    def new_output(self, location: str) -> OutputFile:  # type: ignore[override]
        return _signed_output(self, PyArrowFileIO, location)

    def __repr__(self) -> str:
        return f"SigningPyArrowFileIO({self.signer.table!r})"
