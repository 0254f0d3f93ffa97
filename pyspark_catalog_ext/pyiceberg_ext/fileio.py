"""A PyIceberg FileIO that opens every file with the table's current vended credentials.

`RefreshingFileIO` wraps the FileIO class PyIceberg picked, through the public FileIO API only:
each file gets the keys of its longest matching storage prefix from the table's `TableEntry`, one
delegate per key set; an open read stream reopens at its offset once its keys enter their hard
margin. Keys S3 refuses as expired are renewed at once (single flight) and the operation runs
again; other refusals are raised as they came. Writes stream resumably (`s3upload`, `storeupload`:
parts-in-flight + 1 parts in memory, nothing on disk); other stores' writes are spooled for replay,
within `catalog-ext.pyiceberg.spool-max-bytes`.

Why: docs/pyiceberg.md, section 'Writes and local disk' (the refresh: section 'PyIceberg jobs').
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

from pyiceberg.io import S3_ACCESS_KEY_ID, FileIO, InputFile, OutputFile
from pyiceberg.io.fsspec import FsspecFileIO

from pyspark_catalog_ext import knobs
from pyspark_catalog_ext.pyiceberg_ext.fileio_streams import (
    SPOOL_IN_MEMORY,
    SPOOL_KNOB,
    RefreshingInputFile,
    RefreshingOutputFile,
)
from pyspark_catalog_ext.refresh.entry import TableEntry
from pyspark_catalog_ext.refresh.refresher import CredentialRefresher
from pyspark_catalog_ext.refresh.rejection import Rejection, rejection_of, store_rejection
from pyspark_catalog_ext.refresh.rules import SENDS_PER_CALL
from pyspark_catalog_ext.refresh.vended import is_vended_key
from pyspark_catalog_ext.storage.accounts import adls_account
from pyspark_catalog_ext.storage.s3upload import S3Clients, UploadBounds, upload_bounds
from pyspark_catalog_ext.storage.storeupload import StoreClients

log = logging.getLogger("pyspark_catalog_ext.pyiceberg")

__all__ = ["SPOOL_KNOB", "RefreshingFileIO", "write_bounds"]

T = TypeVar("T")
_S3_SCHEMES = ("s3://", "s3a://", "s3n://")
_S3_CLIENTS = S3Clients(keep=16)  # the clients of resumable S3 writes, shared by every table's FileIO
_STORE_CLIENTS = StoreClients(keep=16)  # the same for GCS and ADLS writes


def write_bounds(properties: Mapping[str, Any]) -> tuple[UploadBounds, int]:
    """(S3 upload bounds, spool bytes) of a table's writes, from the catalog's `catalog-ext.pyiceberg.*` knobs."""
    return upload_bounds(properties), knobs.read_int(properties, SPOOL_KNOB)


class CurrentKeys(NamedTuple):
    """The keys an operation runs with: their generation, the delegate built with them, and when they
    enter their hard margin (from then on nothing new is sent with them)."""

    generation: int
    delegate: FileIO
    wait_at_s: float


class RefreshingFileIO(FileIO):
    """Delegates to `delegate_factory(properties)` built with the table's current credentials."""

    def __init__(self, properties: Mapping[str, Any], entry: TableEntry, refresher: CredentialRefresher,
                 delegate_factory: Callable[[dict], FileIO]) -> None:
        base = {k: v for k, v in properties.items() if not is_vended_key(k)}
        super().__init__(base)
        self._base = base
        self.entry = entry
        self._refresher = refresher
        self._factory = delegate_factory
        self._lock = threading.Lock()
        # (generation, id of the keys) -> delegate; only the current generation is kept (bounded).
        self._delegates: dict[tuple[int, int], FileIO] = {}  # (generation, id of the keys)
        self._generation = -1
        self.upload_bounds, self.spool_max_bytes = write_bounds(base)
        self._spool_said: set[str] = set()  # schemes whose spooled writes were announced
        self._delegate_for(entry.location or "")  # properties show the current keys from the start

    def _delegate_for(self, location: str) -> FileIO:
        return self._current(location).delegate

    def _current(self, location: str) -> CurrentKeys:
        """The current keys for `location` (renewed first when they are in their hard margin)."""
        generation, creds, wait_at_s = self.entry.slot_for(location)
        if self._refresher.ensure_fresh(self.entry, generation, wait_at_s):
            generation, creds, wait_at_s = self.entry.slot_for(location)
        key: tuple[int, int] = (generation, id(creds))  # a slot's keys are never mutated: identity names them
        delegate = self._delegates.get(key)  # the hot path: no lock
        if delegate is not None:
            return CurrentKeys(generation, delegate, wait_at_s)
        with self._lock:
            delegate = self._delegates.get(key)
            if delegate is None:
                if generation != self._generation:
                    retired = list(self._delegates.values())
                    self._delegates = {}
                    self._generation = generation
                    self.properties = {**self._base, **creds}
                    for old in retired:
                        _release(old)
                delegate = self._factory({**self._base, **creds})
                _share_botocore_session(delegate, location or self.entry.location or "")
                self._delegates = {**self._delegates, key: delegate}  # replaced, never mutated: lock-free reads
            return CurrentKeys(generation, delegate, wait_at_s)

    def _dying(self, keys: CurrentKeys) -> bool:
        """Are `keys` in their hard margin, i.e. too close to expiry to send anything new with?"""
        return self._refresher.clock() >= keys.wait_at_s

    # -- S3 rejecting the keys -------------------------------------------------------------------
    def _expired(self, exc: BaseException, location: str, keys: CurrentKeys) -> Rejection | None:
        """The rejection when `exc` is the store saying the keys are no longer valid, else None. An S3
        refusal without a code (PyArrow's, a HEAD's) is asked about once with the same keys; GCS and
        ADLS refusals are read by `rejection.store_rejection`."""
        if not location.startswith(_S3_SCHEMES):
            account = adls_account(dict(keys.delegate.properties), urlsplit(location).netloc)
            rejection = store_rejection(exc, location, account.sas_token if account else None, self._refresher.clock())
            return rejection if rejection is not None and rejection.expired else None
        rejection = rejection_of(exc)
        if rejection is not None and rejection.code is None:
            rejection = self._refresher.prober.probe(location, keys.delegate.properties)
        return rejection if rejection is not None and rejection.expired else None

    def _not_to_be_asked(self, exc: BaseException, location: str, keys: CurrentKeys) -> bool:
        """Is `exc` an S3 refusal without a code, of keys already replaced or in their hard margin? Asking
        S3 why (the probe) would send a request with keys nothing new may be sent with; the next try takes
        the current keys instead, which the shim's `RejectionRetries` does too (its probe signs with them)."""
        if not location.startswith(_S3_SCHEMES):
            return False
        rejection = rejection_of(exc)
        stale = self.entry.generation != keys.generation or self._dying(keys)
        return rejection is not None and rejection.code is None and stale

    def _recover(self, exc: BaseException, location: str, keys: CurrentKeys, attempt: int) -> bool:
        """After `exc` from try `attempt` (0-based) with `keys`: True when renewed keys are ready for
        another try; False when `exc` is not an expiry (the caller raises it)."""
        if attempt < SENDS_PER_CALL - 1 and self._not_to_be_asked(exc, location, keys):
            return True  # `_current` renews keys in their hard margin before the next try
        rejection = self._expired(exc, location, keys)
        if rejection is None:
            return False
        if attempt == SENDS_PER_CALL - 1 or self._refresher.dead_on_arrival(self.entry, keys.generation):
            raise self._refresher.rejected_again(self.entry, rejection) from exc
        self._refresher.rejected(self.entry, keys.generation, rejection)
        return True

    def _run(self, location: str, op: Callable[[FileIO], T]) -> T:
        """`op(delegate)` with the current keys; again with renewed keys if S3 rejected them as expired."""
        return self._run_keyed(location, op)[1]

    def _run_keyed(self, location: str, op: Callable[[FileIO], T]) -> tuple[CurrentKeys, T]:
        """`_run`, also naming the keys that succeeded."""
        rejected_at = None
        for attempt in range(SENDS_PER_CALL):
            keys = self._current(location)
            try:
                result = op(keys.delegate)
                self.entry.accepted(keys.generation)
                if rejected_at is not None:
                    self.entry.reactive_waits_s.append(time.monotonic() - rejected_at)
                return keys, result
            except Exception as exc:
                rejected_at = rejected_at or time.monotonic()
                if not self._recover(exc, location, keys, attempt):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def s3_call(self, location: str) -> Callable[[Callable[[Any], T]], T]:
        """`run(call)`: `call(boto3 S3 client)` with the current keys for `location`, renewed and run
        again when S3 rejects them as expired (what a resumable S3 write sends each request with)."""
        return lambda call: self._run(location, lambda delegate: call(_S3_CLIENTS.get(delegate.properties)))

    def store_call(self, location: str) -> Callable[[Callable[[Any], T]], T]:
        """`run(call)`: `call(store client)` with the current token for `location` (a gcsfs filesystem for
        GCS, an Azure BlobServiceClient for ADLS), renewed and run again when the store refuses it as expired."""
        return lambda call: self._run(location, lambda delegate: call(_STORE_CLIENTS.get(location, delegate.properties)))

    def announce_spool(self, location: str) -> None:
        """Say once per scheme, as such a write starts, that it is spooled for a replay, and its bound."""
        scheme = location.split("://", 1)[0] if "://" in location else "file"
        if scheme not in self._spool_said:
            self._spool_said.add(scheme)
            log.info("catalog-ext: writes of %s to %s:// keep a copy of up to %d bytes (local disk past %d) to replay after "
                     "an expiry: this store has no resumable upload here; beyond it an expiry fails the write (%s)",
                     self.entry.name, scheme, self.spool_max_bytes, SPOOL_IN_MEMORY, SPOOL_KNOB)

    def new_input(self, location: str) -> InputFile:
        return RefreshingInputFile(self, location)

    def new_output(self, location: str) -> OutputFile:
        return RefreshingOutputFile(self, location)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        path = location if isinstance(location, str) else location.location
        self._run(path, lambda delegate: delegate.delete(path))

    def __repr__(self) -> str:
        return f"RefreshingFileIO({self.entry.name!r}, generation={self._generation})"


_SESSION_LOCK = threading.Lock()
_SHARED_SESSION: list[Any] = []  # the one aiobotocore session of every s3fs filesystem built here


def _share_botocore_session(delegate: FileIO, location: str) -> None:
    """Give the s3fs filesystem of a new fsspec delegate the process's shared aiobotocore session.

    s3fs makes a new botocore session for each filesystem, i.e. for each set of keys, and creating
    its client there parses the S3 service model and endpoint rules again: 0.1 s of CPU that holds
    the GIL, and seconds on a loaded machine, during which no thread of the process runs. With a
    renewal every few minutes (every second in the tests) that stall came right after each renewal
    and held back requests that already carried the keys being replaced until those had died. In a
    shared session the models are parsed once and a client costs milliseconds; the keys still go
    to each client explicitly. Only for a synchronous s3fs filesystem with no session options of
    its own (a profile): all its calls run on fsspec's one event-loop thread, so the session is
    never used by two threads at once. Anything else keeps s3fs's own behaviour.
    """
    if not isinstance(delegate, FsspecFileIO):
        return
    scheme = location.split("://", 1)[0] if "://" in location else "s3"
    if scheme not in ("s3", "s3a", "s3n"):
        return
    try:
        from aiobotocore.session import AioSession
        from s3fs import S3FileSystem
    except ImportError:  # pragma: no cover - FsspecFileIO on S3 needs s3fs anyway
        return
    fs = delegate.get_fs(scheme)  # type: ignore[attr-defined]
    if (not isinstance(fs, S3FileSystem) or fs.asynchronous or fs.kwargs
            or getattr(fs, "session", None) is not None or getattr(fs, "_s3", None) is not None):
        return
    with _SESSION_LOCK:
        if not _SHARED_SESSION:
            _SHARED_SESSION.append(AioSession())
        fs.session = _SHARED_SESSION[0]


def _release(delegate: FileIO) -> None:
    """Let go of a retired delegate's filesystems.

    fsspec keeps every filesystem it ever built in a class-level instance cache (a plain dict by
    default), so each renewal would leave one s3fs client behind; drop those built with the old
    key. PyArrow filesystems are owned by the delegate alone and go with it.
    """
    akid = delegate.properties.get(S3_ACCESS_KEY_ID)
    if not akid or not isinstance(delegate, FsspecFileIO):
        return
    try:
        from s3fs import S3FileSystem
    except ImportError:  # pragma: no cover - FsspecFileIO on S3 needs s3fs anyway
        return
    cache = getattr(S3FileSystem, "_cache", None)
    if isinstance(cache, dict):
        for token, fs in list(cache.items()):
            if getattr(fs, "key", None) == akid:
                cache.pop(token, None)
