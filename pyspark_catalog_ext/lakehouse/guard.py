"""The embedded lakehouse's table-location rule, enforced in front of SeaweedFS's Iceberg catalog.

As Apache Polaris does: a table's location lies strictly under its namespace's location and
overlaps no other table's location, metadata directory or catalog entry, nor a table staged here,
nor another change of the same request. Requests are read by plans.py; each namespace's tables are
indexed (table_index.py, built in the background: index_builds.py). Each change is checked,
forwarded and verified under its namespace's lock; what breaks the rule is rolled back (filer.py)
or quarantined. A refusal is one Iceberg ErrorModel line (403 for a conflict, 400 for a malformed
request or location).

Why: docs/lakehouse.md, section 'Table locations'.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from pyspark_catalog_ext.lakehouse.admin_catalog import MAX_LISTED, AdminCatalog
from pyspark_catalog_ext.lakehouse.canonical import Refusal, Route
from pyspark_catalog_ext.lakehouse.filer import FilerAccess
from pyspark_catalog_ext.lakehouse.index_builds import Indexes
from pyspark_catalog_ext.lakehouse.locations import Ident, StoredTable, entry_path, namespace_location, overlap, purged_dir, shown
from pyspark_catalog_ext.lakehouse.plans import Change, Plan, Rename, RequestReader
from pyspark_catalog_ext.lakehouse.storage import TableFiles
from pyspark_catalog_ext.lakehouse.table_index import Namespace, NamespaceIndex, Neighbours
from pyspark_catalog_ext.lakehouse.views import VIEW_ROUTES, answer_view

__all__ = ["LocationGuard", "Refusal", "StoredTable", "Answer", "Send", "refused", "namespace_location"]

log = logging.getLogger("pyspark_catalog_ext.lakehouse.guard")

WAREHOUSE = "warehouse"
MAX_STAGED = 10_000  # staged tables remembered (they are not stored until committed)
STAGED_SECONDS = 24 * 3600  # a staged table older than this is forgotten (a CTAS that never commits)
MAX_QUARANTINED = 10_000
LOCK_STRIPES = 256  # one lock per namespace, striped: bounded memory, two namespaces rarely share one

Answer = tuple[int, bytes, Mapping[str, str]]
Send = Callable[[str, bytes | None], Answer]  # (canonical target, canonical body) -> upstream answer


def refused(refusal: Refusal) -> Answer:
    return refusal.status, refusal.body(), {"Content-Type": "application/json"}


class LocationGuard:
    """The location rule (module docstring) over SeaweedFS's catalog at `catalog_uri`. `filer`: used
    only to roll back a new catalog entry (without it, it is quarantined). `index_at_start`: index the
    catalog's namespaces in the background now (`indexed_at_start` set once done), not on first use."""

    def __init__(self, catalog_uri: str, s3_endpoint: str, access_key: str, secret_key: str, *,
                 warehouse: str = WAREHOUSE, filer: FilerAccess | None = None, index_at_start: bool = False) -> None:
        from cachetools import TTLCache

        self.catalog_uri = catalog_uri.rstrip("/")
        self.s3_endpoint = s3_endpoint.rstrip("/")  # to read a registered table's metadata file
        self.warehouse = warehouse
        self.catalog = AdminCatalog(self.catalog_uri, access_key, secret_key, warehouse)
        self._filer = filer
        self._staged: TTLCache = TTLCache(maxsize=MAX_STAGED, ttl=STAGED_SECONDS)  # Ident -> StoredTable (as staged)
        self._quarantined: TTLCache = TTLCache(maxsize=MAX_QUARANTINED, ttl=10 * 365 * 24 * 3600)  # Ident -> why
        self._stripes = [threading.Lock() for _ in range(LOCK_STRIPES)]
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Ident], None]] = []
        self._reader = RequestReader(self)
        self._files = TableFiles(self.s3_endpoint, access_key, secret_key)
        self._indexes = Indexes(self.catalog.listed, self.load_stored, lambda ns: self._locked({ns}), self.catalog.top_namespaces)
        self.indexed_at_start = self._indexes.index_at_start(warehouse) if index_at_start else None

    def __repr__(self) -> str:
        return f"<LocationGuard -> {self.catalog_uri}>"

    def on_table_change(self, listener: Callable[[Ident], None]) -> None:
        """Call `listener(ident)` after a table is dropped, renamed away, moved or rolled back."""
        self._listeners.append(listener)

    def _changed(self, ident: Ident) -> None:
        for listener in self._listeners:
            listener(ident)

    # -- upstream ---------------------------------------------------------------------------------
    def session(self) -> Any:
        """This thread's requests session to the upstream catalog (admin_catalog.py)."""
        return self.catalog.session()

    def authorization(self) -> str:
        """`Bearer <token>` for SeaweedFS, with the admin keys."""
        return self.catalog.authorization()

    def load_stored(self, ident: Ident) -> StoredTable | None:
        """What the catalog stored for `ident` (loaded now), or None if it is not stored."""
        return self.catalog.load_stored(ident)

    def staged(self, ident: Ident) -> StoredTable | None:
        """The table `ident` as staged through this guard (not stored yet), or None."""
        with self._lock:
            return self._staged.get(ident)

    def quarantined(self, ident: Ident) -> str | None:
        with self._lock:
            return self._quarantined.get(ident)

    def namespace_exists(self, bucket: str, namespace: tuple[str, ...]) -> bool:
        return self.catalog.call("GET", self.catalog.route("load-namespace", (bucket, namespace, ""))) is not None

    # -- the index ----------------------------------------------------------------------------------
    def _namespace_index(self, namespace: Namespace) -> NamespaceIndex:
        """The complete index of a namespace (the caller holds its lock; index_builds.py)."""
        return self._indexes.wait(namespace)

    def _reconcile(self, namespace: Namespace) -> NamespaceIndex:
        """The namespace's index, first matched against the catalog's list of names (tables the
        index lacks or still holds are read again): what a drop, which deletes files, checks against."""
        index = self._namespace_index(namespace)
        listed = set(self.catalog.listed(namespace))
        self._indexes.settle(listed.symmetric_difference(index.tables))
        return self._indexes.get(namespace) or self._namespace_index(namespace)

    # -- locks --------------------------------------------------------------------------------------
    def _locked(self, namespaces: set[Namespace]) -> ExitStack:
        """The locks of these namespaces, taken in one order (no two requests deadlock)."""
        stack = ExitStack()
        stripes = sorted({int(hashlib.sha256(repr(ns).encode()).hexdigest()[:8], 16) % LOCK_STRIPES for ns in namespaces})
        for stripe in stripes:
            stack.enter_context(self._stripes[stripe])
        return stack

    # -- the rule ---------------------------------------------------------------------------------
    def _conflict(self, ident: Ident, paths: tuple[str, ...], what: str, where: str, neighbours: Neighbours,
                  skip: Ident | None = None) -> Refusal | None:
        for path in paths:
            for other, hit, label in neighbours.overlapping(path):
                if other not in (ident, skip):
                    return Refusal(403, "ForbiddenException", f"{what}: location {where} overlaps {label} {shown(other)} at s3://{hit}; "
                                                              f"choose a location of its own for {shown(ident)}")
        return None

    def _neighbours(self, namespaces: set[Namespace], changes: list[Change], renames: list[Rename],
                    indexes: list[NamespaceIndex] | None = None) -> Neighbours:
        """The neighbours of the namespaces a request touches: indexed tables (`indexes`, default
        their whole indexes), tables staged here, and the request's own other changes."""
        if indexes is None:
            indexes = [self._namespace_index(ns) for ns in sorted(namespaces)]
        stored = lambda ident: any(ident in index.tables for index in indexes)  # noqa: E731
        held: dict[Ident, set[str]] = {}
        labels: dict[Ident, str] = {}
        with self._lock:
            staged = list(self._staged.items())
        for ident, table in staged:
            if (ident[0], ident[1]) in namespaces and not stored(ident):
                held.setdefault(ident, set()).update(table.occupied)
                labels[ident] = "staged table"
        for change in changes:  # a transaction's changes against each other: old and new places both count
            held.setdefault(change.ident, set()).update({change.location, entry_path(change.ident)})
        for rename in renames:
            held.setdefault(rename.destination, set()).add(entry_path(rename.destination))
        return Neighbours(indexes, {i: (tuple(sorted(p)), labels.get(i, "table")) for i, p in held.items()})

    def check(self, changes: list[Change], renames: list[Rename]) -> tuple[Refusal | None, dict[Ident, StoredTable]]:
        """None if these changes keep the rule (the caller holds their namespaces' locks), else the
        refusal; and what was stored before for each changed table. A create in a namespace not
        indexed yet is checked on its own (`_quick_check`) while the index is built in the
        background. When the index finds no conflict but files show a table it may not know
        (storage.py), the namespaces are indexed again from the catalog and checked once more."""
        namespaces = {(c.ident[0], c.ident[1]) for c in changes} | {(r.source[0], r.source[1]) for r in renames}
        if self._quick_checkable(changes, renames):
            decided, refusal = self._quick_check(changes[0])
            if decided:
                return refusal, {}
        fresh = {ns for ns in namespaces if self._indexes.get(ns) is None and self._indexes.building(ns) is None}
        refusal, before = self._check_indexed(namespaces, changes, renames)
        if refusal is not None or fresh == namespaces:
            return refusal, before
        clue = self._unindexed_clue(changes, renames, before)
        if clue is None:
            return None, before
        log.info("files at s3://%s may be a table the index does not know: indexing its namespace again", clue)
        for namespace in namespaces:
            self._indexes.forget(namespace)
        return self._check_indexed(namespaces, changes, renames)

    def _quick_checkable(self, changes: list[Change], renames: list[Rename]) -> bool:
        """A request the quick check can decide: one create or stage-create, in a namespace not
        indexed yet, made after the guard started (so every table moved or stored away from its
        metadata since was seen by this guard: `Indexes.observe`) and holding no such table."""
        if len(changes) != 1 or renames or changes[0].what not in ("create", "stage-create"):
            return False
        return self._indexes.quick_checkable((changes[0].ident[0], changes[0].ident[1]), self.warehouse)

    def _quick_check(self, change: Change) -> tuple[bool, Refusal | None]:
        """Check one create without the namespace's index, starting its build: (True, the exact
        answer), or (False, None) when unsure.
        Every path the create takes lies under one directory `<namespace>/<d>` per path (its
        location's and its entry's first level), and a table holds a path there only through its
        catalog entry `<namespace>/<d>` (loaded here), a file (its metadata file lies under its
        location unless `Indexes.observe` saw otherwise), or being staged or changed here meanwhile. So:
        a conflict with those is a refusal; no file under those directories (nor a table at the
        namespace's own directory) means the place is free; files there mean unsure: the caller
        checks against the whole index."""
        bucket, levels, _ = change.ident
        build = self._indexes.start((bucket, levels))
        ns_loc = namespace_location(bucket, levels)
        paths = [change.location, entry_path(change.ident)]
        if not all(p.startswith(ns_loc + "/") for p in paths):  # not under its namespace: refused, or unsure
            refusal = self._change_refusal(change, Neighbours([], {}))
            return refusal is not None, refusal
        heads = sorted({p[len(ns_loc) + 1:].split("/")[0] for p in paths})
        near = NamespaceIndex(build.recent.tables.values())
        for head in heads:
            table = self.load_stored((bucket, levels, head))
            if table is not None and table.ident == change.ident:
                return False, None  # a create over its own name: its files are there, the index decides
            if table is not None:
                self._indexes.observe(table)
                near.put(table)
        refusal = self._change_refusal(change, self._neighbours({(bucket, levels)}, [change], [], indexes=[near]))
        if refusal is not None:
            return True, refusal
        return not any(self._files.any_under(f"{ns_loc}/{d}") for d in [*heads, "metadata"]), None

    def _unindexed_clue(self, changes: list[Change], renames: list[Rename], before: Mapping[Ident, StoredTable]) -> str | None:
        """Where files show a table that may hold a place the index found free, or None."""
        for change in changes:
            ns_dir = namespace_location(change.ident[0], change.ident[1])
            # a staged table's commit and a register bring their own files; a stored table has its own
            brings_files = change.kind == "create" and change.what != "create"
            own = before[change.ident].occupied if change.ident in before else ()
            expected = (change.metadata_dir,) if change.metadata_dir else ()
            paths = [change.location]
            if change.kind in ("create", "stage") and entry_path(change.ident) != change.location:
                paths.append(entry_path(change.ident))
            for path in paths:
                files_expected = (brings_files and path == change.location) or any(overlap(path, o) for o in own)
                clue = self._files.unindexed_table(path, ns_dir, expected + own, files_expected=files_expected)
                if clue is not None:
                    return clue
        for rename in renames:
            dest = rename.destination
            clue = self._files.unindexed_table(entry_path(dest), namespace_location(dest[0], dest[1]))
            if clue is not None:
                return clue
        return None

    def _check_indexed(self, namespaces: set[Namespace], changes: list[Change],
                       renames: list[Rename]) -> tuple[Refusal | None, dict[Ident, StoredTable]]:
        try:
            neighbours = self._neighbours(namespaces, changes, renames)
        except OverflowError:
            return Refusal(403, "ForbiddenException", f"over {MAX_LISTED} tables to compare; the location rule cannot be checked"), {}
        before = {c.ident: t for c in changes for index in neighbours.indexes if (t := index.tables.get(c.ident)) is not None}
        for change in changes:
            refusal = self._change_refusal(change, neighbours)
            if refusal is not None:
                return refusal, before
        for rename in renames:
            source, dest = rename.source, rename.destination
            if any(dest in index.tables for index in neighbours.indexes):
                continue  # SeaweedFS answers 409: nothing moves
            refusal = self._conflict(dest, (entry_path(dest),), f"rename to {shown(dest)}", f"s3://{entry_path(dest)}", neighbours, skip=source)
            if refusal is not None:
                return refusal, before
        return None, before

    def _change_refusal(self, change: Change, neighbours: Neighbours) -> Refusal | None:
        bucket, namespace, _ = ident = change.ident
        ns_loc = namespace_location(bucket, namespace)
        where = f"s3://{change.location}"
        if not change.location.startswith(ns_loc + "/"):
            return Refusal(403, "ForbiddenException", f"{change.what}: location {where} is not under its namespace's location "
                                                      f"s3://{ns_loc}/; omit the location or choose one below it")
        paths = [change.location]
        if change.kind in ("create", "stage"):
            paths.append(entry_path(ident))
        if change.metadata_dir:
            paths.append(change.metadata_dir)
        return self._conflict(ident, tuple(paths), change.what, where, neighbours)

    # -- reading a request --------------------------------------------------------------------------
    def plan(self, route: Route, raw: bytes) -> Plan | Refusal:
        """What a request does to table locations, and the body to forward (plans.py)."""
        return self._reader.plan(route, raw)

    def registered_location(self, metadata_location: str) -> str | Refusal:
        """The location inside the metadata file a register call points at (storage.py)."""
        return self._files.registered_location(metadata_location)

    # -- forwarding ---------------------------------------------------------------------------------
    def handle(self, route: Route, raw: bytes, send: Send) -> Answer:
        """Check a recognised catalog call against the rule, forward it (re-encoded) unless
        refused, and check what SeaweedFS stored after it; the answer (status, body, headers)."""
        if route.name in VIEW_ROUTES:  # SeaweedFS has no views: answered here (views.py)
            return answer_view(route, send)
        if route.table:
            why = self.quarantined(route.ident)
            if why is not None:
                return refused(Refusal(403, "ForbiddenException", f"{shown(route.ident)} is quarantined: {why}"))
        plan = self.plan(route, raw)
        if isinstance(plan, Refusal):
            return refused(plan)
        for ident in [c.ident for c in plan.changes] + [r.source for r in plan.renames] + [r.destination for r in plan.renames]:
            why = self.quarantined(ident)
            if why is not None:
                return refused(Refusal(403, "ForbiddenException", f"{shown(ident)} is quarantined: {why}"))
        if plan.drop is not None:
            return self._drop(route, plan.drop, send)
        if not plan.changes and not plan.renames:
            answer = send(route.target(), plan.body)
            if route.name == "drop-namespace":  # a namespace made again later starts from the catalog
                self._indexes.forget((route.prefix, route.namespace))
            return answer
        namespaces = {(c.ident[0], c.ident[1]) for c in plan.changes} | {(r.source[0], r.source[1]) for r in plan.renames}
        touched = [c.ident for c in plan.changes if c.kind != "stage"] + [i for r in plan.renames for i in (r.source, r.destination)]
        for change in plan.changes:
            if change.kind == "move":  # its location may hold no file afterwards: no quick check there from now on
                self._indexes.displace((change.ident[0], change.ident[1]))
        try:
            with self._locked(namespaces):
                try:
                    refusal, before = self.check(plan.changes, plan.renames)
                except Exception as exc:  # noqa: BLE001 - cannot check: refuse rather than let it through
                    refusal, before = Refusal(503, "ServiceUnavailableException",
                                              f"the location rule could not be checked ({type(exc).__name__}); retry"), {}
                if refusal is not None:
                    return refused(refusal)
                status, content, headers = self._forward(route, plan.body, send, touched)
                if not 200 <= status < 300:
                    return status, content, headers
                self._record(plan, content)
                refusal = self._verify(plan, before)
                if refusal is not None:
                    return refused(refusal)
                return status, content, headers
        finally:  # a build this change started loads now, not beside it
            self._indexes.begin(namespaces)

    def _forward(self, route: Route, body: bytes | None, send: Send, touched: list[Ident]) -> Answer:
        """`send`, then bring the index up to date for an answer that may have changed `touched`
        without saying so: a 5xx (502: no answer) or none at all. A 4xx changed nothing; a 2xx is
        recorded and verified by the caller."""
        self._indexes.note(touched)
        try:
            answer = send(route.target(), body)
        except BaseException:
            self._indexes.settle(touched)
            raise
        if answer[0] >= 500:
            self._indexes.settle(touched)
        return answer

    def _drop(self, route: Route, ident: Ident, send: Send) -> Answer:
        """SeaweedFS's DROP purges the directory of the table's metadata file: refused when that
        directory (or the location) overlaps another table or leaves the namespace."""
        namespace = (ident[0], ident[1])
        with self._locked({namespace}):
            try:
                table = self.load_stored(ident)
                neighbours = Neighbours([self._reconcile(namespace)], {}) if table is not None else None
            except Exception as exc:  # noqa: BLE001
                return refused(Refusal(503, "ServiceUnavailableException", f"drop: the table could not be checked ({type(exc).__name__}); retry"))
            if table is not None and neighbours is not None:
                ns_loc = namespace_location(ident[0], ident[1])
                purged = [p for p in (table.location, purged_dir(table.metadata_location)) if p]
                outside = [p for p in purged if not p.startswith(ns_loc + "/")]
                if outside or not purged:
                    where = f"s3://{outside[0]}" if outside else "an unreadable location"
                    return refused(Refusal(403, "ForbiddenException", f"drop {shown(ident)}: SeaweedFS would purge {where}, "
                                                                      f"outside the namespace's location s3://{ns_loc}/; not dropped"))
                refusal = self._conflict(ident, tuple(purged), f"drop {shown(ident)}", f"s3://{purged[-1]}", neighbours)
                if refusal is not None:
                    return refused(replace(refusal, message=refusal.message.split("; choose")[0] + "; SeaweedFS's drop would delete its files, so it is not dropped"))
            answer = self._forward(route, None, send, [ident])
            if 200 <= answer[0] < 300:
                index = self._indexes.get(namespace)
                if index is not None:
                    index.remove(ident)
                self._changed(ident)
            return answer

    def _record(self, plan: Plan, content: bytes) -> None:
        """Remember staged tables (with the uuid of the answer); re-read renamed ones."""
        uuid = ""
        if plan.changes and plan.changes[0].kind == "stage":
            try:
                uuid = str(((json.loads(content) or {}).get("metadata") or {}).get("table-uuid") or "")
            except ValueError:
                uuid = ""
        for change in plan.changes:
            with self._lock:
                if change.kind == "stage":
                    self._staged[change.ident] = StoredTable(change.ident, change.location, None, uuid)
                else:
                    self._staged.pop(change.ident, None)
            if change.kind == "move":  # the same table elsewhere: what was issued for its old place ends
                self._changed(change.ident)
        renamed = [i for r in plan.renames for i in (r.source, r.destination)]
        self._indexes.settle(renamed)
        for ident in renamed:
            self._changed(ident)

    def _verify(self, plan: Plan, before: Mapping[Ident, StoredTable]) -> Refusal | None:
        """Check what SeaweedFS stored after the changes it accepted (and index it); roll back what
        breaks the rule."""
        stored_changes = [c for c in plan.changes if c.kind != "stage"]
        if not stored_changes:
            return None
        try:
            after = {c.ident: self.load_stored(c.ident) for c in stored_changes}
            for ident, table in after.items():
                self._indexes.store(ident, table)
        except Exception as exc:  # noqa: BLE001 - unknown now: the namespaces are indexed again on next use
            for change in stored_changes:
                self._indexes.forget((change.ident[0], change.ident[1]))
                self._indexes.displace((change.ident[0], change.ident[1]))
            return Refusal(503, "ServiceUnavailableException", f"the stored tables could not be checked ({type(exc).__name__})")
        problems: list[tuple[Change, StoredTable, str]] = []
        for change in stored_changes:
            table = after[change.ident]
            if table is None:
                continue  # answered 2xx but not stored (a create over a name SeaweedFS refused to keep)
            checked = {change.location, entry_path(change.ident)}
            why = self._stored_violation(table, checked if change.what in ("create", "stage-create") else set())
            if why is not None:
                problems.append((change, table, why))
        if not problems:
            return None
        outcomes = [self._roll_back(change, table, before.get(change.ident)) for change, table, _ in problems]
        self._indexes.settle(change.ident for change, _, _ in problems)
        change, table, why = problems[0]
        return Refusal(403, "ForbiddenException", f"{change.what} of {shown(change.ident)}: SeaweedFS stored {why}; {outcomes[0]}")

    def _stored_violation(self, table: StoredTable, checked: set[str]) -> str | None:
        """Why what SeaweedFS stored breaks the rule, or None. `checked`: paths the check before
        the call compared (under the same lock), which a namespace not indexed yet need not again."""
        bucket, namespace, _ = table.ident
        ns_loc = namespace_location(bucket, namespace)
        if table.location is None:
            return "a location that is no plain s3:// URL"
        held = (table.location, purged_dir(table.metadata_location))
        for path in held:
            if path is None or not path.startswith(ns_loc + "/"):
                return f"s3://{path} outside its namespace's location s3://{ns_loc}/"
        if self._indexes.get((bucket, namespace)) is None and set(table.occupied) <= checked:
            return None
        index = self._namespace_index((bucket, namespace))
        for path in filter(None, held):
            for other, _ in index.overlapping(path):
                if other != table.ident:
                    return f"s3://{path}, which overlaps table {shown(other)}"
        return None

    def _roll_back(self, change: Change, table: StoredTable, before: StoredTable | None) -> str:
        """Undo one stored change without deleting a file: a moved table goes back; a new entry is
        removed through the filer. Returns what happened, for the refusal."""
        ident = table.ident
        if before is not None and change.kind == "create":
            return "it existed before this call and is left as it was"  # a create over its name changed nothing
        try:
            if before is not None and before.location:
                self.catalog.call("POST", self.catalog.route("commit-table", ident), {
                    "requirements": [{"type": "assert-table-uuid", "uuid": table.uuid}],
                    "updates": [{"action": "set-location", "location": f"s3://{before.location}"}]})
                self._changed(ident)
                return f"moved back to s3://{before.location}"
            if before is None and change.kind == "create":  # an entry this call made: nothing else may go
                why = self._remove_entry(ident)
                if why is None:
                    self._changed(ident)
                    return "its catalog entry was removed (no file was deleted)"
                return self._quarantine(ident, f"it could not be rolled back ({why})")
        except Exception as exc:  # noqa: BLE001
            return self._quarantine(ident, f"it could not be rolled back ({type(exc).__name__})")
        return self._quarantine(ident, "it could not be rolled back (no earlier location to return to)")

    def _remove_entry(self, ident: Ident) -> str | None:
        """Remove a new catalog entry without deleting files (see filer.py); None when done."""
        if self._filer is None:
            return "this guard has no filer access"
        entry = entry_path(ident)
        if self._files.any_under(entry):
            return f"files lie under its entry s3://{entry}/"
        why = self._filer.remove_empty_entry(f"/buckets/{entry}")
        if why is None and self.load_stored(ident) is not None:
            return "the entry is still listed after its removal"
        return why

    def _quarantine(self, ident: Ident, why: str) -> str:
        log.warning("quarantined %s: %s", shown(ident), why)
        with self._lock:
            self._quarantined[ident] = why
        for listener in self._listeners:
            listener(ident)
        return f"{why}; this lakehouse now refuses every call naming it"
