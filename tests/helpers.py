"""Helpers shared by the tests and the benchmarks (one copy each): loopback ports, Spark catalogs
registered at runtime, the lakehouse behind short-lived keys, and the small tables the tests write."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_catalog_ext.spark.conf import SPARK_CATALOG, catalog_properties

# The repository's root: tests find files there by this, not by how deep they sit.
ROOT = Path(__file__).resolve().parent.parent


def untrack_tables(spark: Any, catalog: str | None = None) -> list[dict[str, Any]]:
    """Removes the tables of Spark catalog `catalog` (default: every catalog) from the driver's
    credential registry, which would otherwise go on renewing them at their catalogs' ports after a
    test's proxies closed: ports a later test's server may hold. Returns what is still tracked there."""
    registry = spark.sparkContext._jvm.io.catalogext.shim.refresh.CredentialRegistry.get()
    for entry in json.loads(registry.describe()):
        if catalog is None or entry["catalog"] == catalog:
            registry.forget(entry["handle"])
    return [e for e in json.loads(registry.describe()) if catalog is None or e["catalog"] == catalog]


@contextlib.contextmanager
def busy_port() -> Iterator[int]:
    """A loopback port someone is listening on, for as long as the block runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def add_spark_catalog(spark: Any, lakehouse: Any, name: str, uri: str, *, shim: bool = True) -> None:
    """Register catalog `name` at runtime, configured like the lakehouse's but reached via `uri`."""
    props = catalog_properties("local", uri=uri, lakehouse=lakehouse, warehouse=lakehouse.info.warehouse,
                               credential=lakehouse.info.credential, shim=shim)
    spark.conf.set(f"spark.sql.catalog.{name}", SPARK_CATALOG)
    for key, value in props.items():
        spark.conf.set(f"spark.sql.catalog.{name}.{key}", value)


def add_admin_spark_catalog(spark: Any, lakehouse: Any, name: str = "lakeadmin") -> str:
    """A runtime catalog with the lakehouse admin's static S3 keys and no vending: vended
    credentials only reach a table's own location, and some tests write elsewhere on purpose."""
    info = lakehouse.info
    add_spark_catalog(spark, lakehouse, name, info.iceberg_uri, shim=False)
    spark.conf.unset(f"spark.sql.catalog.{name}.header.X-Iceberg-Access-Delegation")
    for key, value in {"s3.access-key-id": info.access_key, "s3.secret-access-key": info.secret_key,
                       "s3.endpoint": info.s3_endpoint, "s3.path-style-access": "true",
                       "client.region": "us-east-1"}.items():
        spark.conf.set(f"spark.sql.catalog.{name}.{key}", value)
    return name


def catalog_client(lakehouse: Any, url: str | None = None, **kwargs: Any) -> Any:
    """The package's one catalog client (`CatalogClient`) as the lakehouse's admin, at `url` (a proxy in
    front of the lakehouse) or the lakehouse itself."""
    from pyspark_catalog_ext.catalog.rest import open_catalog

    info = lakehouse.info
    props = catalog_properties("local", uri=url or info.iceberg_uri, lakehouse=lakehouse, warehouse=info.warehouse,
                               credential=info.credential, shim=False)
    return open_catalog(props, **kwargs)


class ExpiringProxies(NamedTuple):
    """The catalog proxy (clients talk to `catalog.url`) and the S3 proxy its vended configs point at."""

    catalog: Any
    s3: Any


@contextlib.contextmanager
def expiring_proxies(lakehouse: Any, lifetime_s: float, *, s3_proxy: Any = None, s3_class: type | None = None,
                     s3_options: dict[str, Any] | None = None, catalog_class: type | None = None,
                     expire_now: bool = False, **catalog_options: Any) -> Iterator[ExpiringProxies]:
    """The lakehouse behind short-lived keys: a catalog proxy that states `lifetime_s`-second vended
    keys and points their `s3.endpoint` at an S3 expiry proxy (the lakehouse admin's keys exempt).

    The S3 proxy is started here (`s3_class`, default `S3ExpiryProxy`, with `s3_options`) or is the
    running `s3_proxy` given, then left running. It refuses nothing until `max_age_seconds` is set:
    `expire_now=True` sets it to `lifetime_s` here and restores it on exit; tests that first set up
    tables with live keys set it themselves. `catalog_class` (default `CatalogProxy`) gets
    `catalog_options` (`refresh_tokens=True`, ...)."""
    from tests.servers import CatalogProxy, S3ExpiryProxy

    if s3_proxy is not None and (s3_class or s3_options):
        raise ValueError("expiring_proxies: pass either a running s3_proxy or s3_class/s3_options, not both")
    info = lakehouse.info
    with contextlib.ExitStack() as stack:
        if s3_proxy is None:
            s3_class = s3_class or S3ExpiryProxy
            s3_proxy = stack.enter_context(s3_class(info.s3_endpoint, exempt=(info.access_key,),
                                                    **(s3_options or {})))
        catalog = stack.enter_context((catalog_class or CatalogProxy)(
            info.iceberg_uri, short_lifetime_seconds=lifetime_s, s3_endpoint=s3_proxy.url, s3_proxy=s3_proxy,
            **catalog_options))
        if expire_now:
            before = s3_proxy.max_age_seconds
            s3_proxy.max_age_seconds = lifetime_s
            stack.callback(setattr, s3_proxy, "max_age_seconds", before)
        yield ExpiringProxies(catalog, s3_proxy)


# -- the tables the tests write: one `id` column (PyArrow, for PyIceberg), or `id` and `part` (ids // 50,
# rounded: one value per 50 rows), and the one-column schema as Iceberg's REST JSON for raw requests.
ID_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
ID_PART_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int64(), nullable=False)])
REST_ID_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def id_rows(start: int, stop: int) -> pa.Table:
    """Rows of ID_SCHEMA: ids start..stop-1."""
    return pa.table({"id": pa.array(range(start, stop), pa.int64())}, schema=ID_SCHEMA)


def id_part_rows(start: int, stop: int) -> pa.Table:
    """Rows of ID_PART_SCHEMA: ids start..stop-1, part = id / 50."""
    ids = pa.array(range(start, stop), pa.int64())
    return pa.table({"id": ids, "part": pc.divide(ids, 50)}, schema=ID_PART_SCHEMA)


def fake_java_home(folder: Path, banner: str) -> Path:
    """A JAVA_HOME whose bin/java prints `banner` to stderr as `java -version` does."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '{banner}' >&2\necho 'OpenJDK Runtime Environment' >&2\n")
    java.chmod(0o755)
    return folder


class SpoolDiskPeak:
    """The most local disk this process's temporary files held at once while the block ran, sampled
    from /proc/self/fd every `interval_s`: regular files opened meanwhile in the temp dir or already
    unlinked (a spool's anonymous temporary file); files open before (pytest's capture) and under
    `exclude` do not count. Linux only (the tests' and benchmarks' machines)."""

    def __init__(self, interval_s: float = 0.005, exclude: str | Path | None = None) -> None:
        import tempfile
        import threading

        self.interval_s = interval_s
        self.peak = 0
        self._tmp = tempfile.gettempdir()
        self._exclude = str(exclude) + "/" if exclude else None  # a folder the test writes its own files to
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spool-disk-peak", daemon=True)
        self._before: set[tuple[int, int]] = set()
        self.modes: dict[str, int] = {}  # path (as /proc shows it) -> permission bits of every temporary file seen

    def _files(self) -> dict[tuple[int, int], int]:
        """(device, inode) -> bytes on disk of the temporary regular files open now."""
        import os
        import stat

        out = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
                info = os.fstat(int(fd))
            except OSError:
                continue
            if self._exclude and target.startswith(self._exclude):
                continue
            if stat.S_ISREG(info.st_mode) and (target.startswith(self._tmp + "/") or target.endswith(" (deleted)")):
                out[(info.st_dev, info.st_ino)] = info.st_blocks * 512
                if (info.st_dev, info.st_ino) not in self._before:
                    self.modes[target] = stat.S_IMODE(info.st_mode)
        return out

    def now(self) -> int:
        return sum(size for key, size in self._files().items() if key not in self._before)

    def sample(self) -> None:
        """Take a sample now, from the caller's thread: a test that must see a peak calls this at the
        moment it holds it, rather than trusting the background thread to run then on a busy machine."""
        self.peak = max(self.peak, self.now())

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> SpoolDiskPeak:
        self._before = set(self._files())
        self.peak = 0
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.peak = max(self.peak, self.now())
