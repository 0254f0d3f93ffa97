"""A Spark Connect server as one trust domain: `serve(settings)` starts one that requires
`spark.connect.authenticate.token`, listens on loopback unless told otherwise, and holds the
catalog's secrets in its JVM's memory only.

Every client's Python UDF runs as the server's OS user, so the driver JVM starts from pyspark's
launcher with the settings minus secrets on its command line, gets the whole conf through Py4J (as
`configure()` does), and the service is started in it as Spark's `SparkConnectServer` main does.
Nothing protects the JVM's memory from a UDF: one server per group of users who may share the
catalog's rights.

Why: docs/spark-connect.md, section 'A server is one trust domain' (Spark's side: section 'The server').
"""

from __future__ import annotations

import ipaddress
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.secret_keys import is_secret_key

__all__ = ["TOKEN_KEY", "BINDING_ADDRESS_KEY", "BINDING_PORT_KEY", "LOOPBACK", "DEFAULT_PORT", "is_loopback", "is_connect_server_conf",
           "refuse_secrets_in_properties_file", "read_connect_token", "server_settings", "serve"]

TOKEN_KEY = "spark.connect.authenticate.token"
BINDING_ADDRESS_KEY = "spark.connect.grpc.binding.address"
BINDING_PORT_KEY = "spark.connect.grpc.binding.port"
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 15002
RECIPE = "pyspark-catalog-ext connect-server --credential-stdin ... (docs/spark-connect.md)"
# What Spark's SparkConnectServer main sets before it builds the session.
_SERVER_DEFAULTS = {"spark.sql.artifact.isolation.enabled": "true",
                    "spark.sql.artifact.isolation.alwaysApplyClassloader": "true"}


def is_connect_server_conf(conf: Mapping[str, str]) -> bool:
    """Whether these settings are for a Spark Connect server: any `spark.connect.*` key, or
    Spark's Connect plugin in `spark.plugins`."""
    return any(k.startswith("spark.connect.") for k in conf) or CONNECT_PLUGIN in conf.get("spark.plugins", "")


def refuse_secrets_in_properties_file(conf: Mapping[str, str]) -> None:
    """One-line refusal when a Connect server's settings would put a secret into its properties
    file, which every client's UDF can read (it runs as the server's user)."""
    secrets = sorted(k for k in conf if is_secret_key(k))
    if secrets and is_connect_server_conf(conf):
        raise ConfigError(
            f"a Spark Connect server's properties file must not hold {secrets[0]}: every client's UDF runs as the "
            f"server's user and can read the file; start the server with `{RECIPE}`, which hands secrets to its JVM through Py4J"
        )


def read_connect_token(path: str | None, env_var: str | None) -> str:
    """The server's client token, from a file only its owner can read, or an environment variable."""
    if (path is None) == (env_var is None):
        raise ConfigError("the Connect server needs a client token: pass exactly one of --connect-token-file PATH "
                          "(a file only you can read: chmod 600) and --connect-token-env VAR")
    if env_var is not None:
        token = os.environ.get(env_var, "")
        if not token:
            raise ConfigError(f"--connect-token-env {env_var}: the environment variable {env_var} is not set or empty; export it")
        return token
    assert path is not None
    try:
        info = os.stat(path)
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError(f"--connect-token-file {path}: cannot read it ({reason}); pass a readable file holding only the token") from None
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"--connect-token-file {path} is readable by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                          f"make it yours and private: chmod 600 {path}")
    if not token:
        raise ConfigError(f"--connect-token-file {path} is empty; put the token in it")
    return token


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


def server_settings(conf: Mapping[str, str], *, token: str, bind: str = LOOPBACK, port: int = DEFAULT_PORT) -> dict[str, str]:
    """The Connect server's settings: `conf` (from `spark_conf`) plus its token, address and port.
    The address and token come only from the arguments, so none is set by accident elsewhere."""
    for key in (TOKEN_KEY, BINDING_ADDRESS_KEY):
        if key in conf:
            raise ConfigError(f"{key} is set by connect-server itself: pass {'--bind' if key == BINDING_ADDRESS_KEY else '--connect-token-file or --connect-token-env'} instead")
    settings = {**_SERVER_DEFAULTS, "spark.app.name": "Spark Connect server", "spark.ui.enabled": "false", **conf}
    # The UDF workers need pyspark: this Python has it (Spark's default is `python3` on the PATH).
    settings.setdefault("spark.pyspark.python", sys.executable)
    settings.update({BINDING_ADDRESS_KEY: bind, BINDING_PORT_KEY: str(port), TOKEN_KEY: token})
    if is_loopback(bind):  # the driver's other ports too (its RPC, the block manager, a UI if enabled)
        settings.setdefault("spark.driver.host", LOOPBACK)
        settings.setdefault("spark.driver.bindAddress", LOOPBACK)
    return settings


def serve(settings: Mapping[str, str], *, private: Collection[str] = (), started: Callable[[str, int], None] | None = None) -> None:
    """Start the Connect server with `settings` and block until SIGTERM or SIGINT, then stop it.

    The JVM starts with the settings minus secrets (`session.launch_settings`) and minus the keys in
    `private` on its command line and gets them all through Py4J; `started(host, port)` is called
    once it listens."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from pyspark_catalog_ext import logsafety
    from pyspark_catalog_ext.spark.session import launch_settings
    from pyspark_catalog_ext.spark.shim_api import ShimJvm

    logsafety.mask_conf_secrets(settings)  # py4j logs values at DEBUG
    logsafety.MASK.pin(settings[k] for k in private)
    logsafety.install()
    if is_loopback(settings[BINDING_ADDRESS_KEY]):
        # Spark's web servers take their address from here, not from spark.driver.bindAddress.
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    launch = SparkConf(loadDefaults=False)
    launch.setAll([(k, v) for k, v in launch_settings(settings) if k not in private])
    SparkContext._ensure_initialized(conf=launch)
    jvm = SparkContext._gateway.proc  # type: ignore[union-attr]  # pyspark's Popen of the driver JVM
    builder: Any = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        driver = ShimJvm(spark)
        port = driver.start_connect_service()
        if started is not None:
            started(settings[BINDING_ADDRESS_KEY], port)
        while not stop.wait(1):
            if jvm is not None and jvm.poll() is not None:
                raise ConfigError(f"the Spark Connect server's JVM exited (code {jvm.returncode}); its log is above")
        driver.stop_connect_service()
    finally:
        if jvm is None or jvm.poll() is None:
            spark.stop()
