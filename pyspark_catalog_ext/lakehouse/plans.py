"""Reading a catalog request for the location guard: what it does to table locations (a Plan of
Changes and Renames) and the re-encoded body to forward; malformed or unrecognised fields refused."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pyspark_catalog_ext.lakehouse.canonical import (
    TABLE_NAME,
    Refusal,
    Route,
    bad_request,
    canonical_body,
    identifier_of,
    namespace_of,
    parse_json,
    struct_keys_refusal,
)
from pyspark_catalog_ext.lakehouse.locations import (
    Ident,
    StoredTable,
    bad_location,
    entry_path,
    namespace_location,
    parse_location,
    purged_dir,
    shown,
)

__all__ = ["Change", "Rename", "Plan", "RequestReader", "CatalogView"]

# Keys of the request bodies the guard reads (anything else is refused: Go would read a field the
# guard did not see).
_CREATE_KEYS = ("name", "location", "schema", "partition-spec", "write-order", "stage-create", "properties")
_REGISTER_KEYS = ("name", "metadata-location", "overwrite")
_COMMIT_KEYS = ("identifier", "requirements", "updates")
_NAMESPACE_KEYS = ("namespace", "properties")
_PROPERTIES_KEYS = ("removals", "updates")

@dataclass(frozen=True)
class Change:
    """A location a request gives table `ident`: `kind` is `stage` (stage-create), `create` (a new
    catalog entry: create, register, a staged table's commit) or `move` (set-location)."""

    ident: Ident
    location: str  # bucket/key-prefix
    what: str
    kind: str
    metadata_dir: str | None = None  # register: where its metadata file lies


@dataclass(frozen=True)
class Rename:
    source: Ident
    destination: Ident


@dataclass
class Plan:
    """What one request does, as the guard read it, and the body to forward (None: none)."""

    changes: list[Change]
    renames: list[Rename]
    body: bytes | None
    drop: Ident | None = None


class CatalogView(Protocol):
    """What reading a request needs from the guard."""

    def staged(self, ident: Ident) -> StoredTable | None: ...

    def registered_location(self, metadata_location: str) -> str | Refusal: ...

    def namespace_exists(self, bucket: str, namespace: tuple[str, ...]) -> bool: ...


class RequestReader:
    """Reads recognised catalog requests into Plans (`catalog`: staged tables, registered metadata)."""

    def __init__(self, catalog: CatalogView) -> None:
        self.catalog = catalog

    def plan(self, route: Route, raw: bytes) -> Plan | Refusal:
        """What a request does to table locations, and the body to forward."""
        if route.name in ("config", "list-namespaces", "load-namespace", "namespace-exists", "drop-namespace", "list-tables",
                          "load-table", "table-exists"):
            return Plan([], [], None)
        if route.name == "token":
            return Plan([], [], raw)
        if route.name == "drop-table":
            return Plan([], [], None, drop=route.ident)
        body = parse_json(raw)
        if isinstance(body, Refusal):
            return body
        if route.name == "report-metrics":
            return Plan([], [], canonical_body(body))
        if route.name in ("create-namespace", "update-namespace-properties"):
            return self._namespace_plan(route, body)
        if route.name == "create-table":
            return self._create_plan(route, body)
        if route.name == "register-table":
            return self._register_plan(route, body)
        if route.name == "commit-table":
            return self._commit_plan(route, body)
        if route.name == "commit-transaction":
            return self._transaction_plan(route, body)
        if route.name == "rename-table":
            return self._rename_plan(route, body)
        return Refusal(404, "NotFoundException", f"{route.name} is not served here")

    def _namespace_plan(self, route: Route, body: Any) -> Plan | Refusal:
        """A namespace's `location` property can only be its own directory: SeaweedFS and clients
        read it as the place for the namespace's tables."""
        if route.name == "create-namespace":
            refusal = struct_keys_refusal(body, "the namespace", _NAMESPACE_KEYS)
            if refusal is not None:
                return refusal
            namespace = namespace_of(body.get("namespace"))
            if isinstance(namespace, Refusal):
                return namespace
            properties = body.get("properties") or {}
        else:
            refusal = struct_keys_refusal(body, "the property update", _PROPERTIES_KEYS)
            if refusal is not None:
                return refusal
            namespace, properties = route.namespace, body.get("updates") or {}
        if not isinstance(properties, dict):
            return bad_request("namespace properties must be an object of strings")
        own = f"s3://{namespace_location(route.prefix, namespace)}"
        given = properties.get("location")
        if given is not None and parse_location(given) != parse_location(own):
            return Refusal(403, "ForbiddenException", f"a namespace's location is {own} in this lakehouse; omit the location property")
        return Plan([], [], canonical_body(body))

    def _default_location(self, ident: Ident) -> str:
        staged = self.catalog.staged(ident)
        if staged is not None and staged.location:
            return staged.location  # a re-stage (Spark's CTAS) keeps its place
        return entry_path(ident)

    def _create_plan(self, route: Route, body: Any) -> Plan | Refusal:
        name = _table_name(body, "the create request", _CREATE_KEYS)
        if isinstance(name, Refusal):
            return name
        if not isinstance(body.get("stage-create", False), bool):
            return bad_request("stage-create must be true or false")
        staged = body.get("stage-create") is True
        what = "stage-create" if staged else "create"
        ident: Ident = (route.prefix, route.namespace, name)
        given = body.get("location")
        if given is not None:
            location = parse_location(given, strict=True)
            if location is None:
                return bad_location(what, given)
        else:
            location = self._default_location(ident)
        # The location is always sent: SeaweedFS would otherwise derive one itself (from a
        # `warehouse` property or its environment), which is not what was checked.
        forwarded = {**body, "location": f"s3://{location}"}
        return Plan([Change(ident, location, what, "stage" if staged else "create")], [], canonical_body(forwarded))

    def _register_plan(self, route: Route, body: Any) -> Plan | Refusal:
        name = _table_name(body, "the register request", _REGISTER_KEYS)
        if isinstance(name, Refusal):
            return name
        metadata_location = parse_location(body.get("metadata-location"), strict=True)
        if metadata_location is None or "/" not in metadata_location:
            return bad_location("register", body.get("metadata-location"))
        # Read nothing outside the namespace the table joins: the guard reads with the admin keys,
        # and the answer must not tell a caller what another bucket or namespace holds.
        home = namespace_location(route.prefix, route.namespace)
        if not metadata_location.startswith(home + "/"):
            return Refusal(403, "ForbiddenException", f"register: the metadata file s3://{metadata_location} lies outside "
                                                      f"namespace {'.'.join(route.namespace)} (s3://{home}/)")
        location = self.catalog.registered_location(metadata_location)
        if isinstance(location, Refusal):
            return location
        ident: Ident = (route.prefix, route.namespace, name)
        change = Change(ident, location, "register", "create", metadata_dir=purged_dir(metadata_location))
        return Plan([change], [], canonical_body(body))

    def _commit_changes(self, ident: Ident, body: Any, what: str) -> list[Change] | Refusal:
        refusal = struct_keys_refusal(body, what, _COMMIT_KEYS)
        if refusal is not None:
            return refusal
        updates, requirements = body.get("updates") or [], body.get("requirements") or []
        if not isinstance(updates, list) or not isinstance(requirements, list):
            return bad_request("updates and requirements must be lists")
        for item in [*updates, *requirements]:
            refusal = struct_keys_refusal(item, f"{what}: an update or requirement")
            if refusal is not None:
                return refusal
        creates = any(r.get("type") == "assert-create" for r in requirements)
        locations = [u.get("location") for u in updates if u.get("action") == "set-location"]
        out: list[Change] = []
        for given in locations:
            location = parse_location(given, strict=True)
            if location is None:
                return bad_location("commit with set-location", given)
            out.append(Change(ident, location, "commit with set-location", "create" if creates else "move"))
        if creates and not out:  # a staged table's commit that names no location: where it was staged
            out.append(Change(ident, self._default_location(ident), "commit of a staged table", "create"))
        return out

    def _commit_plan(self, route: Route, body: Any) -> Plan | Refusal:
        ident = route.ident
        if isinstance(body, dict) and body.get("identifier") is not None:
            named = identifier_of(body.get("identifier"), "the commit's identifier")
            if isinstance(named, Refusal):
                return named
            if named != (ident[1], ident[2]):
                return bad_request("the commit's identifier names another table than its path")
        changes = self._commit_changes(ident, body, "the commit")
        if isinstance(changes, Refusal):
            return changes
        return Plan(changes, [], canonical_body(body))

    def _transaction_plan(self, route: Route, body: Any) -> Plan | Refusal:
        refusal = struct_keys_refusal(body, "the transaction", ("table-changes",))
        if refusal is not None:
            return refusal
        table_changes = body.get("table-changes")
        if not isinstance(table_changes, list) or not table_changes:
            return bad_request("a transaction needs a list of table-changes")
        out: list[Change] = []
        seen: set[Ident] = set()
        for change in table_changes:
            named = identifier_of(change.get("identifier") if isinstance(change, dict) else None, "a table change's identifier")
            if isinstance(named, Refusal):
                return named
            ident: Ident = (route.prefix, *named)
            if ident in seen:
                return bad_request(f"the transaction changes {shown(ident)} twice; send one change per table")
            seen.add(ident)
            changes = self._commit_changes(ident, change, f"the change of {shown(ident)}")
            if isinstance(changes, Refusal):
                return changes
            out += changes
        return Plan(out, [], canonical_body(body))

    def _rename_plan(self, route: Route, body: Any) -> Plan | Refusal:
        refusal = struct_keys_refusal(body, "the rename", ("source", "destination"))
        if refusal is not None:
            return refusal
        source, dest = identifier_of(body.get("source"), "the rename's source"), identifier_of(body.get("destination"), "the rename's destination")
        if isinstance(source, Refusal):
            return source
        if isinstance(dest, Refusal):
            return dest
        if source[0] != dest[0]:
            if not self.catalog.namespace_exists(route.prefix, dest[0]):
                # what SeaweedFS answers (Spark sends RENAME TO lake.db.t2 as namespace ["lake", "db"])
                return Refusal(404, "NoSuchNamespaceException", f"Namespace does not exist: {'.'.join(dest[0])}")
            return Refusal(403, "ForbiddenException", f"a renamed table keeps its location, which must stay under its namespace's: "
                                                      f"rename {shown((route.prefix, *source))} within {'.'.join(source[0])}")
        return Plan([], [Rename((route.prefix, *source), (route.prefix, *dest))], canonical_body(body))


def _table_name(body: Any, what: str, keys: Iterable[str]) -> str | Refusal:
    """The table name of a create or register request whose keys are all known, else the refusal."""
    refusal = struct_keys_refusal(body, what, keys)
    if refusal is not None:
        return refusal
    name = body.get("name")
    if not isinstance(name, str) or not TABLE_NAME.fullmatch(name):
        return bad_request("the request needs a table name of a-z, 0-9, _ and -, starting with a letter or digit")
    return name
