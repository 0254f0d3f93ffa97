"""Creates, drops, renames and registers whose answer was lost, on the PyIceberg face: looked at, never repeated.

The catalog is asked what it shows now, and the shared commit rule (`resources/commit-decisions.json`,
rows `mutation-*`, decided by `commit_decision`, the rows the Spark shim's `MutationLook` follows)
says what that means: our change there is success, returned as PyIceberg would have; something else
there is a one-line `CatalogConflictError`; not visible or unreadable is a `CatalogUnavailableError`
saying it may have been applied. A request that never left is one line saying nothing was applied.

Why: docs/commits.md, section 'Commits that survive lost answers' (creates, drops and renames).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import requests
from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.table import Table
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.typedef import EMPTY_DICT, Identifier, Properties

from pyspark_catalog_ext.catalog.answers import also_pyiceberg, transport_cause, transport_error
from pyspark_catalog_ext.commit.decision import Answer, Facts, Kind, Landed, Outcome, decide, needs_reconciliation
from pyspark_catalog_ext.errors import CatalogConflictError, CatalogUnavailableError

__all__ = ["LostAnswers"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")
# Iceberg's reserved table properties (TableProperties.RESERVED_PROPERTIES): a create may send them, the
# catalog keeps them in the metadata, not among the table's properties.
_RESERVED = frozenset({"format-version", "uuid", "snapshot-count", "current-snapshot-id", "current-snapshot-summary",
                       "current-snapshot-timestamp-ms", "current-schema", "default-partition-spec", "default-sort-order"})
_CAUSES = {"connection-reset": "connection closed before the answer", "read-timeout": "read timed out"}


class LostAnswers:
    """Mixin before PyIceberg's RestCatalog (in `CatalogClient`): its creates, drops, renames and
    registers survive a lost answer as the module says."""

    safe_uri: str

    def create_namespace(self, namespace: str | Identifier, properties: Properties = EMPTY_DICT) -> None:
        base: Any = super()
        levels = self.identifier_to_tuple(namespace)  # type: ignore[attr-defined]
        name, sent = ".".join(levels), dict(properties or {})

        def look() -> tuple[Landed, str]:
            try:
                now = self.load_namespace_properties(levels)  # type: ignore[attr-defined]
            except NoSuchNamespaceError:
                return Landed.PENDING, f"namespace {name} is not there"
            if all(now.get(k) == v for k, v in sent.items()):
                return Landed.YES, f"namespace {name} exists with the properties we sent"
            return Landed.NO, f"namespace {name} exists with other properties than we sent"

        self._looked_at(f"create namespace {name}", lambda: base.create_namespace(namespace, properties), look,
                        lambda: None, NamespaceAlreadyExistsError)

    def drop_namespace(self, namespace: str | Identifier) -> None:
        base: Any = super()
        levels = self.identifier_to_tuple(namespace)  # type: ignore[attr-defined]
        name = ".".join(levels)

        look = _gone(f"namespace {name}", lambda: self.namespace_exists(levels))  # type: ignore[attr-defined]
        self._looked_at(f"drop namespace {name}", lambda: base.drop_namespace(namespace), look, lambda: None, None)

    def create_table(self, identifier: str | Identifier, schema: Any, location: str | None = None,
                     partition_spec: PartitionSpec = UNPARTITIONED_PARTITION_SPEC,
                     sort_order: SortOrder = UNSORTED_SORT_ORDER, properties: Properties = EMPTY_DICT) -> Table:
        base: Any = super()
        ident = self.identifier_to_tuple(identifier)  # type: ignore[attr-defined]
        name = ".".join(ident)

        def judge(now: Table) -> tuple[Landed, str]:
            if self._same_table(now, schema, location, partition_spec, dict(properties or {})):
                return Landed.YES, f"table {name} exists with our metadata"
            return Landed.NO, f"table {name} exists with other metadata than we sent"

        look = _there(f"table {name}", lambda: self.load_table(ident), judge)  # type: ignore[attr-defined]

        created: Table = self._looked_at(
            f"create table {name}",
            lambda: base.create_table(identifier, schema, location, partition_spec, sort_order, properties),
            look, lambda: self.load_table(ident), TableAlreadyExistsError)  # type: ignore[attr-defined]
        return created

    def drop_table(self, identifier: str | Identifier, purge_requested: bool = False) -> None:
        base: Any = super()
        ident = self.identifier_to_tuple(identifier)  # type: ignore[attr-defined]
        name = ".".join(ident)

        look = _gone(f"table {name}", lambda: self.table_exists(ident))  # type: ignore[attr-defined]
        self._looked_at(f"drop table {name}", lambda: base.drop_table(identifier, purge_requested), look,
                        lambda: None, None)

    def rename_table(self, from_identifier: str | Identifier, to_identifier: str | Identifier) -> Table:
        base: Any = super()
        source = self.identifier_to_tuple(from_identifier)  # type: ignore[attr-defined]
        target = self.identifier_to_tuple(to_identifier)  # type: ignore[attr-defined]
        names = f"{'.'.join(source)} -> {'.'.join(target)}"

        def look() -> tuple[Landed, str]:
            there = self.table_exists(source), self.table_exists(target)  # type: ignore[attr-defined]
            if there == (False, True):
                return Landed.YES, "the source is gone and the target is there"
            if there == (True, False):
                return Landed.PENDING, "the source is still there, the target is not"
            return Landed.NO, ("both the source and the target exist" if there[0]
                               else "neither the source nor the target exists")

        renamed: Table = self._looked_at(f"rename table {names}", lambda: base.rename_table(from_identifier, to_identifier),
                                         look, lambda: self.load_table(target), TableAlreadyExistsError)  # type: ignore[attr-defined]
        return renamed

    def register_table(self, identifier: str | Identifier, metadata_location: str, overwrite: bool = False) -> Table:
        base: Any = super()
        ident = self.identifier_to_tuple(identifier)  # type: ignore[attr-defined]
        name = ".".join(ident)

        def judge(now: Table) -> tuple[Landed, str]:
            if now.metadata_location == metadata_location:
                return Landed.YES, f"table {name} is registered with our metadata file"
            if overwrite:  # the one there is what ours was to replace: not applied, or not yet
                return Landed.PENDING, f"table {name} still has another metadata file"
            return Landed.NO, f"table {name} exists with another metadata file"

        look = _there(f"table {name}", lambda: self.load_table(ident), judge)  # type: ignore[attr-defined]

        registered: Table = self._looked_at(
            f"register table {name}", lambda: base.register_table(identifier, metadata_location, overwrite), look,
            lambda: self.load_table(ident), TableAlreadyExistsError)  # type: ignore[attr-defined]
        return registered

    # -- the rule ----------------------------------------------------------------------------------
    def _looked_at(self, what: str, send: Callable[[], _T], look: Callable[[], tuple[Landed, str]],
                   answer: Callable[[], _T], conflict_type: type[Exception] | None) -> _T:
        try:
            return send()
        except requests.RequestException as exc:
            lost = exc
        cause, reached = transport_cause(lost)
        if not reached:  # never left: nothing was applied
            raise also_pyiceberg(transport_error(lost, what, self.safe_uri, mutation=True), lost) from None
        # PyIceberg never repeats a mutation, so this face has no attempt left: the look decides.
        facts = Facts(Kind.MUTATION, Answer.LOST, False, can_retry=False)
        landed, seen = Landed.NOT_CHECKED, "it was not looked at"
        if needs_reconciliation(facts):
            try:
                landed, seen = look()
            except Exception as exc:  # noqa: BLE001 - unreadable: said so, never guessed
                landed, seen = Landed.UNKNOWN, f"the catalog could not be read to tell ({type(exc).__name__})"
        outcome = decide(facts.with_landed(landed))
        lost_text = f"{what}: the catalog's answer was lost ({_CAUSES.get(cause, cause)}) and {seen}"
        if outcome is Outcome.SUCCESS:
            log.info("%s; reported once as success", lost_text)
            return answer()
        if outcome is Outcome.FAILED:
            conflict = CatalogConflictError(f"{lost_text}; nothing was repeated: check the name", status=409)
            raise (also_pyiceberg(conflict, conflict_type(str(conflict))) if conflict_type else conflict) from None
        unknown = CatalogUnavailableError(f"{lost_text}; the change may have been applied: check before repeating it")
        raise also_pyiceberg(unknown, lost) from None

    def _same_table(self, now: Table, schema: Any, location: str | None, spec: PartitionSpec,
                    properties: dict[str, str]) -> bool:
        """Our create: the same columns, partitioning, location and properties, and no snapshot yet."""
        meta = now.metadata
        sent: Schema = self._convert_schema_if_needed(schema, meta.format_version)  # type: ignore[attr-defined]
        if assign_fresh_schema_ids(sent).as_struct() != assign_fresh_schema_ids(now.schema()).as_struct():
            return False
        ours = [(sent.find_column_name(f.source_id), str(f.transform)) for f in spec.fields]
        theirs = [(now.schema().find_column_name(f.source_id), str(f.transform)) for f in now.spec().fields]
        if ours != theirs:
            return False
        if location and location.rstrip("/") != meta.location.rstrip("/"):
            return False
        ours_set = {k: v for k, v in properties.items() if k not in _RESERVED}
        return all(meta.properties.get(k) == v for k, v in ours_set.items()) and not meta.snapshots


def _there(what: str, load: Callable[[], Table], judge: Callable[[Table], tuple[Landed, str]]
           ) -> Callable[[], tuple[Landed, str]]:
    """The look after a create or register whose answer was lost: pending while `what` is not there,
    else what `judge` says of the table there."""

    def look() -> tuple[Landed, str]:
        try:
            table = load()
        except NoSuchTableError:
            return Landed.PENDING, f"{what} is not there"
        return judge(table)

    return look


def _gone(what: str, exists: Callable[[], bool]) -> Callable[[], tuple[Landed, str]]:
    """The look after a drop whose answer was lost: landed when `what` is gone, pending while it is there."""
    return lambda: (Landed.PENDING, f"{what} is still there") if exists() else (Landed.YES, f"{what} is gone")
