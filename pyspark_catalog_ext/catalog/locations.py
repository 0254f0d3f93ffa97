"""Where a table keeps its files, and which tables keep files under a location: the one reading
of locations that `staged cleanup` and maintenance's remove_orphan_files share.

Locations are compared byte for byte except for the scheme (`s3a://`, `s3n://` -> `s3://`): S3
keeps a key's whitespace and never normalises its Unicode, and a comparison that does deletes
the wrong object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from pyspark_catalog_ext.catalog.reader import CatalogReader
from pyspark_catalog_ext.errors import CatalogError, CatalogNotFoundError, CleanupRefused, ConfigError

__all__ = ["PATH_PROPERTIES", "longest_prefix", "norm_uri", "split_s3", "dot_segments", "overlaps", "same_place", "table_paths",
           "tables_under", "refuse_cleanup"]

#: Table properties that put files outside the table's location.
PATH_PROPERTIES = ("write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path")


def norm_uri(uri: str) -> str:
    """s3a://b/k, s3n://b/k -> s3://b/k (one spelling of the scheme for comparisons). The bucket
    and key stay byte for byte: S3 keeps a key's whitespace and never normalises its Unicode, so
    `k `, `k\t` and an NFD `é` are other objects than `k` and an NFC `é`."""
    return re.sub(r"^s3[an]?://", "s3://", uri)


def longest_prefix(prefixes: Iterable[str], path: str | None) -> str | None:
    """The longest of `prefixes` that `path` starts with (both already in one canonical form), or None:
    the rule by which Iceberg's FileIOs pick a storage credential for a path. The shim's twin is
    `io.catalogext.shim.util.Prefixes`."""
    if path is None:
        return None
    return max((p for p in prefixes if path.startswith(p)), key=len, default=None)


def split_s3(uri: str) -> tuple[str, str]:
    """(bucket, key prefix), split by hand: urlsplit would cut a key at `#` or `?`."""
    norm = norm_uri(uri)
    bucket, _, key = norm[len("s3://"):].partition("/") if norm.startswith("s3://") else ("", "", "")
    if not bucket:
        raise ConfigError(f"invalid location {uri!r}: expected s3://bucket/path")
    return bucket, key


def dot_segments(location: str) -> str | None:
    """Why `location` is ambiguous because of `.`/`..` segments (also percent-encoded), or None:
    S3 keeps them literally, Hadoop paths and humans resolve them to another place."""
    path, decoded = location, location
    for _ in range(4):  # %252e%252e decodes twice; bounded
        decoded = unquote(path)
        if decoded == path:
            break
        path = decoded
    for text in {location, decoded}:
        if any(seg in (".", "..") for seg in re.split(r"[/\\]", text.split("://", 1)[-1])):
            return (f"{location} has a '.' or '..' path segment (percent-encoded ones included): "
                    "it may resolve to another table's place; pass the location without them")
    return None


def overlaps(a: str, b: str) -> bool:
    a, b = norm_uri(a).rstrip("/") + "/", norm_uri(b).rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


def same_place(a: str, b: str) -> bool:
    return norm_uri(a).rstrip("/") == norm_uri(b).rstrip("/")


def table_paths(load_result: Mapping[str, Any]) -> list[str]:
    """Every place a table keeps files, as far as its metadata says without reading manifests."""
    meta = load_result.get("metadata") or {}
    props = meta.get("properties") or {}
    paths = [meta.get("location"), load_result.get("metadata-location")]
    paths += [props.get(p) for p in PATH_PROPERTIES]
    paths += [e.get("metadata-file") for e in meta.get("metadata-log") or []]
    return [str(p) for p in paths if p]


def refuse_cleanup(location: str, why: str) -> CleanupRefused:
    """The one-line refusal of a delete under `location`."""
    return CleanupRefused(f"refusing to clean up {location}: {why}; nothing was deleted")


#: Namespace levels the walk descends to; a namespace this deep that still has children refuses.
MAX_NAMESPACE_LEVELS = 16


def _walk_namespaces(client: CatalogReader, location: str) -> list[tuple[str, ...]]:
    """Every namespace, each once, or `CleanupRefused` wherever the walk cannot be complete: a
    listing that failed (a 400 to `?parent=` included: it does not prove there is nothing below),
    a child that does not extend its parent (the listing is not one the walk can follow), or
    namespaces deeper than `MAX_NAMESPACE_LEVELS`. Tables under a namespace the walk missed would
    never count as referenced, and their files would be deleted."""
    seen: dict[tuple[str, ...], None] = {}
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parent = pending.pop()
        where = f"the namespaces under {'.'.join(parent)}" if parent else "the top-level namespaces"
        try:
            children = [tuple(ns) for ns in client.namespaces(parent)]
        except CatalogError as exc:
            raise refuse_cleanup(location, f"cannot list {where} ({exc})") from None
        if children and len(parent) >= MAX_NAMESPACE_LEVELS:
            raise refuse_cleanup(location, f"namespaces nest deeper than {MAX_NAMESPACE_LEVELS} levels under "
                                           f"{'.'.join(parent)}: the walk stops there and cannot vouch for the tables below")
        for ns in children:
            if len(ns) <= len(parent) or ns[:len(parent)] != parent or not all(ns):
                raise refuse_cleanup(location, f"the catalog listed namespace {'.'.join(ns) or '(empty)'!r} among "
                                               f"{where}: a listing the walk cannot follow")
            if ns not in seen:
                seen[ns] = None
                pending.append(ns)
    return list(seen)


def tables_under(client: CatalogReader, location: str,
                 namespaces: list[tuple[str, ...]] | None = None) -> dict[str, Mapping[str, Any]]:
    """{"ns.table": LoadTableResult} of every table whose location, write paths or metadata files
    overlap `location` (nested in it, or containing it). The one answer to "whose files are
    here" for both `staged cleanup` and maintenance's remove_orphan_files. Raises
    `CleanupRefused` on any listing or load error: a table it did not see would lose its files.
    The namespaces walked are appended to `namespaces` when given."""
    out: dict[str, Mapping[str, Any]] = {}
    for ns in _walk_namespaces(client, location):
        if namespaces is not None:
            namespaces.append(ns)
        dotted = ".".join(ns)
        try:
            idents = client.tables(ns)
        except CatalogNotFoundError as exc:
            _confirm_gone(location, f"the tables of {dotted}", exc, client.has_namespace, ns)
            continue  # dropped meanwhile: nothing to keep there
        except CatalogError as exc:
            raise refuse_cleanup(location, f"cannot list the tables of {dotted} ({exc})") from None
        for ident in idents:
            name = ".".join(ident)
            try:
                loaded = client.load_table_json(ident)
            except CatalogNotFoundError as exc:
                _confirm_gone(location, f"table {name}", exc, client.has_table, ident)
                continue  # dropped meanwhile
            except CatalogError as exc:
                raise refuse_cleanup(location, f"cannot load table {name} ({exc})") from None
            if any(overlaps(p, location) for p in table_paths(loaded)):
                out[name] = loaded  # else it keeps nothing here by its paths (manifests could, see README)
    return out


def _confirm_gone(location: str, what: str, exc: CatalogNotFoundError, exists: Callable[[tuple[str, ...]], bool],
                  name: tuple[str, ...]) -> None:
    """Returns when a 404 for `what` means it was dropped meanwhile: the catalog says `name` no
    longer exists. Else `CleanupRefused`: a 404 from a route, a proxy or a catalog that lists what
    it cannot read would otherwise hide a table's files."""
    try:
        still_there = exists(name)
    except CatalogError as check:
        raise refuse_cleanup(location, f"cannot read {what} ({exc}) nor tell whether it still exists ({check})") from None
    if still_there:
        raise refuse_cleanup(location, f"cannot read {what} ({exc}), yet the catalog says it exists")
