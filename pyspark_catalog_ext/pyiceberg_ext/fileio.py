"""A PyIceberg FileIO that opens every file with the table's current vended credentials.

PyIceberg builds one FileIO per table from the keys of the load/create answer and never changes
them (apache/iceberg-python#3506). `RefreshingFileIO` wraps the FileIO class PyIceberg picked
(`py-io-impl`, or the default for the scheme: PyArrowFileIO or FsspecFileIO) through the public
FileIO API only (`new_input`, `new_output`, `delete`, `properties`): for each file it takes the
keys of the longest matching storage prefix from the table's `TableCredentials`, and keeps one
delegate FileIO per key set, replaced when the keys are renewed. A stream already open keeps the
filesystem it was opened with; every new file uses the new keys.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from pyiceberg.io import FileIO, InputFile, OutputFile

from pyspark_catalog_ext.pyiceberg_ext.refresher import CredentialRefresher, TableCredentials
from pyspark_catalog_ext.secret_keys import is_secret_key

__all__ = ["RefreshingFileIO"]


def _is_vended_key(key: str) -> bool:
    """S3 keys that come with each renewal (never kept from the first answer)."""
    return key.startswith("s3.") and (is_secret_key(key) or key == "s3.session-token-expires-at-ms")


class RefreshingFileIO(FileIO):
    """Delegates to `delegate_factory(properties)` built with the table's current credentials."""

    def __init__(self, properties: Mapping[str, Any], entry: TableCredentials, refresher: CredentialRefresher,
                 delegate_factory: Callable[[dict], FileIO]) -> None:
        base = {k: v for k, v in properties.items() if not _is_vended_key(k)}
        super().__init__(base)
        self._base = base
        self.entry = entry
        self._refresher = refresher
        self._factory = delegate_factory
        self._lock = threading.Lock()
        # (generation, id of the keys) -> delegate; only the current generation is kept (bounded).
        self._delegates: dict[tuple[int, int], FileIO] = {}  # (generation, id of the keys)
        self._generation = -1
        self._delegate_for(entry.location or "")  # properties show the current keys from the start

    def _delegate_for(self, location: str) -> FileIO:
        generation, creds, wait_at_s = self.entry.slot_for(location)
        if self._refresher.ensure_fresh(self.entry, generation, wait_at_s):
            generation, creds, _ = self.entry.slot_for(location)
        key: tuple[int, int] = (generation, id(creds))  # a slot's keys are never mutated: identity names them
        delegate = self._delegates.get(key)  # the hot path: no lock
        if delegate is not None:
            return delegate
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
                self._delegates = {**self._delegates, key: delegate}  # replaced, never mutated: lock-free reads
            return delegate

    def new_input(self, location: str) -> InputFile:
        return self._delegate_for(location).new_input(location)

    def new_output(self, location: str) -> OutputFile:
        return self._delegate_for(location).new_output(location)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        path = location if isinstance(location, str) else location.location
        self._delegate_for(path).delete(location)

    def __repr__(self) -> str:
        return f"RefreshingFileIO({self.entry.name!r}, generation={self._generation})"


def _release(delegate: FileIO) -> None:
    """Let go of a retired delegate's filesystems.

    fsspec keeps every filesystem it ever built in a class-level instance cache (a plain dict by
    default), so each renewal would leave one s3fs client behind; drop those built with the old
    key. PyArrow filesystems are owned by the delegate alone and go with it.
    """
    akid = delegate.properties.get("s3.access-key-id")
    if not akid or type(delegate).__name__ != "FsspecFileIO":
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
