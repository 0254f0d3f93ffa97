"""The files and streams a `RefreshingFileIO` (fileio.py) hands out.

Every call goes to the delegate FileIO with the table's current keys, and runs again with renewed
keys when the store rejects them as expired. A read stream reopens at its offset; a write is its
store's resumable upload (`_RESUMABLE`, by scheme) or, for a store without one, the delegate's
stream with a bounded spool to replay.
"""

from __future__ import annotations

import importlib.util
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile, OutputStream

from pyspark_catalog_ext.errors import CredentialRefreshError
from pyspark_catalog_ext.refresh.rules import SENDS_PER_CALL
from pyspark_catalog_ext.storage.s3upload import ResumableS3Upload
from pyspark_catalog_ext.storage.storeupload import AdlsBlockUpload, GcsResumableUpload

if TYPE_CHECKING:
    from pyspark_catalog_ext.pyiceberg_ext.fileio import CurrentKeys, RefreshingFileIO

T = TypeVar("T")
# A write to a store without a resumable upload keeps what it wrote for a replay with new keys: in
# memory up to this, on local disk beyond (up to catalog-ext.pyiceberg.spool-max-bytes).
SPOOL_IN_MEMORY = 8 * 1024 * 1024
SPOOL_KNOB = "catalog-ext.pyiceberg.spool-max-bytes"


class RefreshingInputFile(InputFile):
    """The delegate's InputFile for each call, so every S3 request can be retried with renewed keys."""

    def __init__(self, io: RefreshingFileIO, location: str) -> None:
        super().__init__(location)
        self._io = io

    def __len__(self) -> int:
        return self._io._run(self.location, lambda delegate: len(delegate.new_input(self.location)))

    def exists(self) -> bool:
        return self._io._run(self.location, lambda delegate: delegate.new_input(self.location).exists())

    def open(self, seekable: bool = True) -> InputStream:
        return _InputStream(self._io, self.location, seekable)


class RefreshingOutputFile(OutputFile):
    def __init__(self, io: RefreshingFileIO, location: str) -> None:
        super().__init__(location)
        self._io = io

    def __len__(self) -> int:
        return self._io._run(self.location, lambda delegate: len(delegate.new_output(self.location)))

    def exists(self) -> bool:
        return self._io._run(self.location, lambda delegate: delegate.new_output(self.location).exists())

    def to_input_file(self) -> InputFile:
        return RefreshingInputFile(self._io, self.location)

    def create(self, overwrite: bool = False) -> OutputStream:
        writer = _RESUMABLE.get(self.location.split("://", 1)[0] if "://" in self.location else "")
        if writer is not None:
            return writer(self._io, self.location, overwrite)
        return _OutputStream(self._io, self.location, overwrite)


class _Stream:
    """A delegate's stream plus the keys it was opened with; reopened with renewed keys on an expiry."""

    def __init__(self, io: RefreshingFileIO, location: str) -> None:
        self._io, self._location = io, location
        self._closed = False
        self._keys, self._stream = self._open()

    def _open(self) -> tuple[CurrentKeys, Any]:
        return self._io._run_keyed(self._location, self._open_with)

    def _open_with(self, delegate: FileIO) -> Any:
        raise NotImplementedError

    def _call(self, fn: Callable[[Any], T]) -> T:
        if self._io._dying(self._keys) and self._drop_unsent():
            # Its keys are about to die: reopen with the current ones before sending anything more,
            # rather than let S3 refuse the request (the reactive path below is for keys that die early).
            self._keys, self._stream = self._open()
        rejected_at = None
        for attempt in range(SENDS_PER_CALL):
            try:
                result = fn(self._stream)
                self._io.entry.accepted(self._keys.generation)
                if rejected_at is not None:
                    self._io.entry.reactive_waits_s.append(time.monotonic() - rejected_at)
                return result
            except Exception as exc:
                rejected_at = rejected_at or time.monotonic()
                if not self._io._recover(exc, self._location, self._keys, attempt):
                    raise
            self._discard()
            self._keys, self._stream = self._open()
        raise AssertionError("unreachable")  # pragma: no cover

    def _discard(self) -> None:
        try:
            self._stream.close()
        except Exception:  # noqa: BLE001 - its keys are dead: closing may fail, the stream is dropped anyway
            pass

    def _drop_unsent(self) -> bool:
        """Let go of the stream without sending anything it holds; False if it cannot be (keep it)."""
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


class _InputStream(_Stream):
    """Reads; after an expiry it reopens with renewed keys at the offset it had reached (no byte read twice or lost)."""

    def __init__(self, io: RefreshingFileIO, location: str, seekable: bool) -> None:
        self._seekable, self._pos = seekable, 0
        self._end: int | None = None  # the file's size, once a stream told it
        super().__init__(io, location)

    # The stream is never moved to the file's end or past it: Arrow's GCS file starts a download at
    # every seek, and GCS refuses one that starts at the end (416 "The requested range cannot be
    # satisfied", for any `bytes=<size>-`: cloud.google.com/storage/docs/json_api/v1/status-codes),
    # which google-cloud-cpp raises as a permanent error. Arrow's Python-file reader asks for a size
    # by seeking to the end (`seek(0, 2)`), and a reopen after a renewal may be at the end. There the
    # position is kept here, and a read returns b"" unsent.
    def _open_with(self, delegate: FileIO) -> Any:
        stream = delegate.new_input(self._location).open(seekable=self._seekable or self._pos > 0)
        if self._pos and not self._at_end(stream, self._pos):
            stream.seek(self._pos)
        return stream

    def _at_end(self, stream: Any, position: int) -> bool:
        if self._end is None:
            size = getattr(stream, "size", None)  # PyArrow: a method; fsspec: an attribute
            try:
                size = size() if callable(size) else size
            except (OSError, ValueError):  # a stream that cannot tell (not seekable)
                size = None
            self._end = size if isinstance(size, int) else None
        return self._end is not None and position >= self._end

    def _call(self, fn: Callable[[Any], T]) -> T:
        """A read (any call but `seek`'s) at or past the end returns b"" unsent: the stream may not be there."""
        if self._end is not None and self._pos >= self._end:
            return b""  # type: ignore[return-value]
        return self._call_with_cause(fn)

    def _call_with_cause(self, fn: Callable[[Any], T]) -> T:
        """`fn` on the stream, a closed-file error traded for the store's own answer (seeks too: Arrow's
        GCS file starts a download at a seek, and a token that died since makes it closed there)."""

        def with_cause(stream: Any) -> T:
            try:
                return fn(stream)
            except ValueError:
                # Arrow's GCS file opens its download on first use and, when GCS refuses it (a token
                # that died since the open), reports itself closed (`GcsRandomAccessFile::closed()`):
                # PyArrow then raises "I/O operation on closed file" from every method. Opening the
                # file again with the same keys raises GCS's own answer, which the caller reads.
                if not self._closed:
                    self._keys.delegate.new_input(self._location).open().close()
                raise

        return super()._call(with_cause)

    def read(self, size: int = -1) -> bytes:
        data = self._call(lambda stream: stream.read(size) if size is not None and size >= 0 else stream.read())
        self._pos += len(data)
        return data

    def read_buffer(self, size: int = -1) -> Any:
        """What PyArrow reads a Python file through when it has this method: a PyArrow delegate's own
        buffer, not copied into `bytes` first (a scan reads every byte of the table this way)."""
        whole = size is None or size < 0

        def read(stream: Any) -> Any:
            if hasattr(stream, "read_buffer"):
                return stream.read_buffer(None if whole else size)
            return stream.read() if whole else stream.read(size)

        data = self._call(read)
        self._pos += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        def move(stream: Any) -> int:
            self._at_end(stream, 0)  # learn the size
            if whence not in (0, 1, 2) or (whence == 2 and self._end is None):
                stream.seek(offset, whence)  # the stream's own rules
                return int(stream.tell())
            target = offset if whence == 0 else self._pos + offset if whence == 1 else int(self._end or 0) + offset
            if target < 0:
                raise ValueError(f"negative seek position {target}")
            if not self._at_end(stream, target):
                stream.seek(target)
            return target

        self._pos = self._call_with_cause(move)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def _drop_unsent(self) -> bool:
        self._discard()  # closing a read stream sends nothing
        return True

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._stream.close()


class _OutputStream(_Stream):
    """Writes to a store without a resumable upload: a copy of what was written (spooled, bounded) is
    replayed into a new upload after an expiry."""

    def __init__(self, io: RefreshingFileIO, location: str, overwrite: bool) -> None:
        self._overwrite = overwrite
        io.announce_spool(location)
        # An anonymous temporary file (private to the user, unlinked at once) past the in-memory part.
        self._spool: Any = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115 - closed in close()
        self._written = 0
        super().__init__(io, location)

    def _open_with(self, delegate: FileIO) -> Any:
        stream = delegate.new_output(self._location).create(overwrite=self._overwrite)
        if self._written:
            if self._spool is None:
                stream.close()
                raise CredentialRefreshError(
                    f"the write of {self._location} outlived its keys after {self._written} bytes, more than "
                    f"{SPOOL_KNOB}={self._io.spool_max_bytes} keeps to replay; raise it, or write smaller files")
            self._spool.seek(0)
            while chunk := self._spool.read(1024 * 1024):
                stream.write(chunk)
            self._spool.seek(0, 2)
        return stream

    def write(self, data: bytes) -> int:
        self._call(lambda stream: stream.write(data))
        self._written += len(data)
        if self._spool is not None:
            if self._written > self._io.spool_max_bytes:
                self._spool.close()  # past the bound: no replay from here on
                self._spool = None
            else:
                self._spool.write(data)  # only once it went out: a replay must not repeat a failed write
        return len(data)

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        self._call(lambda stream: stream.flush())

    def _drop_unsent(self) -> bool:
        # An fsspec write stream can be thrown away unsent (s3fs aborts a multipart upload it began);
        # a PyArrow one cannot (closing completes its upload): it goes on, the reactive path covers it.
        if self._spool is None and self._written:
            return False  # nothing to replay from: keep the stream
        discard = getattr(self._stream, "discard", None)
        if not callable(discard):
            return False
        try:
            discard()
            self._stream.closed = True  # its close (also from __del__) must not upload what it held
        except Exception:  # noqa: BLE001 - its keys are still valid; an abort that fails leaves an unfinished upload S3 expires
            pass
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._call(lambda stream: stream.close())
        finally:
            self._closed = True
            if self._spool is not None:
                self._spool.close()


def _resumable_s3(io: RefreshingFileIO, location: str, overwrite: bool) -> OutputStream:
    return ResumableS3Upload(io.s3_call(location), location, io.upload_bounds, overwrite=overwrite)  # type: ignore[return-value]


def _resumable_gcs(io: RefreshingFileIO, location: str, overwrite: bool) -> OutputStream:
    if not _installed("gcsfs"):  # the [gcs] extra: without it, PyArrowFileIO's own stream and a spool
        return _OutputStream(io, location, overwrite)
    return GcsResumableUpload(io.store_call(location), location, io.upload_bounds, overwrite=overwrite)  # type: ignore[return-value]


def _resumable_adls(io: RefreshingFileIO, location: str, overwrite: bool) -> OutputStream:
    if not _installed("azure.storage.blob"):  # the [adls] extra: without it, PyArrowFileIO's own stream and a spool
        return _OutputStream(io, location, overwrite)
    return AdlsBlockUpload(io.store_call(location), location, io.upload_bounds, overwrite=overwrite)  # type: ignore[return-value]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


# Resumable writers by scheme: the store-specific part of a write (a store added here needs a writer
# that re-sends only what its store has not acknowledged; without one, writes are spooled).
_RESUMABLE: dict[str, Callable[[RefreshingFileIO, str, bool], OutputStream]] = {
    "s3": _resumable_s3, "s3a": _resumable_s3, "s3n": _resumable_s3,
    "gs": _resumable_gcs, "gcs": _resumable_gcs,
    "abfs": _resumable_adls, "abfss": _resumable_adls, "wasb": _resumable_adls, "wasbs": _resumable_adls}
