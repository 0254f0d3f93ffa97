"""A Maven-layout repository of the pinned jars and the shim, for `spark-submit --packages`.

`write_repository(DIR, stack=...)` puts the sha256-pinned jars of a stack (`jars.resolve_jars()`)
under their real Maven Central coordinates and the built shim under
`io.catalogext:catalog-ext-shim:<version>-spark<S>-iceberg<I>`, whose POM lists them, so `--packages`
with that one coordinate resolves the whole stack offline through Spark's own Ivy. The PyPI route's
jars (Spark 3.5 + Iceberg 1.10.2 with the AWS SDK modules) go under the plain `<version>`, whose
dependencies are jvm-shim/pom.xml's own. With `stores`, Iceberg's ADLS and GCS SDK bundles go under
their own Central coordinates too (not in the shim's POM: `spark-conf --jars packages --store adls`
names them). The same directory can be uploaded to a company Nexus/Artifactory. CLI:
`pyspark-catalog-ext maven-repo DIR [--store adls --store gcs]`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse
from xml.sax.saxutils import escape

from pyspark_catalog_ext.errors import ConfigError, JarError
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import DEFAULT_STACK, MAVEN_ROUTE, PYPI_ROUTE, PYPI_STACK, JvmStack
from pyspark_catalog_ext.spark.jvm_deps.maven_jars import maven_coordinate
from pyspark_catalog_ext.spark.jvm_deps.shim_build import SHIM_ARTIFACT, SHIM_GROUP, shim_version

__all__ = ["Coordinate", "shim_coordinate", "store_coordinate", "runtime_dependencies", "pom_xml", "writable_directory", "write_repository", "repository_settings", "IVY_DIR_NAME",
           "IVY_SETTINGS_NAME"]

# Ivy's cache for a local repository lives inside it, so it never lands in ~/.ivy2 (spark.jars.ivy).
IVY_DIR_NAME = ".ivy2"
# Ivy's settings for this repository alone: Spark's default chain would look in ~/.m2 first, where a
# Maven build leaves Central's POMs of the same coordinates (with dependencies our minimal POMs
# leave out, e.g. httpclient) but not always their jars, and then in unreachable repositories.
IVY_SETTINGS_NAME = "ivysettings.xml"


@dataclass(frozen=True)
class Coordinate:
    """A Maven artifact `group:artifact:version`."""

    group: str
    artifact: str
    version: str

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def directory(self, root: Path) -> Path:
        """`<root>/<group as path>/<artifact>/<version>` (Maven repository layout)."""
        return root.joinpath(*self.group.split("."), self.artifact, self.version)

    def file(self, root: Path, ext: str) -> Path:
        return self.directory(root) / f"{self.artifact}-{self.version}.{ext}"


def shim_coordinate(stack: JvmStack | None = None, route: str = MAVEN_ROUTE) -> Coordinate:
    """The shim's coordinate for `stack` (default: Spark 4.1 + Iceberg 1.12.0) by `route`; `--packages`
    with it alone pulls the whole runtime stack. The jar is the same on every stack, its POM's
    dependencies are not: each stack gets a version of its own (`0.1.0-spark4.1-iceberg1.12.0`), so
    one repository can hold several stacks. The PyPI route's (Spark 3.5 + Iceberg 1.10.2 with the AWS
    SDK modules) is the plain `0.1.0`, jvm-shim/pom.xml's own coordinate and dependencies."""
    if route == PYPI_ROUTE:
        return Coordinate(SHIM_GROUP, SHIM_ARTIFACT, shim_version())
    stack = stack or DEFAULT_STACK
    return Coordinate(SHIM_GROUP, SHIM_ARTIFACT, f"{shim_version()}-spark{stack.spark}-iceberg{stack.iceberg}")


def runtime_dependencies(stack: JvmStack | None = None, route: str = MAVEN_ROUTE) -> list[Coordinate]:
    """The pinned jars of `stack` by `route` as Maven coordinates: the Iceberg Spark runtime first, then
    `iceberg-aws-bundle` (Maven) or the AWS SDK v2 modules (PyPI)."""
    stack = PYPI_STACK if route == PYPI_ROUTE else (stack or DEFAULT_STACK)
    return [Coordinate(*maven_coordinate(name)) for name in stack.jar_names(route)]


def pom_xml(coordinate: Coordinate, dependencies: Sequence[Coordinate] = (), name: str | None = None) -> str:
    """A minimal POM: coordinates, jar packaging and compile-scope dependencies."""
    deps = "".join(
        "    <dependency>\n"
        f"      <groupId>{escape(d.group)}</groupId>\n"
        f"      <artifactId>{escape(d.artifact)}</artifactId>\n"
        f"      <version>{escape(d.version)}</version>\n"
        "    </dependency>\n"
        for d in dependencies
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"\n'
        '         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        f"  <groupId>{escape(coordinate.group)}</groupId>\n"
        f"  <artifactId>{escape(coordinate.artifact)}</artifactId>\n"
        f"  <version>{escape(coordinate.version)}</version>\n"
        "  <packaging>jar</packaging>\n"
        + (f"  <name>{escape(name)}</name>\n" if name else "")
        + (f"  <dependencies>\n{deps}  </dependencies>\n" if deps else "")
        + "</project>\n"
    )


def _write(path: Path, data: bytes | Path) -> None:
    """Write `data` (bytes, or a file to copy) atomically, plus the `.sha1` Maven repositories carry
    (Spark's Ivy neither needs nor checks it, checked here; Maven and Nexus/Artifactory expect it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            if isinstance(data, Path):
                with data.open("rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
            else:
                out.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    digest = hashlib.sha1(usedforsecurity=False)
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    sha1 = path.with_name(path.name + ".sha1")
    sha1.write_text(digest.hexdigest())


def writable_directory(directory: Path | str) -> Path:
    """`directory` (created if missing), or ConfigError (one line) when it cannot be written to."""
    root = Path(directory).expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=root, prefix=".write-test-")
        probe.close()
    except OSError as exc:
        raise ConfigError(f"repository directory {root} is not writable ({exc.strerror or type(exc).__name__}); pass a directory you can write to") from None
    return root


def store_coordinate(store: str, stack: JvmStack) -> Coordinate:
    """The coordinate of the SDK bundle `store` ("adls", "gcs") needs on `stack`."""
    from pyspark_catalog_ext.spark.jvm_deps.store_jars import store_bundle

    return Coordinate(*store_bundle(store, stack).split(":"))


def write_repository(directory: Path | str, jars: Sequence[Path] | None = None, shim: Path | None = None,
                     stack: JvmStack | None = None, route: str = MAVEN_ROUTE, stores: Sequence[str] = ()) -> list[Coordinate]:
    """Lay out `directory` as a Maven repository of the pinned jars of `stack` (default: Spark 4.1 +
    Iceberg 1.12.0; the PyPI route: Spark 3.5 + Iceberg 1.10.2), the SDK bundles of `stores` ("adls",
    "gcs") and the shim; returns the coordinates written (the shim last). `jars`/`shim` default to
    `resolve_jars(stack=stack, route=route)` / `shim_jar()`; a bundle not among `jars` (by file name) is
    fetched and verified (`store_jars`).

    Only real artifacts under their real coordinates. Their POMs are minimal: the Iceberg runtime and
    bundle are shaded jars with no dependencies of their own, and the AWS SDK POMs list none on purpose
    (Central's list more, e.g. Netty, that S3FileIO does not need) because the shim's POM names every
    module needed.
    """
    stack = PYPI_STACK if route == PYPI_ROUTE else (stack or DEFAULT_STACK)
    root = writable_directory(directory)
    if jars is None:
        from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars

        jars = resolve_jars(stack=stack, route=route)
    if shim is None:
        from pyspark_catalog_ext.spark.jvm_deps.shim_build import shim_jar

        shim = shim_jar()
    by_name = {p.name: p for p in jars}
    deps = runtime_dependencies(stack, route)
    written: list[Coordinate] = []
    try:
        for name in stack.jar_names(route):
            jar = by_name.get(name)
            if jar is None or not jar.is_file():
                raise JarError(f"pinned jar {name} is missing ({jar or 'not given'}); run `pyspark-catalog-ext spark-conf` once to fetch the jars, or pass all of them")
            coord = Coordinate(*maven_coordinate(name))
            _write(coord.file(root, "jar"), jar)
            _write(coord.file(root, "pom"), pom_xml(coord).encode())
            written.append(coord)
        for store in stores:  # shaded jars with no dependencies of their own, as the runtime
            coord = store_coordinate(store, stack)
            bundle = by_name.get(coord.file(root, "jar").name) or _fetch_bundle(store, stack)
            _write(coord.file(root, "jar"), bundle)
            _write(coord.file(root, "pom"), pom_xml(coord).encode())
            written.append(coord)
        if not shim.is_file():
            raise JarError(f"shim jar {shim} is missing; build it with pyspark_catalog_ext.spark.jvm_deps.shim_build.shim_jar()")
        coord = shim_coordinate(stack, route)
        _write(coord.file(root, "jar"), shim)
        _write(coord.file(root, "pom"), pom_xml(coord, deps, name="pyspark-catalog-ext JVM shim").encode())
        written.append(coord)
    except OSError as exc:
        raise ConfigError(f"could not write the repository under {root} ({exc.strerror or type(exc).__name__}); check free space and permissions") from None
    # Ivy caches artifacts by version: a rebuilt shim of the same version is served stale from it
    # (checked here). The cache dir is ours (spark-conf points spark.jars.ivy there), so dropping it is safe.
    shutil.rmtree(root / IVY_DIR_NAME, ignore_errors=True)
    try:
        (root / IVY_SETTINGS_NAME).write_text(_ivy_settings(root.resolve()))
    except OSError as exc:
        raise ConfigError(f"could not write {root / IVY_SETTINGS_NAME} ({exc.strerror or type(exc).__name__}); check free space and permissions") from None
    return written


def _fetch_bundle(store: str, stack: JvmStack) -> Path:
    from pyspark_catalog_ext.spark.jvm_deps.store_jars import store_jars

    return store_jars(store, stack)[0]


def _stack_flags(stack: JvmStack) -> str:
    return f" --spark {stack.spark} --iceberg {stack.iceberg}"


def _ivy_settings(root: Path) -> str:
    """Ivy settings that resolve from this Maven-layout directory only (spark.jars.ivySettings)."""
    return f"""<ivysettings>
  <settings defaultResolver="pyspark-catalog-ext"/>
  <resolvers>
    <ibiblio name="pyspark-catalog-ext" m2compatible="true" root="{root.as_uri()}"/>
  </resolvers>
</ivysettings>
"""


def repository_settings(repository: str, shim: bool = True, stack: JvmStack | None = None, *, user_pick: bool = True,
                        stores: Sequence[str] = ()) -> dict[str, str]:
    """`spark.jars.packages` and where Spark's Ivy resolves them: a directory made by
    `write_repository` (its Ivy settings, that directory alone, and its Ivy cache) or the URL of a
    Maven repository holding the same artifacts (`spark.jars.repositories`, e.g. a company Nexus).
    `stores` ("adls", "gcs") adds their SDK bundles' coordinates; a directory must hold them.
    A directory laid out by the PyPI route (`maven-repo --jars pypi`) serves a Spark 3.5 stack whose
    Iceberg release was not the user's pick (`user_pick=False`) when it holds no Maven-route layout of it."""
    stack = stack or DEFAULT_STACK
    coordinates = [shim_coordinate(stack)] if shim else runtime_dependencies(stack)
    bundles = [store_coordinate(store, stack) for store in stores]
    conf = {"spark.jars.packages": ",".join(map(str, coordinates + bundles))}
    if urlparse(repository).scheme in ("http", "https", "file"):
        conf["spark.jars.repositories"] = repository
        return conf
    root = Path(repository).expanduser().resolve()
    if not coordinates[0].file(root, "pom").is_file() and stack.spark == PYPI_STACK.spark and (stack.on_pypi or not user_pick):
        pypi = [shim_coordinate(route=PYPI_ROUTE)] if shim else runtime_dependencies(route=PYPI_ROUTE)
        if pypi[0].file(root, "pom").is_file():
            coordinates = pypi
            conf["spark.jars.packages"] = ",".join(map(str, coordinates + bundles))
    marker = coordinates[0].file(root, "pom")
    if not marker.is_file() or not (root / IVY_SETTINGS_NAME).is_file():
        raise ConfigError(f"{root} holds no {coordinates[0]} and its Ivy settings; lay it out first with `pyspark-catalog-ext maven-repo {repository}`{_stack_flags(stack)} (or pass the URL of a Maven repository)")
    for store, bundle in zip(stores, bundles, strict=True):
        if not bundle.file(root, "pom").is_file():
            raise ConfigError(f"{root} holds no {bundle} (the {store} SDK bundle); lay it out with `pyspark-catalog-ext maven-repo {repository}"
                              f"{_stack_flags(stack)} --store {store}`")
    conf["spark.jars.ivySettings"] = str(root / IVY_SETTINGS_NAME)
    conf["spark.jars.ivy"] = str(root / IVY_DIR_NAME)
    return conf
