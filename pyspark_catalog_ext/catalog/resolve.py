"""The catalog connection for a profile and the caller's arguments, whichever catalog it is.

Profile `local` is the embedded lakehouse: without a `uri` of its own it takes the connection a
running lakehouse hands over (`ConnectionSource`, such as `Lakehouse` or `LakehouseInfo`); the
caller passes the lakehouse, since finding one is the lakehouse's business, not the catalog's.
"""

from __future__ import annotations

from typing import Any, Protocol

from pyspark_catalog_ext.catalog.connection import CatalogConnection
from pyspark_catalog_ext.catalog.profiles import Profile, get_profile
from pyspark_catalog_ext.catalog.pyiceberg_config import pyiceberg_config
from pyspark_catalog_ext.errors import ConfigError

__all__ = ["ConnectionSource", "catalog_connection"]


class ConnectionSource(Protocol):
    """Something that hands over its own catalog connection (the embedded lakehouse)."""

    def connection(self, **overrides: Any) -> CatalogConnection: ...


def catalog_connection(profile: str | Profile = "local", *, lakehouse: ConnectionSource | None = None,
                       **connection_args: Any) -> CatalogConnection:
    """The `CatalogConnection` for these arguments (those of `CatalogConnection.resolve`). Profile
    `local` without a `uri` connects to `lakehouse` (one started in-process, or the one `pyspark-catalog-ext
    local up` started)."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    from_pyiceberg = connection_args.get("from_pyiceberg")
    if prof.name == "local" and not connection_args.get("uri") and not (from_pyiceberg and "uri" in pyiceberg_config(from_pyiceberg)):
        if lakehouse is None:
            raise ConfigError("profile 'local' needs a running lakehouse: start one with `pyspark-catalog-ext local up` (or pass --uri)")
        return lakehouse.connection(**connection_args)
    return CatalogConnection.resolve(prof, **connection_args)
