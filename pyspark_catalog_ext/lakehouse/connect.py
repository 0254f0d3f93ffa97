"""A catalog connection for any profile: profile `local` is the embedded lakehouse, which hands
over its own connection."""

from __future__ import annotations

from typing import Any

from pyspark_catalog_ext.catalog.connection import CatalogConnection
from pyspark_catalog_ext.catalog.profiles import Profile, get_profile
from pyspark_catalog_ext.catalog.pyiceberg_config import pyiceberg_config
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.lakehouse.server import LakehouseInfo, running_info

__all__ = ["catalog_connection", "lakehouse_info"]


def lakehouse_info(lakehouse: Any) -> LakehouseInfo:
    """The `LakehouseInfo` of a Lakehouse (or the info itself); ConfigError if it is not running."""
    info = getattr(lakehouse, "info", lakehouse)
    if not isinstance(info, LakehouseInfo):
        raise ConfigError("the lakehouse is not running; call .start() (or use start_lakehouse()) first")
    return info


def catalog_connection(profile: str | Profile = "local", *, lakehouse: Any = None, **connection_args: Any) -> CatalogConnection:
    """The `CatalogConnection` for these arguments (those of `CatalogConnection.resolve`). Profile
    `local` without a `uri` connects to `lakehouse` (a Lakehouse or LakehouseInfo), else to the one
    `pyspark-catalog-ext local up` started."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    from_pyiceberg = connection_args.get("from_pyiceberg")
    if prof.name == "local" and not connection_args.get("uri") and not (from_pyiceberg and "uri" in pyiceberg_config(from_pyiceberg)):
        if lakehouse is None:
            lakehouse = running_info()
            if lakehouse is None:
                raise ConfigError("profile 'local' needs a running lakehouse: start one with `pyspark-catalog-ext local up` (or pass --uri)")
        return lakehouse_info(lakehouse).connection(**connection_args)
    return CatalogConnection.resolve(prof, **connection_args)
