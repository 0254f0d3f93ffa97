"""The lakehouse's table locations: parsing them, the paths a stored table holds, and overlap."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from pyspark_catalog_ext.lakehouse.canonical import Refusal, bad_request

__all__ = ["Ident", "StoredTable", "parse_location", "overlap", "namespace_location", "entry_path", "purged_dir",
           "ancestors", "shown", "bad_location"]

_SCHEMES = ("s3", "s3a", "s3n")

Ident = tuple[str, tuple[str, ...], str]  # (table bucket, namespace levels, table name)


def shown(ident: Ident) -> str:
    return ".".join([*ident[1], ident[2]])


def parse_location(value: Any, strict: bool = False) -> str | None:
    """`value` as `bucket/key-prefix` (no scheme, no trailing /), or None if it is no plain S3 URL.
    `strict` (a location a request asks for): every segment of letters, digits and `_.=+-`, none
    starting with `.` (SeaweedFS keeps its own state in dot directories)."""
    if not isinstance(value, str) or any(ord(c) < 32 or ord(c) == 127 for c in value) or "\\" in value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in _SCHEMES or not parts.netloc or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    if value.endswith("#") or value.endswith("?"):
        return None
    segments = parts.path.strip("/").split("/") if parts.path.strip("/") else []
    # "a//b", "." and ".." (also percent-encoded) would be another key on a server that normalizes
    if any(seg in ("", ".", "..") or unquote(seg) in (".", "..") for seg in segments):
        return None
    if strict and not all(_plain_segment(seg) for seg in [parts.netloc, *segments]):
        return None
    return "/".join([parts.netloc, *segments])


def _plain_segment(seg: str) -> bool:
    return bool(seg) and not seg.startswith(".") and all(c.isascii() and (c.isalnum() or c in "_.=+-") for c in seg)


def overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def ancestors(path: str) -> Iterator[str]:
    """`path` and each directory above it (`a/b/c`, `a/b`, `a`)."""
    while path:
        yield path
        path = path.rpartition("/")[0]


def namespace_location(bucket: str, namespace: tuple[str, ...]) -> str:
    """SeaweedFS's location of a namespace (`bucket/levels.joined.by.dots`), without scheme."""
    return f"{bucket}/{'.'.join(namespace)}"


def entry_path(ident: Ident) -> str:
    """Where SeaweedFS keeps the catalog entry of `ident` (`bucket/ns/name`, also its default location)."""
    return f"{namespace_location(ident[0], ident[1])}/{ident[2]}"


def purged_dir(metadata_location: str | None) -> str | None:
    """The directory SeaweedFS's DROP TABLE purges: the one holding `metadata/<file>`."""
    if not metadata_location:
        return None
    head, _, _ = metadata_location.rpartition("/")
    parent, _, last = head.rpartition("/")
    return parent if last == "metadata" and parent else head or None


def bad_location(what: str, value: Any) -> Refusal:
    quoted = repr(str(value)[:200])
    return bad_request(f"{what}: location {quoted} is not a plain s3://bucket/path URL (segments of letters, digits and _.=+-, "
                       "none empty, . or .., no query or fragment)")


@dataclass(frozen=True)
class StoredTable:
    """What SeaweedFS stored for a table: its location and metadata file (`bucket/key`, None when
    not a plain S3 URL) and uuid."""

    ident: Ident
    location: str | None
    metadata_location: str | None
    uuid: str

    @classmethod
    def from_answer(cls, ident: Ident, body: Mapping[str, Any]) -> StoredTable:
        metadata: Mapping[str, Any] = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
        return cls(ident, parse_location(metadata.get("location")), parse_location(body.get("metadata-location")),
                   str(metadata.get("table-uuid") or ""))

    @property
    def occupied(self) -> tuple[str, ...]:
        """Every path this table holds: location, purged directory and catalog entry."""
        paths = {entry_path(self.ident)}
        if self.location:
            paths.add(self.location)
        purged = purged_dir(self.metadata_location)
        if purged:
            paths.add(purged)
        return tuple(sorted(paths))
