"""Credential refresh in a live SparkSession, seen from Python: `attach`, status, knobs and user sources.

The JVM shim (io.catalogext.shim) does the work without Python: it holds every table's
credentials, schedules refreshes and talks to the catalog through Spark's own REST client. Python
only answers for sources that exist only in Python (`attach(spark, sources=...)`), through a Py4J
callback that the JVM calls with a timeout.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from pyspark_catalog_ext import logsafety
from pyspark_catalog_ext.catalog.storage_keys import S3_EXPIRY, S3_REMOTE_SIGNING_ENABLED, STORAGE_REFRESH_TOKEN
from pyspark_catalog_ext.errors import CatalogExtError, ConfigError, redact
from pyspark_catalog_ext.refresh.policy import RefreshPolicy
from pyspark_catalog_ext.refresh.sources import CredentialSource, user_answer
from pyspark_catalog_ext.spark import java_errors as spark_errors
from pyspark_catalog_ext.spark.connect import ConnectCredentialManager, attach_connect, is_connect
from pyspark_catalog_ext.spark.shim_api import PYTHON_CREDENTIAL_BRIDGE, SHIM_CATALOG_IMPL, CommitOutcome, ShimJvm
from pyspark_catalog_ext.spark.status import TableStatus, status_by_table

__all__ = ["attach", "CredentialManager", "TableStatus", "status_by_table", "shim_catalogs"]

log = logging.getLogger("pyspark_catalog_ext.refresh")


def _secret_values(answer: dict) -> list[str]:
    configs = [answer.get("config") or {}] + [c.get("config") or {} for c in answer.get("storage-credentials") or []]
    values = [v for config in configs for k, v in config.items() if k != S3_EXPIRY
              and k.startswith("s3.") and ("key" in k or "token" in k)]
    values += [c[STORAGE_REFRESH_TOKEN] for c in answer.get("storage-credentials") or [] if c.get(STORAGE_REFRESH_TOKEN)]
    return values


class _PythonBridge:
    """The Py4J callback object behind io.catalogext.shim.refresh.PythonCredentialBridge."""

    def __init__(self, manager: CredentialManager) -> None:
        self._manager = manager

    def fetchCredentials(self, request_json: str) -> str:  # noqa: N802 - Java interface name
        try:
            request = json.loads(request_json)
            answer = self._manager._fetch(request)
            logsafety.MASK.add(_secret_values(answer))  # py4j may log the answer at DEBUG
            return json.dumps(answer)
        except Exception as exc:  # noqa: BLE001 - the JVM gets a one-line error, never a traceback
            message = str(exc) if isinstance(exc, CatalogExtError) else f"{type(exc).__name__}: {redact(str(exc))}"
            return json.dumps({"error": " ".join(message.split())})

    class Java:
        implements = [PYTHON_CREDENTIAL_BRIDGE]


class CredentialManager:
    """Refreshing storage credentials for every shim-enabled catalog of one SparkSession.

    Create it with :func:`attach`. Use :meth:`status` to see each table's strategy and timing,
    :meth:`register_source` to plug a credential source of your own, :meth:`close` to detach it.
    The refresh itself runs in the JVM and needs none of this.
    """

    def __repr__(self) -> str:
        return f"CredentialManager(catalogs={sorted(self._catalogs)}, tables={len(self.status())}, policies={self.policies})"

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        #: Policies set from Python, per catalog; the others follow their catalog-ext.refresh.* properties.
        self.policies: dict[str, RefreshPolicy] = {}
        self._catalogs: set[str] = set()
        self._user_sources: dict[str, CredentialSource] = {}
        self._remote_signing: set[str] = set()
        self._shim = ShimJvm(spark)
        self._bridge = _PythonBridge(self)
        self._bridge_registered = False
        self._closed = False

    # ---- public API ----

    @property
    def closed(self) -> bool:
        return self._closed

    def add_catalog(self, name: str, props: Mapping[str, str] | None = None) -> None:
        """Report on Spark catalog `name` (a shim catalog); its secrets are masked in py4j logs."""
        logsafety.mask_conf_secrets(dict(props or {}))
        self._catalogs.add(name)
        if str((props or {}).get(S3_REMOTE_SIGNING_ENABLED, "")).lower() == "true":
            self._remote_signing.add(name)  # remote signing: S3 requests are signed by the catalog

    def set_policy(self, policy: RefreshPolicy, catalogs: Iterable[str] | None = None) -> None:
        """Use `policy` instead of the `catalog-ext.refresh.*` properties of `catalogs` (default: every
        catalog this manager reports on) for their tables handed out from now on, in the driver and,
        through their FileIO config, in executors. Other catalogs keep their own."""
        for name in sorted(self._catalogs if catalogs is None else set(catalogs)):
            self._shim.set_refresh_policy(name, policy.catalog_properties())
            self.policies[name] = policy

    def register_source(self, catalog: str, source: CredentialSource) -> None:
        """Serve `catalog`'s tables from `source` instead of the catalog's own strategies."""
        if not hasattr(source, "fetch"):
            raise ConfigError(f"{type(source).__name__} is not a credential source: it needs a fetch(table) method")
        self._user_sources[catalog] = source
        self._register_bridge()
        self._shim.enable_custom_source(catalog)

    def status(self) -> list[TableStatus]:
        """One entry per table this session's catalogs track (see `status_by_table` for how entries
        merge): on a driver shared by several sessions, never another session's tables."""
        return status_by_table(self._shim.status().entries)

    def commits(self) -> list[CommitOutcome]:
        """The driver's latest commit and stage-create outcomes, oldest first (as SQL `catalog_ext_status()`)."""
        return list(self._shim.status().commits)

    def plugin_stats(self) -> dict:
        """How many executor requests the driver plugin (Spark plugin RPC) served or refused."""
        return asdict(self._shim.plugin_stats())

    def refresh_needs(self) -> dict[str, str]:
        """Catalog name -> what keeping its storage access alive needs, in one line."""
        return {name: ("nothing: remote signing, the catalog signs every S3 request and Spark holds no keys"
                       if name in self._remote_signing else "vended credentials, refreshed before they expire")
                for name in sorted(self._catalogs)}

    def refresh_now(self, table: str | None = None) -> int:
        """Refresh every tracked table now, or only `table` ("catalog.ns.table"), e.g. to check a
        catalog's refresh path. A table that fails is logged and skipped. Returns how many entries
        got new credentials."""
        count = 0
        for entry in self._shim.registry_entries():
            name = entry.name
            if table is not None and name != table:
                continue
            try:
                if self._shim.refresh(entry):
                    count += 1
            except Exception as exc:  # noqa: BLE001 - one dead catalog must not stop the others
                log.warning("catalog-ext: refresh of %s failed: %s", name, redact(str(exc)).splitlines()[0])
        return count

    def close(self) -> None:
        """Detach the Python sources. Tables keep refreshing through the JVM."""
        if self._bridge_registered:
            self._shim.unregister_bridge()
            self._bridge_registered = False
        self._closed = True

    # ---- internals ----

    def _register_bridge(self) -> None:
        """The Py4J callback server is only needed once a Python source exists."""
        if self._bridge_registered:
            return
        logsafety.install()
        self._shim.register_bridge(self._bridge)
        self._bridge_registered = True

    def _fetch(self, req: dict) -> dict:
        """Called by the JVM (through the bridge, with a timeout) for a table of a catalog with a user source."""
        catalog = req.get("catalog", "")
        source = self._user_sources.get(catalog)
        if source is None:
            raise ConfigError(f"catalog {catalog!r} has no Python credential source: attach(spark, sources={{{catalog!r}: ...}})")
        answer = user_answer(source, req)
        log.info(
            "catalog-ext: fetched storage credentials for %s via %s",
            ".".join([catalog, *req.get("namespace", []), req.get("table", "?")]),
            answer.get("strategy"),
        )
        return answer


def shim_catalogs(spark: Any) -> dict[str, dict[str, str]]:
    """Catalog name -> its `spark.sql.catalog.<name>.*` properties, for catalogs using the shim.

    Reads the session's runtime conf, so catalogs added with `spark.conf.set` are found too.
    """
    conf = ShimJvm(spark).runtime_conf()
    catalogs: dict[str, dict[str, str]] = {}
    for key, value in conf.items():
        if key.startswith("spark.sql.catalog.") and key.endswith(".catalog-impl") and value == SHIM_CATALOG_IMPL:
            name = key[len("spark.sql.catalog."):-len(".catalog-impl")]
            prefix = f"spark.sql.catalog.{name}."
            catalogs[name] = {k[len(prefix):]: v for k, v in conf.items() if k.startswith(prefix)}
    return catalogs


# One manager per SparkContext: the JVM registry is per JVM, so two would fight over the bridge.
_MANAGERS: dict[int, CredentialManager] = {}
_MANAGERS_LOCK = threading.Lock()


def attach(
    spark: Any,
    catalogs: list[str] | None = None,
    policy: RefreshPolicy | None = None,
    sources: Mapping[str, CredentialSource] | None = None,
    event_sinks: list[Any] | None = None,  # callables taking a pce.events.Event: every event from now on, the JVM's too
) -> CredentialManager | ConnectCredentialManager:
    """The Python face of the session's credential refresh: status, knobs and Python sources.

    Refresh itself needs no call: the JVM shim does it for every shim-enabled catalog. Use this to
    see `status()`, to set a `policy` for the tables of `catalogs` (default: every shim catalog)
    handed out from now on (the others keep their `catalog-ext.refresh.*` properties), or to serve catalogs from `sources`. Calling it
    again returns the same manager and picks up catalogs added since.

    A Spark Connect session (no Py4J) gets a `ConnectCredentialManager`: status and commit outcomes
    read through SQL `catalog_ext_status()`; `policy`, `sources` and `event_sinks` need Py4J and are
    refused in one line naming the server setting to use instead (docs/spark-connect.md).
    """
    if is_connect(spark):
        return attach_connect(spark, catalogs, policy, sources, event_sinks)
    spark_errors.install()  # our JVM failures in spark.sql etc. become one-line package errors
    found = shim_catalogs(spark)
    wanted = catalogs if catalogs is not None else list(found)
    missing = [c for c in wanted if c not in found]
    if missing:
        raise ConfigError(
            f"catalog(s) {', '.join(missing)} are not configured with catalog-impl={SHIM_CATALOG_IMPL}; "
            "build the session with pyspark_catalog_ext.configure(...)"
        )
    key = id(spark.sparkContext._jsc)
    with _MANAGERS_LOCK:
        manager = _MANAGERS.get(key)
        if manager is None or manager.closed:
            manager = CredentialManager(spark)
            _MANAGERS[key] = manager
        for name in wanted:
            if name not in manager._catalogs:
                manager.add_catalog(name, found[name])
        if policy is not None:
            manager.set_policy(policy, wanted)
        for catalog, source in (sources or {}).items():
            manager.register_source(catalog, source)
    from pyspark_catalog_ext import events
    from pyspark_catalog_ext.spark import jvm_events

    # The JVM's events (commits, refreshes) join pce.events; new sinks get them from now on.
    jvm_events.connect(spark).pull()
    for sink in event_sinks or ():
        events.subscribe(sink)
    return manager
