"""pyspark-catalog-ext: PySpark on Apache Iceberg REST catalogs that survives short-lived vended
S3 credentials.

Public API: `__all__` below (settings and sessions, the embedded lakehouse, vendor profiles, JVM
dependencies, credential refresh, errors), plus staged tables, maintenance, policies, events,
notifications and `duckdb_connect`, imported on first use. Importing this package does not start
a JVM or import pyspark.

What each name is for: docs/architecture.md, section 'The public API'.
"""

from __future__ import annotations

__version__ = "0.1.0"

from pyspark_catalog_ext.catalog.local_lakehouse import LakehouseInfo  # noqa: E402
from pyspark_catalog_ext.catalog.profiles import PROFILES, Profile, get_profile  # noqa: E402
from pyspark_catalog_ext.errors import (
    CatalogAuthError,
    CatalogError,
    CatalogExtError,
    CatalogNotFoundError,
    CatalogUnavailableError,
    ConfigError,
    CredentialRefreshError,
    JarError,
    JavaError,
    LakehouseError,
)
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog  # noqa: E402
from pyspark_catalog_ext.refresh import (
    AssumeRoleSource,
    CredentialSource,
    FunctionSource,
    RefreshPolicy,
    StorageCredentials,
    TableInfo,
)
from pyspark_catalog_ext.spark.catalog_check import check_catalog  # noqa: E402
from pyspark_catalog_ext.spark.conf import CatalogSparkConf, spark_conf  # noqa: E402
from pyspark_catalog_ext.spark.credentials import CredentialManager, attach  # noqa: E402
from pyspark_catalog_ext.spark.jvm_deps.jars import MAVEN_PACKAGES, resolve_jars  # noqa: E402
from pyspark_catalog_ext.spark.jvm_deps.shim_build import check_java, shim_jar  # noqa: E402
from pyspark_catalog_ext.spark.session import configure, lakehouse_session  # noqa: E402

__all__ = [
    "__version__",
    "configure",
    "spark_conf",
    "CatalogSparkConf",
    "lakehouse_session",
    "pyiceberg_catalog",
    "check_catalog",
    "LakehouseInfo",
    "PROFILES",
    "Profile",
    "get_profile",
    "resolve_jars",
    "MAVEN_PACKAGES",
    "shim_jar",
    "check_java",
    "attach",
    "CredentialManager",
    "RefreshPolicy",
    "CredentialSource",
    "StorageCredentials",
    "TableInfo",
    "AssumeRoleSource",
    "FunctionSource",
    "CredentialRefreshError",
    "CatalogExtError",
    "ConfigError",
    "JavaError",
    "JarError",
    "CatalogError",
    "CatalogAuthError",
    "CatalogNotFoundError",
    "CatalogUnavailableError",
    "LakehouseError",
]


_LAZY_SUBMODULES = {"maintenance": "governance.maintenance", "policies": "governance.policies", "events": "events",
                    "notifications": "governance.notifications"}
# Helpers that need pyspark or pydantic, and the embedded lakehouse's server: imported on first use,
# so importing the package stays light and configuring a session never loads the server.
_LAZY_EXPORTS = {"stage_create": "staging.staged", "stage_replace": "staging.staged", "stage_table": "staging.staged",
                 "StagedTable": "staging.staged", "NotificationSink": "governance.notifications", "duckdb_connect": "clients.duckdb",
                 "Lakehouse": "lakehouse.server", "start_lakehouse": "lakehouse.server"}
__all__ += [*_LAZY_EXPORTS, *_LAZY_SUBMODULES]


def __getattr__(name: str):  # `pce.maintenance`, `pce.stage_create` etc. without importing them at package import
    import importlib

    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{_LAZY_SUBMODULES[name]}")
    if name in _LAZY_EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
