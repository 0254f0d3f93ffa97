"""`staged cleanup`: find (and with `--apply` delete) files under one table's location that no
committed table references: what a driver killed mid-CTAS or mid-staging left behind.

Deleting is the one irreversible thing this package does, so the command refuses, with a one-line
reason, whenever it is unsure (an unreadable listing or metadata, a bucket root, `.`/`..`
segments, unlisted metadata files, a prefix that is no table's or namespace's, a minimum age under
24 h). Tables are read again before each delete batch; the dry run lists exactly what `--apply`
deletes (S3 keys carried unchanged to DeleteObjects). `tables_under` is shared with maintenance's
remove_orphan_files.

Why: docs/staging.md, section 'Staged tables and cleanup' ("Orphans").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyspark_catalog_ext.catalog.locations import (
    dot_segments,
    longest_prefix,
    norm_uri,
    refuse_cleanup,
    same_place,
    split_s3,
    table_paths,
    tables_under,
)
from pyspark_catalog_ext.catalog.storage_keys import (
    CLIENT_REGION,
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_FORCE_VIRTUAL_ADDRESSING,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
)
from pyspark_catalog_ext.catalog.trust_rules import server_may_set
from pyspark_catalog_ext.errors import CatalogError, CatalogExtError, CatalogNotFoundError, CleanupRefused, ConfigError
from pyspark_catalog_ext.progress import Progress

if TYPE_CHECKING:  # the client's type only: importing it here would import PyIceberg with this module
    from pyspark_catalog_ext.catalog.rest import CatalogClient

__all__ = ["OrphanReport", "find_orphans", "s3_client", "DEFAULT_MIN_AGE_SECONDS"]

DEFAULT_MIN_AGE_SECONDS = 3 * 86400.0  # as Iceberg's remove_orphan_files (older_than: 3 days)
MIN_SAFE_AGE_SECONDS = 86400.0  # Iceberg refuses remove_orphan_files younger than 24 h: a job may still write
DELETE_BATCH = 1000  # S3 DeleteObjects takes at most 1000 keys


@dataclass
class OrphanReport:
    """Result of `find_orphans`: files under `location` that no committed table references."""

    location: str
    listed: int = 0
    referenced: int = 0
    tables: list[str] = field(default_factory=list)
    orphans: list[tuple[str, int, float]] = field(default_factory=list)  # (uri, size, age seconds)
    too_young: int = 0
    deleted: list[str] = field(default_factory=list)
    kept_committed_meanwhile: list[str] = field(default_factory=list)
    applied: bool = False
    keys: dict[str, str] = field(default_factory=dict, repr=False)  # uri -> the S3 key exactly as listed

    def as_dict(self) -> dict[str, Any]:
        return {
            "location": self.location, "listed": self.listed, "referenced": self.referenced,
            "tables": self.tables, "orphans": [{"uri": u, "size": s, "age_seconds": round(a, 1)}
                                               for u, s, a in self.orphans],
            "too_young": self.too_young, "deleted": self.deleted,
            "kept_committed_meanwhile": self.kept_committed_meanwhile, "applied": self.applied,
        }


def _looks_like_metadata(uri: str) -> bool:
    """Whether a listed object may be a table's metadata file (only a commit writes those). Broader
    than Iceberg's own names on purpose: trailing whitespace or a compression infix still counts,
    so an odd spelling refuses instead of slipping through as an orphan."""
    return ".metadata.json" in uri.rsplit("/", 1)[-1]


def _io_props(load_result: Mapping[str, Any], location: str, endpoint: str | None = None) -> dict[str, str]:
    """FileIO properties from a LoadTableResult: config + the longest matching storage credential;
    `endpoint` (the user's --s3-endpoint) where neither names an S3 endpoint."""
    # Only keys a catalog may vend (trust-rules.json): never a FileIO class or a retry strategy to import.
    props = {str(k): str(v) for k, v in (load_result.get("config") or {}).items() if server_may_set(str(k))}
    by_prefix: dict[str, Mapping[str, Any]] = {}
    for cred in load_result.get("storage-credentials") or []:
        by_prefix.setdefault(norm_uri(str(cred.get("prefix") or "")), cred)
    prefix = longest_prefix(by_prefix, norm_uri(location))
    best = by_prefix.get(prefix) if prefix is not None else None
    if best is not None:
        props.update({str(k): str(v) for k, v in (best.get("config") or {}).items() if server_may_set(str(k))})
    if endpoint and not props.get(S3_ENDPOINT):
        # Keys vended without an endpoint (Iceberg's REST fixture) belong to the storage the user named.
        props[S3_ENDPOINT] = endpoint
    return props


def _referenced_files(load_result: Mapping[str, Any], io_props: Mapping[str, str]) -> set[str]:
    """Every file a committed table's metadata references: metadata files, manifest lists,
    manifests, data and delete files, statistics. Raises if any of it cannot be read."""
    from pyiceberg.io import load_file_io
    from pyiceberg.table.metadata import TableMetadataUtil

    metadata = TableMetadataUtil.parse_obj(load_result["metadata"])
    out: set[str] = set()
    if load_result.get("metadata-location"):
        out.add(load_result["metadata-location"])
    for entry in metadata.metadata_log:
        out.add(entry.metadata_file)
    for stats in list(getattr(metadata, "statistics", []) or []) + list(getattr(metadata, "partition_statistics", []) or []):
        out.add(stats.statistics_path)
    io = load_file_io(properties=_pyiceberg_io_props(io_props), location=metadata.location)
    for snapshot in metadata.snapshots:
        if snapshot.manifest_list:
            out.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            out.add(manifest.manifest_path)
            for manifest_entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                out.add(manifest_entry.data_file.file_path)
    return {norm_uri(u) for u in out}


def _pyiceberg_io_props(props: Mapping[str, str]) -> dict[str, str]:
    out = dict(props)
    out.setdefault("py-io-impl", "pyiceberg.io.pyarrow.PyArrowFileIO")
    if out.get(S3_PATH_STYLE_ACCESS, "").lower() == "true":
        out.setdefault(S3_FORCE_VIRTUAL_ADDRESSING, "false")
    out.setdefault(S3_REGION, out.get(CLIENT_REGION, "us-east-1"))
    return out


def s3_client(endpoint: str | None, access_key: str, secret_key: str, session_token: str | None,
              region: str | None, path_style: bool) -> Any:
    """A boto3 S3 client with these keys (path-style addressing unless `path_style` is false)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import InvalidRegionError

    try:
        return boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id=access_key, aws_secret_access_key=secret_key,
            aws_session_token=session_token, region_name=region or "us-east-1",
            config=Config(s3={"addressing_style": "path" if path_style else "auto"},
                          retries={"max_attempts": 3, "mode": "standard"}),
        )
    except InvalidRegionError:  # from --s3-region, or a table config (client.region, s3.region): anything
        raise ConfigError(f"the S3 region {str(region)[:80]!r} is not a region name (such as us-east-1): fix --s3-region, "
                          "or client.region / s3.region in the table's config or the catalog's settings") from None


def _s3_from_props(props: Mapping[str, str]) -> Any:
    if S3_ACCESS_KEY_ID not in props:
        raise ConfigError("the catalog vended no S3 credentials for this location; pass --s3-access-key/--s3-secret-key")
    # No endpoint anywhere (table config, --s3-endpoint): AWS S3 in the keys' region, as Iceberg's
    # S3FileIO does with the same properties; that is where a catalog on AWS vends keys for.
    return s3_client(props.get(S3_ENDPOINT), props[S3_ACCESS_KEY_ID], props.get(S3_SECRET_ACCESS_KEY, ""),
                     props.get(S3_SESSION_TOKEN), props.get(CLIENT_REGION) or props.get(S3_REGION),
                     props.get(S3_PATH_STYLE_ACCESS, "true").lower() == "true")


@dataclass
class _Catalog:
    """What the catalog references, read in one pass."""

    referenced: set[str]
    tables: list[str]
    metadata_files: set[str]  # every metadata.json any table lists (current + log)
    table_loads: dict[str, Mapping[str, Any]]
    namespaces: list[tuple[str, ...]] = field(default_factory=list)


def _read_catalog(client: CatalogClient, location: str) -> _Catalog:
    """Reads every table with any path under the location; refuses on any error."""
    out = _Catalog(set(), [], set(), {})
    for name, loaded in tables_under(client, location, out.namespaces).items():
        out.table_loads[name] = loaded
        out.metadata_files |= {norm_uri(p) for p in table_paths(loaded) if p.endswith(".metadata.json")}
        tloc = (loaded.get("metadata") or {}).get("location") or location
        try:
            out.referenced |= _referenced_files(loaded, _io_props(loaded, tloc, _user_endpoint(client)))
        except CatalogExtError:
            raise
        except Exception as exc:  # noqa: BLE001 - refusing is the only safe answer
            raise refuse_cleanup(location, f"cannot read the metadata of table {name} at {tloc} "
                                    f"({type(exc).__name__})") from None
        out.tables.append(name)
    return out


def _known_location(client: CatalogClient, location: str, catalog: _Catalog, table: str | None) -> str | None:
    """What the catalog knows `location` as ("table x", "namespace y", "staged table z"), or None.
    A staged table is known by its default place, `<namespace location>/<name>`."""
    for name, loaded in catalog.table_loads.items():
        if same_place((loaded.get("metadata") or {}).get("location") or "", location):
            return f"table {name}"
    ns_locations: dict[tuple[str, ...], str] = {}
    for ns in catalog.namespaces:
        try:
            props = client.namespace_properties(ns)
        except CatalogError:
            continue  # unknown is not "known": the refusal stays
        if props.get("location"):
            ns_locations[tuple(ns)] = str(props["location"])
            if same_place(ns_locations[tuple(ns)], location):
                return f"namespace {'.'.join(ns)}"
    if table is not None and table not in catalog.table_loads:
        # A staged (never committed) table: where the catalog puts a new table of that name.
        *ns_parts, name = table.split(".")
        ns_location = ns_locations.get(tuple(ns_parts))
        if ns_location and same_place(f"{ns_location.rstrip('/')}/{name}", location):
            return f"staged table {table}"
    return None


def _s3_for(client: CatalogClient, table: str, location: str, loads: Mapping[str, Mapping[str, Any]]) -> Any:
    """S3 access from credentials the catalog vends for `table`: loaded if committed, else staged
    at `location` (never committed)."""
    if table in loads:
        return _s3_from_props(_io_props(loads[table], location, _user_endpoint(client)))
    parts = table.split(".")
    body = {"name": parts[-1], "schema": {"type": "struct", "schema-id": 0, "fields": []}, "location": location}
    staged = client.create_table_json(parts[:-1], body, stage_create=True)  # never committed
    got = (staged.get("metadata") or {}).get("location") or ""
    if norm_uri(got).rstrip("/") != norm_uri(location).rstrip("/"):
        raise ConfigError(f"the catalog staged {table} at {got}, not at {location}: pass the table's "
                          "own location or --s3-access-key/--s3-secret-key")
    return _s3_from_props(_io_props(staged, location, _user_endpoint(client)))


def _user_endpoint(client: CatalogClient) -> str | None:
    """The S3 endpoint given with the connection (--s3-endpoint / s3_endpoint=), if any."""
    return str(client.properties.get(S3_ENDPOINT) or "") or None


def _default_location(client: CatalogClient, table: str) -> str:
    """The named committed table's location (a staged table's location is only known to its job)."""
    parts = table.split(".")
    try:
        return client.load_table_json(parts)["metadata"]["location"]
    except CatalogNotFoundError:
        raise ConfigError(f"table {table} is not committed: pass --location (the staged table's location, "
                          "StagedTable.location)") from None


def find_orphans(
    client: CatalogClient,
    location: str | None = None,
    *,
    table: str | None = None,
    s3: Any = None,
    min_age_seconds: float = DEFAULT_MIN_AGE_SECONDS,
    apply: bool = False,
    now: float | None = None,
    allow_min_age_under_24h: bool = False,
    allow_non_table_prefix: bool = False,
    progress: Progress | None = None,
) -> OrphanReport:
    """Files under `location` (default: the location of `table`, "ns.table") that no committed
    table's metadata references, older than `min_age_seconds`; deleted with `apply=True`.

    Raises `CleanupRefused` (one line, nothing deleted) whenever it cannot be sure: among others
    for a location that is not a table's or namespace's of the catalog (unless
    `allow_non_table_prefix`) and a `min_age_seconds` under 24 h (unless `allow_min_age_under_24h`).
    S3 access: `s3` (a boto3 client), else the credentials the catalog vends for `table`.
    `progress` draws the listing and the deletes (the CLI passes one for its terminal).
    """
    progress = progress or Progress.silent()
    if not min_age_seconds > 0:
        raise ConfigError(f"--min-age must be positive (got {min_age_seconds:g}); a running job may be writing "
                          f"the newest files (default {DEFAULT_MIN_AGE_SECONDS:g} s = 3 days)")
    if min_age_seconds < MIN_SAFE_AGE_SECONDS and not allow_min_age_under_24h:
        raise ConfigError(f"--min-age {min_age_seconds:g} is under 24 h (86400 s): a running staged job's files "
                          "could be deleted; use --min-age 86400 or more, or add --allow-min-age-under-24h "
                          "if no job writes there")
    if table is not None and len(table.split(".")) < 2:
        raise ConfigError(f"invalid --table {table!r}: use namespace.table")
    if location is None:
        if table is None:
            raise ConfigError("staged cleanup needs --table NS.TABLE (its location is cleaned) or --location")
        location = _default_location(client, table)
    bucket, prefix = split_s3(location)
    if not prefix.strip("/"):
        raise refuse_cleanup(f"s3://{bucket}", "a bucket root holds every table of every catalog in it; "
                                        "pass one table's location")
    dots = dot_segments(location)
    if dots:
        raise refuse_cleanup(location, dots)
    prefix = prefix.rstrip("/") + "/"
    report = OrphanReport(location=f"s3://{bucket}/{prefix}".rstrip("/"), applied=apply)

    catalog = _read_catalog(client, report.location)
    report.tables = catalog.tables
    report.referenced = len(catalog.referenced)
    if s3 is None and table is None:
        raise ConfigError("staged cleanup needs S3 access: pass --table NS.TABLE (credentials vended by the "
                          "catalog) or --s3-access-key/--s3-secret-key(-env/-file)")
    if not allow_non_table_prefix and _known_location(client, report.location, catalog, table) is None:
        raise refuse_cleanup(report.location, "it is not the location of a table or namespace of this catalog (Hive or "
                                       "raw data there has no metadata to keep its files); pass a table's or "
                                       "namespace's location, or add --allow-non-table-prefix if every file "
                                       "there belongs to this catalog's tables")
    if s3 is None:
        assert table is not None
        s3 = _s3_for(client, table, report.location, catalog.table_loads)

    current = time.time() if now is None else now
    listed = progress.task(f"listing {report.location}")
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            listed(len(page.get("Contents") or []))
            for obj in page.get("Contents") or []:
                _sort_listed(report, bucket, obj, catalog, current, min_age_seconds)
    except CleanupRefused:
        raise
    except Exception as exc:  # noqa: BLE001 - botocore errors: we do not know what is there
        raise refuse_cleanup(report.location, f"cannot list it in S3 ({type(exc).__name__})") from None
    report.orphans.sort()
    if apply:
        _delete(client, s3, bucket, report, progress.task("deleting orphans", total=len(report.orphans)))
    return report


def _sort_listed(report: OrphanReport, bucket: str, obj: Mapping[str, Any], catalog: _Catalog,
                 now: float, min_age_seconds: float) -> None:
    """One listed object: referenced (kept), too young (kept), or an orphan candidate. Refuses
    for a metadata file no listed table has. The key is compared byte for byte."""
    report.listed += 1
    uri = f"s3://{bucket}/{obj['Key']}"
    if uri in catalog.referenced:  # exact: no stripping, no Unicode normalisation
        return
    if _looks_like_metadata(uri) and uri not in catalog.metadata_files:
        # Only a commit writes these: a table this catalog does not list owns it.
        raise refuse_cleanup(report.location, f"{uri!r} is metadata of a table this catalog does not list "
                                       "(another catalog or warehouse, or a dropped table)")
    modified = obj.get("LastModified")
    age = now - modified.timestamp() if isinstance(modified, datetime) else float("inf")
    if age < min_age_seconds:
        report.too_young += 1
        return
    report.orphans.append((uri, int(obj.get("Size", 0)), age))
    report.keys[uri] = obj["Key"]  # deleted by this key, exactly as listed


def _delete(client: CatalogClient, s3: Any, bucket: str, report: OrphanReport, advance: Callable[[int], None]) -> None:
    """Deletes the orphans batch by batch, re-reading the catalog before each batch: a job that
    committed meanwhile keeps its files."""
    uris = [u for u, _, _ in report.orphans]
    for start in range(0, len(uris), DELETE_BATCH):
        batch = uris[start:start + DELETE_BATCH]
        advance(len(batch))
        referenced = _read_catalog(client, report.location).referenced
        kept = [u for u in batch if u in referenced]
        report.kept_committed_meanwhile += kept
        batch = [u for u in batch if u not in referenced]
        if not batch:
            continue
        answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": report.keys[u]} for u in batch],
                                                          "Quiet": True})
        failed = {f"s3://{bucket}/{e['Key']}" for e in answer.get("Errors") or []}
        report.deleted += [u for u in batch if u not in failed]
        if failed:
            raise refuse_cleanup(report.location, f"S3 refused to delete {len(failed)} file(s), e.g. {sorted(failed)[0]}; "
                                           f"{len(report.deleted)} deleted so far")
