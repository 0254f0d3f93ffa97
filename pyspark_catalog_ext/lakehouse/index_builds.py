"""The location guard's namespace indexes (table_index.py): built in the background, kept up to
date, forgotten when unsure.

A build lists a namespace's names, loads each table on a few daemon threads (about 20 s for 5,000
tables here, so the first change does not wait for it when an exact check of that one change is
cheaper: guard.py, `_quick_check`), and is finished under the namespace's lock, where the tables
the guard changed meanwhile (`touched`) are read again: the installed index is exact. No quick check
in a namespace older than the guard (those are indexed as it starts) or where it saw a table stored
away from its location.

Why: docs/lakehouse.md, section 'Table locations' ("Cost").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager

from pyspark_catalog_ext.lakehouse.locations import Ident, StoredTable, purged_dir
from pyspark_catalog_ext.lakehouse.table_index import MAX_INDEXED_NAMESPACES, Namespace, NamespaceIndex, TableIndex

__all__ = ["IndexBuild", "IndexBuilds", "Indexes", "LOAD_THREADS", "MAX_LOADING", "MAX_DISPLACED"]

log = logging.getLogger("pyspark_catalog_ext.lakehouse.guard")

LOAD_THREADS = 4  # tables loaded at a time by one build
MAX_LOADING = 2  # builds loading at once (the others wait their turn): bounded load on the catalog
MAX_DISPLACED = 100_000  # displaced namespaces remembered (beyond: no quick check anywhere)
HOLD_SECONDS = 30.0  # the longest a build waits for the change that started it to end


class IndexBuild:
    """One namespace's index being built. `touched` and `recent` are read and changed only under the
    namespace's lock: the tables the guard changed since the build began (read again when it ends),
    and what the guard saw stored for them (the quick check's neighbours meanwhile)."""

    def __init__(self, namespace: Namespace) -> None:
        self.namespace = namespace
        self.go = threading.Event()  # set: load now (until then the change that started it runs alone)
        self.loaded = threading.Event()
        self.tables: list[StoredTable] = []
        self.error: BaseException | None = None
        self.touched: set[Ident] = set()
        self.recent = NamespaceIndex()

    def __repr__(self) -> str:
        return f"<IndexBuild {self.namespace!r} loaded={self.loaded.is_set()}>"


class IndexBuilds:
    """The running builds, one per namespace. `listed(namespace)` and `load(ident)` read the
    catalog; `on_loaded(build)` is called on the build's thread once it has loaded (or failed)."""

    def __init__(self, listed: Callable[[Namespace], list[Ident]], load: Callable[[Ident], StoredTable | None],
                 on_loaded: Callable[[IndexBuild], None]) -> None:
        self._listed, self._load, self._on_loaded = listed, load, on_loaded
        self._builds: dict[Namespace, IndexBuild] = {}
        self._lock = threading.Lock()
        self._loading = threading.BoundedSemaphore(MAX_LOADING)

    def running(self, namespace: Namespace) -> IndexBuild | None:
        with self._lock:
            return self._builds.get(namespace)

    def start(self, namespace: Namespace) -> IndexBuild:
        """The namespace's running build, or a new one started on a daemon thread (it loads once
        `go` is set)."""
        with self._lock:
            build = self._builds.get(namespace)
            if build is not None:
                return build
            build = self._builds[namespace] = IndexBuild(namespace)
        threading.Thread(target=self._run, args=(build,), name="guard-index", daemon=True).start()
        return build

    def discard(self, namespace: Namespace, build: IndexBuild | None = None) -> None:
        """Forget the namespace's build (only `build`, if given): its result is not used."""
        with self._lock:
            if build is None or self._builds.get(namespace) is build:
                self._builds.pop(namespace, None)

    def _run(self, build: IndexBuild) -> None:
        build.go.wait(HOLD_SECONDS)
        try:
            with self._loading:
                build.tables = self._load_all(build.namespace)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the index
            build.error = exc
        finally:
            build.loaded.set()
        try:
            self._on_loaded(build)
        except Exception:  # noqa: BLE001 - a waiter finishes it, or the next use builds again
            log.warning("the index of namespace %s could not be finished", ".".join(build.namespace[1]), exc_info=True)

    def _load_all(self, namespace: Namespace) -> list[StoredTable]:
        """Every stored table of the namespace, loaded LOAD_THREADS at a time; the first error ends the load."""
        pending = iter(self._listed(namespace))
        tables: list[StoredTable] = []
        errors: list[BaseException] = []
        lock = threading.Lock()

        def work() -> None:
            while True:
                with lock:
                    ident = None if errors else next(pending, None)
                if ident is None:
                    return
                try:
                    table = self._load(ident)
                except BaseException as exc:  # noqa: BLE001 - re-raised below
                    with lock:
                        errors.append(exc)
                    return
                if table is not None:
                    with lock:
                        tables.append(table)

        # Daemon threads, not a ThreadPoolExecutor: at interpreter exit that joins its workers only
        # after they ran every queued load, so a build in progress (5,000 loads) would hold exit.
        workers = [threading.Thread(target=work, name="guard-index-load", daemon=True) for _ in range(LOAD_THREADS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if errors:
            raise errors[0]
        return tables


class Indexes:
    """Each namespace's index for the guard: `get` what is installed, `wait` for a complete one.
    `locked(namespace)`: the guard's lock of a namespace; every other method is called with it held.
    `namespaces_now()`: first levels of the namespaces the catalog holds, asked once now."""

    def __init__(self, listed: Callable[[Namespace], list[Ident]], load: Callable[[Ident], StoredTable | None],
                 locked: Callable[[Namespace], AbstractContextManager], namespaces_now: Callable[[], set[str]]) -> None:
        self._load, self._locked = load, locked
        self._preexisting = _at_start(namespaces_now)
        self._index = TableIndex()
        self._builds = IndexBuilds(listed, load, self._built)
        self._displaced: set[Namespace] | None = set()  # None: too many to remember
        self._lock = threading.Lock()

    def get(self, namespace: Namespace) -> NamespaceIndex | None:
        return self._index.get(namespace)

    def index_at_start(self, warehouse: str) -> threading.Event:
        """Index the namespaces the catalog held at start (the first MAX_INDEXED_NAMESPACES by name),
        one at a time on a daemon thread: no quick check can run there (`quick_checkable`), so a
        change there waits for its index only while this runs. The event is set once it ended."""
        done = threading.Event()
        namespaces = [(warehouse, (name,)) for name in sorted(self._preexisting or ())[:MAX_INDEXED_NAMESPACES]]
        threading.Thread(target=self._index_all, args=(namespaces, done), name="guard-index-at-start", daemon=True).start()
        return done

    def _index_all(self, namespaces: list[Namespace], done: threading.Event) -> None:
        try:
            for namespace in namespaces:
                if self._index.get(namespace) is not None:
                    continue
                build = self._builds.start(namespace)  # or the one a change started meanwhile
                build.go.set()
                build.loaded.wait()
                try:
                    self._built(build)  # installed here unless the build's own thread did it first
                except Exception:  # noqa: BLE001 - that namespace is indexed on its first use instead
                    log.warning("the namespace %s could not be indexed at start", ".".join(namespace[1]), exc_info=True)
        finally:
            done.set()

    def building(self, namespace: Namespace) -> IndexBuild | None:
        return self._builds.running(namespace)

    def start(self, namespace: Namespace) -> IndexBuild:
        """The namespace's build, started now unless running; it loads once `begin` is called (the
        change that started it is not slowed by it on a busy machine)."""
        return self._builds.start(namespace)

    def begin(self, namespaces: Iterable[Namespace]) -> None:
        """Let these namespaces' builds load (called without their locks held)."""
        for namespace in namespaces:
            build = self._builds.running(namespace)
            if build is not None:
                build.go.set()

    def wait(self, namespace: Namespace) -> NamespaceIndex:
        """The namespace's complete index, built from the catalog on first use (waiting for it)."""
        for _ in range(100):  # each turn ends a build; only one forgotten again meanwhile starts another
            index = self._index.get(namespace)
            if index is not None:
                return index
            build = self._builds.start(namespace)
            build.go.set()
            build.loaded.wait()
            index = self._finish(build)
            if index is not None:
                return index
        raise RuntimeError(f"the index of namespace {'.'.join(namespace[1])} kept being forgotten while built")

    def _built(self, build: IndexBuild) -> None:
        """A build has loaded (on its thread): installed now unless a caller holding the lock did."""
        with self._locked(build.namespace):
            if self._builds.running(build.namespace) is build:
                self._finish(build)

    def _finish(self, build: IndexBuild) -> NamespaceIndex | None:
        """Install a loaded build's index, with the tables changed meanwhile read again; None if it
        was forgotten meanwhile (or again while those were read)."""
        namespace = build.namespace
        if self._builds.running(namespace) is not build:
            return self._index.get(namespace)
        self._builds.discard(namespace, build)
        if build.error is not None:
            raise build.error
        for table in build.tables:
            self.observe(table)
        self._index.set(namespace, NamespaceIndex(build.tables))
        self.settle(build.touched)
        return self._index.get(namespace)

    def forget(self, namespace: Namespace) -> None:
        """Drop a namespace's index and any build of it: indexed again from the catalog on next use."""
        self._index.forget(namespace)
        self._builds.discard(namespace)

    def settle(self, idents: Iterable[Ident]) -> None:
        """Re-read these tables' entries after an answer that leaves them unknown (a lost or failed
        answer, a rollback, a build that ran meanwhile); a namespace whose entry cannot be read is
        indexed again on next use, and displaced (what happened there was not seen)."""
        for ident in idents:
            namespace = (ident[0], ident[1])
            if self._index.get(namespace) is None and self._builds.running(namespace) is None:
                continue
            try:
                table = self._load(ident)
            except Exception:  # noqa: BLE001 - unknown: the namespace is listed again rather than guessed
                self.forget(namespace)
                self.displace(namespace)
                continue
            self.store(ident, table)

    def store(self, ident: Ident, table: StoredTable | None) -> None:
        """Record what the catalog holds for `ident` now: in its namespace's index, or while that is
        built in what the quick check compares with (and read again when the build ends)."""
        namespace = (ident[0], ident[1])
        index = self._index.get(namespace)
        if index is None:
            build = self._builds.start(namespace)
            build.touched.add(ident)
            index = build.recent
        if table is None:
            index.remove(ident)
        else:
            self.observe(table)
            index.put(table)

    def note(self, idents: Iterable[Ident]) -> None:
        """Tables about to change: a build of their namespace running now reads them again at its end."""
        for ident in idents:
            build = self._builds.running((ident[0], ident[1]))
            if build is not None:
                build.touched.add(ident)

    def observe(self, table: StoredTable) -> None:
        """A table whose location is not where its metadata file lies displaces its namespace."""
        if table.location != purged_dir(table.metadata_location):
            self.displace((table.ident[0], table.ident[1]))

    def displace(self, namespace: Namespace) -> None:
        with self._lock:
            if self._displaced is not None:
                self._displaced.add(namespace)
                if len(self._displaced) > MAX_DISPLACED:
                    self._displaced = None

    def quick_checkable(self, namespace: Namespace, warehouse: str) -> bool:
        """Whether a change in `namespace` may be checked without its index: not indexed yet, made
        after the guard started (in `warehouse`) and not displaced."""
        with self._lock:
            displaced = self._displaced is None or namespace in self._displaced
        return (not displaced and self._index.get(namespace) is None and namespace[0] == warehouse
                and self._preexisting is not None and bool(namespace[1]) and namespace[1][0] not in self._preexisting)


def _at_start(namespaces_now: Callable[[], set[str]]) -> set[str] | None:
    """The namespaces the catalog holds as the guard starts, or None if unknown."""
    try:
        return namespaces_now()
    except Exception as exc:  # noqa: BLE001 - unknown: every namespace is treated as older than the guard
        log.info("the namespaces could not be listed at start (%s): no quick checks", type(exc).__name__)
        return None
