"""Spark settings for an Iceberg REST catalog with vended credentials: a catalog's properties
(`catalog_properties`: a `CatalogConnection` rendered for Iceberg Java) and every Spark setting as
a dict (`spark_conf`, printed by `pyspark-catalog-ext spark-conf`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark_catalog_ext.catalog.connection import S3_FILE_IO, SHIM_CATALOG_IMPL, SHIM_CLIENT_FACTORY, spark_catalog_properties
from pyspark_catalog_ext.catalog.local_lakehouse import running_info
from pyspark_catalog_ext.catalog.profiles import Profile, get_profile
from pyspark_catalog_ext.catalog.resolve import catalog_connection
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.secret_keys import REDACTION_REGEX, is_secret_key
from pyspark_catalog_ext.spark.shim_api import EXTENSIONS, SHIM_PLUGIN, SHIM_SQL_EXTENSIONS, SPARK_CATALOG

if TYPE_CHECKING:
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import StackChoice

__all__ = [
    "CatalogSparkConf",
    "spark_conf",
    "catalog_properties",
    "EXTENSIONS",
    "SPARK_CATALOG",
    "SHIM_CATALOG_IMPL",
    "SHIM_CLIENT_FACTORY",
    "SHIM_PLUGIN",
    "STORES",
]

#: Where a catalog's tables may keep their files. The shim's FileIO routes each table's paths to its
#: store by scheme whatever `store=` says; `store=` adds a store's SDK bundle to the jars up front and
#: refuses tables on the stores it leaves out.
STORES = ("s3", "gcs", "adls")
#: The catalog property that tells the shim's FileIO which stores `store=` named (Java: ShimKeys.STORES).
STORES_PROPERTY = "catalog-ext.stores"
# Iceberg's own FileIO for tables on several stores (without the shim).
RESOLVING_FILE_IO = "org.apache.iceberg.io.ResolvingFileIO"


class CatalogSparkConf(dict):
    """A plain `dict[str, str]` of Spark settings whose repr/str mask secret values (not
    `pyspark.SparkConf`: pass it to a builder with `configure()` or `builder.config(map=...)`)."""

    def masked(self) -> dict[str, str]:
        """A copy with secret values replaced by `***`."""
        return {k: ("***" if is_secret_key(k) else v) for k, v in self.items()}

    def __repr__(self) -> str:
        return f"CatalogSparkConf({self.masked()!r})"

    __str__ = __repr__

    def catalog(self, name: str) -> dict[str, str]:
        """The `spark.sql.catalog.<name>.*` properties with the prefix stripped."""
        return spark_catalog_properties(self, name)


def catalog_properties(profile: str | Profile = "local", *, shim: bool = True, lakehouse: Any = None,
                       **connection_args: Any) -> dict[str, str]:
    """A Spark catalog's properties (no `spark.sql.catalog.<c>.` prefix): `catalog_connection(...)`
    rendered for Iceberg Java, with the refresh shim unless `shim=False`."""
    lakehouse = lakehouse if lakehouse is not None else running_info()
    return catalog_connection(profile, lakehouse=lakehouse, **connection_args).spark_properties(shim=shim)


def spark_conf(
    profile: str | Profile = "local",
    catalog: str = "lake",
    *,
    jars: str | None = "offline",
    repository: str | None = None,
    shim: bool = True,
    local: bool | None = None,
    extra_conf: Mapping[str, str] | None = None,
    refresh: Any = None,
    spark: str | None = None,
    iceberg: str | None = None,
    store: str | Sequence[str] | None = None,
    chosen_stack: StackChoice | None = None,
    **catalog_args: Any,
) -> CatalogSparkConf:
    """All Spark settings for `catalog` as a CatalogSparkConf dict (secrets masked in its repr).

    `catalog_args` are those of `catalog_properties` (uri, warehouse, credential, token, sigv4,
    oauth2_server_uri, scope, region, signing_name, path_style, s3_endpoint, from_pyiceberg,
    lakehouse). `jars`: "offline" (the stack's jars fetched here, from Maven Central, in spark.jars;
    the PyPI route where Central does not answer and Spark 3.5's jars from PyPI will do), "pypi" (the
    same from PyPI wheels: Spark 3.5 + Iceberg 1.10.2, for sites that reach only PyPI), "maven"
    (spark.jars.packages), "packages" (everything by coordinates from `repository`: a directory made by
    `pyspark-catalog-ext maven-repo DIR`, or a Maven repository URL) or None (no jar settings). `local`:
    bind the driver to 127.0.0.1 (default: for profile local).
    `refresh`: a `RefreshPolicy`, written as the catalog's `catalog-ext.refresh.*` properties.
    `spark`/`iceberg`: the Spark line (default: the installed pyspark's) and Iceberg release ("1.12";
    default: the newest with a runtime for that line; for the installed pyspark, the newest that runs
    on the Java here) the jars are for (`jvm_deps.jvm_stacks.select_stack`).
    `store`: not needed: the shim's FileIO serves tables on S3, ADLS and GCS side by side, each store's
    SDK loaded on the first table of that store. Naming stores ("adls", "gcs,adls" or a list of
    "s3", "gcs", "adls") adds their SDK bundles to the jars up front (the S3 SDK is always there) and
    refuses tables on the others. Without the shim, it picks Iceberg's FileIO: S3FileIO by default,
    the store's own for one store, ResolvingFileIO for several.
    `chosen_stack`: the stack `configure()` already chose for these `spark`/`iceberg` (`choose_stack`).
    """
    stores = _stores(store)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", catalog):
        raise ConfigError(f"catalog name {catalog!r} must be a plain identifier such as 'lake'")
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    props = catalog_properties(prof, shim=shim, **catalog_args)
    if shim and stores:
        props[STORES_PROPERTY] = ",".join(stores)
    elif not shim:
        props["io-impl"] = _plain_file_io(stores)
    conf = CatalogSparkConf()
    # With the shim, SQL function catalog_ext_status() too: status for clients without Py4J (Spark Connect).
    conf["spark.sql.extensions"] = f"{EXTENSIONS},{SHIM_SQL_EXTENSIONS}" if shim else EXTENSIONS
    conf[f"spark.sql.catalog.{catalog}"] = SPARK_CATALOG
    conf.update({f"spark.sql.catalog.{catalog}.{k}": v for k, v in props.items()})
    if refresh is not None and shim:
        conf.update({f"spark.sql.catalog.{catalog}.{k}": v for k, v in refresh.catalog_properties().items()})
    conf["spark.redaction.regex"] = REDACTION_REGEX
    if local if local is not None else prof.name == "local":
        # this VM (and many laptops) would otherwise advertise a non-loopback address
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    if jars is not None or spark is not None or iceberg is not None:
        if chosen_stack is None or not chosen_stack.is_for(spark, iceberg):
            chosen_stack = choose_stack(spark, iceberg)
        stack = chosen_stack.stack_or_raise()  # checked even without jars: a bad combination is an error either way
        if jars is not None:
            conf.update(_jar_conf(jars, shim, repository, stack, user_pick=iceberg is not None, stores=stores))
    if shim:
        conf["spark.plugins"] = SHIM_PLUGIN  # executors ask the driver over Spark's own RPC
    if extra_conf:
        extra = {str(k): str(v) for k, v in extra_conf.items()}
        conf.update({k: v for k, v in extra.items() if k != "spark.plugins"})
        conf["spark.plugins"] = join_list(extra.get("spark.plugins", ""), conf.get("spark.plugins", ""))
        if not conf["spark.plugins"]:
            del conf["spark.plugins"]
    return conf


def choose_stack(spark: str | None = None, iceberg: str | None = None) -> StackChoice:
    """The stack for Spark `spark` and Iceberg `iceberg` (`select_stack`), chosen now and kept with
    its error or its line for where it is used; for this machine's pyspark with no `iceberg`, the
    newest that runs on the Java here."""
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import StackChoice

    java = None
    if spark is None and iceberg is None:  # this machine's pyspark: the Java here runs it
        from pyspark_catalog_ext.spark.jvm_deps.shim_build import local_java_major

        java = local_java_major()
    return StackChoice.make(spark, iceberg, java=java)


def _stores(store: str | Sequence[str] | None) -> tuple[str, ...]:
    """The stores `store=` names, each once ("gcs,adls" or a list); () when left out."""
    if store is None:
        return ()
    names = store.split(",") if isinstance(store, str) else list(store)
    out: list[str] = []
    for name in (str(n).strip().lower() for n in names):
        if name not in STORES:
            raise ConfigError(f"store {name!r} is not one of {', '.join(STORES)}: where the catalog's tables keep their files (or leave store= out)")
        if name not in out:
            out.append(name)
    if not out:
        raise ConfigError("store= names no store: name s3, gcs or adls, or leave store= out")
    return tuple(out)


def _plain_file_io(stores: tuple[str, ...]) -> str:
    """Iceberg's own FileIO for `stores` (no shim): S3FileIO as before, the store's own, or ResolvingFileIO."""
    if not stores or stores == ("s3",):
        return S3_FILE_IO
    if len(stores) > 1:
        return RESOLVING_FILE_IO
    from pyspark_catalog_ext.spark.jvm_deps.store_jars import store_file_io

    return store_file_io(stores[0])


def join_list(existing: str, ours: str) -> str:
    """Comma lists such as spark.plugins: the user's entries first, ours appended once."""
    items = [i.strip() for i in existing.split(",") if i.strip()]
    return ",".join(items + [i for i in ours.split(",") if i.strip() and i.strip() not in items])


JAR_MODES = ("offline", "pypi", "maven", "packages")


def _jar_conf(mode: str, shim: bool, repository: str | None, stack: Any, user_pick: bool, stores: tuple[str, ...] = ()) -> dict[str, str]:
    from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_stack_jars
    from pyspark_catalog_ext.spark.jvm_deps.shim_build import shim_jar
    from pyspark_catalog_ext.spark.jvm_deps.store_jars import store_bundle, store_jars

    if mode not in JAR_MODES:
        raise ConfigError(f"jars={mode!r} is not a jar mode; use 'offline' (jars fetched here from Maven Central), 'pypi' (the same from PyPI wheels), "
                          "'maven' (spark.jars.packages) or 'packages' (with a repository)")
    bundles = tuple(s for s in stores if s != "s3")  # the S3 SDK is in every stack's jars
    if mode == "packages":
        from pyspark_catalog_ext.spark.jvm_deps.maven_repo import repository_settings

        if not repository:
            raise ConfigError("jars='packages' needs a repository: lay one out with `pyspark-catalog-ext maven-repo DIR`, then pass --repository DIR")
        # the shim's POM pulls the rest: no spark.jars; each store bundle by its own coordinate
        return repository_settings(repository, shim, stack, user_pick=user_pick, stores=bundles)
    if repository:
        raise ConfigError(f"a repository only applies to jars='packages', not {mode!r}; add --jars packages")
    jar_paths = []
    if mode in ("offline", "pypi"):
        route = "pypi" if mode == "pypi" else None
        jar_paths = [str(p) for p in resolve_stack_jars(stack, route=route, user_pick=user_pick).jars]
        for store in bundles:  # from Maven Central in both modes: the bundles are not on PyPI
            jar_paths += [str(p) for p in store_jars(store, stack)]
    if shim:
        jar_paths.append(str(shim_jar()))
    conf = {"spark.jars": ",".join(jar_paths)} if jar_paths else {}
    if mode == "maven":
        conf["spark.jars.packages"] = ",".join([stack.maven_packages] + [store_bundle(store, stack) for store in bundles])
    return conf
