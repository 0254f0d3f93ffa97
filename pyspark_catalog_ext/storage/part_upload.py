"""The part-by-part write stream every store's upload shares: a part of
`catalog-ext.pyiceberg.s3-part-bytes` (the same size for every part but the last) fills while earlier
ones are sent on one small pool, up to `catalog-ext.pyiceberg.s3-parts-in-flight` of a stream at once;
a stream holds at most parts-in-flight + 1 parts in memory and nothing on disk; nothing is visible
until the upload completes, and a failed or abandoned stream cancels it. The stores' own protocols are
in `s3upload` (multipart upload), and `storeupload` (GCS resumable upload, ADLS staged blocks).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

from pyspark_catalog_ext import knobs

__all__ = ["PARTS_IN_FLIGHT_KNOB", "PART_BYTES_KNOB", "PartUpload", "Run", "UPLOAD_THREADS", "UploadBounds", "upload_bounds", "upload_pool"]

PART_BYTES_KNOB = "catalog-ext.pyiceberg.s3-part-bytes"
PARTS_IN_FLIGHT_KNOB = "catalog-ext.pyiceberg.s3-parts-in-flight"
UPLOAD_THREADS = 8  # parts sent at once in the process, all streams together
_pool_lock = threading.Lock()
_pool: list[ThreadPoolExecutor] = []


class UploadBounds(NamedTuple):
    """A stream's part size and how many of its parts may be sent but not yet acknowledged."""

    part_bytes: int
    parts_in_flight: int


def upload_bounds(properties: Mapping[str, Any]) -> UploadBounds:
    """The bounds the catalog's properties set (`catalog-ext.pyiceberg.s3-part-bytes`, `...s3-parts-in-flight`)."""
    return UploadBounds(knobs.read_int(properties, PART_BYTES_KNOB), knobs.read_int(properties, PARTS_IN_FLIGHT_KNOB))


def upload_pool() -> ThreadPoolExecutor:
    """The process's one pool sending parts (every store's uploads share it)."""
    with _pool_lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="catalog-ext-s3-part"))
        return _pool[0]


Run = Callable[[Callable[[Any], Any]], Any]


class PartUpload:
    """A binary write stream to one object, sent in parts (see the module docstring). `run(call)` runs
    `call(client)` with a client holding the table's current credentials, renewing them when the store
    refuses them as expired. `bounds`: part size and parts in flight; `overwrite=False` refuses an
    existing object (FileExistsError); `align`: part sizes a multiple of it. Subclasses say how a store
    begins, sends a part, finishes, writes a small file whole, and cancels."""

    sequential = False  # True: a part is sent only once the previous one was acknowledged

    def __init__(self, run: Run, location: str, bounds: UploadBounds, overwrite: bool, align: int = 1) -> None:
        self._run = run
        self.location = location
        self._part_size = max(align, bounds.part_bytes // align * align)
        self._max_in_flight = bounds.parts_in_flight
        if not overwrite and self._exists():
            raise FileExistsError(f"Cannot create file, already exists: {location}")
        self._buffer = bytearray(self._part_size)
        self._filled = 0
        self._written = 0
        self._begun = False
        self._sent = 0  # parts handed to the pool
        self._parts: list[Any] = []  # what each acknowledged part answered, in order
        self._in_flight: deque[Future] = deque()
        self.closed = False

    # -- what each store does -----------------------------------------------------------------------
    def _exists(self) -> bool:
        raise NotImplementedError

    def _begin(self) -> None:
        raise NotImplementedError

    def _upload_part(self, number: int, offset: int, data: bytearray) -> Any:
        raise NotImplementedError

    def _finish(self, tail: bytearray, offset: int) -> None:
        raise NotImplementedError

    def _whole(self, data: bytearray) -> None:
        raise NotImplementedError

    def _cancel(self) -> None:
        raise NotImplementedError

    # -- the stream ---------------------------------------------------------------------------------
    def write(self, data: Any) -> int:
        if self.closed:
            raise ValueError(f"write to a closed stream ({self.location})")
        view = memoryview(data).cast("B")
        pos = 0
        while pos < len(view):
            n = min(len(view) - pos, self._part_size - self._filled)
            self._buffer[self._filled:self._filled + n] = view[pos:pos + n]
            self._filled += n
            pos += n
            if self._filled == self._part_size:
                self._send_part(self._buffer)
                self._buffer, self._filled = bytearray(self._part_size), 0  # the sent part stays the pool's
        self._written += len(view)
        return len(view)

    def tell(self) -> int:
        return self._written

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        """Nothing to do: a part goes out when full, the rest at close."""

    def __enter__(self) -> PartUpload:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()  # the writer failed: nothing half-written becomes visible

    def close(self) -> None:
        """Complete the object (written whole when it fits in one part); on failure cancel, then raise."""
        if self.closed:
            return
        self.closed = True
        try:
            del self._buffer[self._filled:]  # in place: the last part is the buffer itself, no copy
            if not self._begun:
                self._whole(self._buffer)
            else:
                self._wait(until=0)
                self._finish(self._buffer, self._sent * self._part_size)
        except BaseException:
            self._abort()
            raise
        finally:
            self._buffer = bytearray()

    def abort(self) -> None:
        """Drop the stream: nothing of it becomes visible."""
        if not self.closed:
            self.closed = True
            self._abort()
            self._buffer = bytearray()

    # -- parts --------------------------------------------------------------------------------------
    def _send_part(self, data: bytearray) -> None:
        if not self._begun:
            self._begin()
            self._begun = True
        self._wait(until=self._max_in_flight - 1)  # the bound on the stream's memory
        number, offset = self._sent + 1, self._sent * self._part_size
        before = self._in_flight[-1] if self.sequential and self._in_flight else None
        self._in_flight.append(upload_pool().submit(self._part_after, before, number, offset, data))
        self._sent += 1

    def _part_after(self, before: Future | None, number: int, offset: int, data: bytearray) -> Any:
        # The pool runs tasks in the order they came: `before` is running or done, never queued behind this one.
        if before is not None:
            before.result()  # raises its failure: nothing after a lost chunk is sent
        return self._upload_part(number, offset, data)

    def _wait(self, until: int) -> None:
        """Collect acknowledged parts, oldest first, until at most `until` are in flight (raises a part's failure)."""
        while len(self._in_flight) > until:
            self._parts.append(self._in_flight[0].result())
            self._in_flight.popleft()

    def _abort(self) -> None:
        pending, self._in_flight = self._in_flight, deque()
        for future in pending:  # cancelled only once none of its parts is still being sent
            try:
                future.result()
            except Exception:  # noqa: BLE001 - the write already failed; the cancel below still runs
                pass
        if self._begun:
            try:
                self._cancel()
            except Exception:  # noqa: BLE001 - best effort: an unfinished upload is never visible, the store drops it
                pass
