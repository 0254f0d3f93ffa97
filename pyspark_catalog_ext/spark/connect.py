"""Spark Connect sessions (`pyspark-client`, no Py4J): status through SQL, everything else by configuration.

A Connect client has no JVM of its own: the shim runs in the Connect server's driver, configured by the
server's settings alone (`pyspark-catalog-ext connect-server ...`, spark/connect_server.py). Its
`spark.sql.extensions` entry `CatalogExtSqlExtensions` adds SQL function `catalog_ext_status()`,
which this module reads and parses into the same types `attach()` reports through Py4J. What needs a
Python object in the driver (a Python credential source, a policy set at runtime) cannot work here;
each such call says so in one line and names the setting to use instead.

Nothing here imports py4j or pyspark at import time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.spark.shim_api import SHIM_SQL_EXTENSIONS, STATUS_FUNCTION, CommitOutcome, ShimStatus
from pyspark_catalog_ext.spark.status import TableStatus, status_by_table

__all__ = ["is_connect", "ConnectCredentialManager", "read_status", "not_under_connect"]


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (pyspark.sql.connect.session.SparkSession), without importing it."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def not_under_connect(what: str, instead: str) -> ConfigError:
    """The one-line error for something that needs Py4J in a Connect session."""
    return ConfigError(f"{what} needs Py4J, which a Spark Connect session does not have; {instead}")


def read_status(spark: Any) -> ShimStatus:
    """The Connect server driver's status through SQL `catalog_ext_status()`."""
    try:
        raw = spark.sql(f"SELECT {STATUS_FUNCTION}() AS status").collect()[0][0]
    except Exception as exc:  # the server's AnalysisException: the function is not registered there
        if STATUS_FUNCTION.lower() in str(exc).lower():
            raise ConfigError(
                f"the Spark Connect server has no SQL function {STATUS_FUNCTION}(): start it with "
                f"`pyspark-catalog-ext connect-server` (spark.sql.extensions must include {SHIM_SQL_EXTENSIONS} and "
                "the shim jar must be on its classpath)"
            ) from None
        raise
    return ShimStatus.from_json(json.loads(raw))


class ConnectCredentialManager:
    """`attach(spark)` for a Spark Connect session: read-only status through SQL.

    The refresh, the commit guard and the driver plugin run in the Connect server's driver exactly
    as with Py4J; their knobs are that server's `spark.sql.catalog.<c>.catalog-ext.*` settings.
    """

    def __init__(self, spark: Any, catalogs: list[str]) -> None:
        self._spark = spark
        self._catalogs = list(catalogs)
        self.policies: dict[str, Any] = {}  # always empty: policies come from the server's configuration

    def __repr__(self) -> str:
        return f"ConnectCredentialManager(catalogs={sorted(self._catalogs)})"

    @property
    def closed(self) -> bool:
        return False

    def status(self) -> list[TableStatus]:
        """One `TableStatus` per table the server's driver tracks (merged as `CredentialManager.status`)."""
        return status_by_table(read_status(self._spark).entries)

    def commits(self) -> list[CommitOutcome]:
        """The server driver's latest commit and stage-create outcomes, oldest first."""
        return list(read_status(self._spark).commits)

    def plugin_stats(self) -> dict:
        stats = read_status(self._spark).plugin
        return {"served": stats.served, "refused": stats.refused}

    def refresh_needs(self) -> dict[str, str]:
        return {name: "vended credentials, refreshed before they expire (in the Spark Connect server's driver)"
                for name in sorted(self._catalogs)}

    def set_policy(self, policy: Any, catalogs: Any = None) -> None:
        raise not_under_connect("setting a refresh policy at runtime",
                                "set spark.sql.catalog.<catalog>.catalog-ext.refresh.* on the Connect server "
                                "(pyspark-catalog-ext connect-server ... --conf ...) and restart it")

    def register_source(self, catalog: str, source: Any) -> None:
        raise not_under_connect(f"a Python credential source for catalog {catalog!r}",
                                "let the server's catalog vend credentials, or run the job with a classic (Py4J) session")

    def refresh_now(self, table: str | None = None) -> int:
        raise not_under_connect("refresh_now()", "the server's driver refreshes on schedule; read catalog_ext_status() to follow it")

    def close(self) -> None:
        """Nothing to detach: no Python object lives in the server's driver."""


def attach_connect(
    spark: Any,
    catalogs: list[str] | None,
    policy: Any,
    sources: Mapping[str, Any] | None,
    event_sinks: list[Any] | None,
) -> ConnectCredentialManager:
    """`attach()` under Spark Connect; refuses in one line what needs Py4J."""
    if policy is not None:
        raise not_under_connect("attach(policy=...)", "set spark.sql.catalog.<catalog>.catalog-ext.refresh.* on the Connect server instead")
    if sources:
        raise not_under_connect("attach(sources=...)", "let the server's catalog vend credentials, or use a classic (Py4J) session")
    if event_sinks:
        raise not_under_connect("attach(event_sinks=...)",
                                "set spark.sql.catalog.<catalog>.catalog-ext.events.jsonl-path on the Connect server, "
                                "or read the commit outcomes with attach(spark).commits()")
    found = read_status(spark).catalogs
    wanted = catalogs if catalogs is not None else list(found)
    missing = [c for c in wanted if c not in found]
    if missing:
        raise ConfigError(
            f"catalog(s) {', '.join(missing)} are not shim catalogs on the Spark Connect server; "
            "start it with `pyspark-catalog-ext connect-server --catalog NAME ...`"
        )
    return ConnectCredentialManager(spark, wanted)
