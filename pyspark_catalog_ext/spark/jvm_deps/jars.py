"""Resolve the JVM dependencies (Iceberg Spark runtime + AWS SDK v2) without Maven.

The Spark x Iceberg matrix (`JvmStack`, resources/jvm-stacks.json) is jvm_stacks.py; this module
fetches a stack's jars (`resolve_jars`, `resolve_stack_jars`), sha256-pinned, by one of two routes:
Maven (every stack; maven_jars.py) or PyPI wheels (Spark 3.5 + Iceberg 1.10.2 only; pypi_jars.py),
taken when asked for (`route="pypi"`) or when the Maven repository does not answer and that stack
will do. Both land in a per-user cache dir; resolution is safe to run concurrently (an fcntl lock
+ atomic renames) and re-verifies every checksum.

Why: docs/jvm-dependencies.md, section 'JVM dependencies'.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir
from pyspark_catalog_ext.errors import ConfigError, JarError
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import (
    DEFAULT_STACK,
    MAVEN_ROUTE,
    PYPI_ROUTE,
    PYPI_STACK,
    JvmStack,
    Progress,
    _check_on_pypi,
    progress_to_stderr,
)
from pyspark_catalog_ext.spark.jvm_deps.maven_jars import MAVEN_REPO_ENV, RepositoryUnreachable, resolve_maven
from pyspark_catalog_ext.spark.jvm_deps.pypi_jars import resolve_pypi

__all__ = [
    "MAVEN_PACKAGES",
    "resolve_jars",
    "resolve_stack_jars",
    "StackJars",
]

MAVEN_PACKAGES = DEFAULT_STACK.maven_packages


def resolve_jars(
    cache: Path | str | None = None,
    wheelhouse: Path | str | None = None,
    progress: Progress | None = None,
    stack: JvmStack | None = None,
    route: str = MAVEN_ROUTE,
) -> list[Path]:
    """Return the verified jars of `stack` (default: Spark 4.1 + Iceberg 1.12.0 on the Maven route,
    Spark 3.5 + Iceberg 1.10.2 on the PyPI route; Iceberg runtime first), fetching them on first use
    by `route`, with no fallback (`resolve_stack_jars` has one).

    Maven: from $PYSPARK_CATALOG_EXT_MAVEN_REPO or Maven Central, or `~/.m2` when it holds the pinned
    file. PyPI: `wheelhouse` (or $PYSPARK_CATALOG_EXT_WHEELHOUSE) is a folder of already-downloaded
    wheels used instead of PyPI. Every call re-checks every sha256; a bad jar is fetched again once,
    and a second mismatch raises JarError.
    """
    progress = progress or progress_to_stderr
    cache_path = Path(cache) if cache is not None else cache_dir()
    if route == MAVEN_ROUTE:
        return resolve_maven(stack or DEFAULT_STACK, cache_path, progress)
    if route != PYPI_ROUTE:
        raise ConfigError(f"route {route!r} is not a jar route; use {MAVEN_ROUTE!r} (Maven Central) or {PYPI_ROUTE!r} (PyPI wheels)")
    _check_on_pypi(stack or PYPI_STACK)
    return resolve_pypi(cache_path, wheelhouse, progress)


@dataclass(frozen=True)
class StackJars:
    """The jars of a stack and the route they came by; `note` is the one line that says why the
    route is not the first choice (None on the Maven route)."""

    stack: JvmStack
    route: str
    jars: tuple[Path, ...]
    note: str | None = None


def resolve_stack_jars(stack: JvmStack, *, route: str | None = None, user_pick: bool = False,
                       cache: Path | str | None = None, wheelhouse: Path | str | None = None,
                       progress: Progress | None = None) -> StackJars:
    """The jars of `stack`, from the Maven repository by default. `route="pypi"` asks for the PyPI
    wheels; when the Maven repository does not answer, Spark 3.5 takes them too. Either way that is
    the PyPI route's stack, Spark 3.5 + Iceberg 1.10.2, which stands in for another Spark 3.5 stack
    only when the Iceberg release was not the user's pick (`user_pick`), and `progress` gets one line
    saying which route was taken and why. Anything else fails in one line."""
    progress = progress or progress_to_stderr
    if route not in (None, MAVEN_ROUTE, PYPI_ROUTE):
        raise ConfigError(f"route {route!r} is not a jar route; use {MAVEN_ROUTE!r} (Maven Central) or {PYPI_ROUTE!r} (PyPI wheels)")
    pypi_will_do = stack.on_pypi or (stack.spark == PYPI_STACK.spark and not user_pick)
    if route == PYPI_ROUTE:
        if not pypi_will_do:
            _check_on_pypi(stack)
        instead = "" if stack.on_pypi else f" (not {stack.label}: PyPI has no other)"
        note = f"pyspark-catalog-ext: jars by the PyPI route, as asked for: {PYPI_STACK.label} from PyPI wheels{instead}"
    else:
        try:
            return StackJars(stack, MAVEN_ROUTE, tuple(resolve_jars(cache, wheelhouse, progress, stack, MAVEN_ROUTE)))
        except RepositoryUnreachable as exc:
            if not pypi_will_do:
                raise JarError(f"{exc}; PyPI's wheels carry only {PYPI_STACK.label} (jars='pypi' with pyspark 3.5)") from None
            instead = "" if stack.on_pypi else f" instead of {stack.label}"
            note = (f"pyspark-catalog-ext: {exc.repository} did not answer ({exc.reason}): jars by the PyPI route, {PYPI_STACK.label} "
                    f"from PyPI wheels{instead} (or set {MAVEN_REPO_ENV} to a Maven repository that answers)")
    progress(note)
    return StackJars(PYPI_STACK, PYPI_ROUTE, tuple(resolve_jars(cache, wheelhouse, progress, PYPI_STACK, PYPI_ROUTE)), note)
