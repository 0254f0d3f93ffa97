"""The Spark x Iceberg matrix: which stacks are supported, which one a session takes, the Java it needs.

`JvmStack` and its jars' coordinates come from resources/jvm-stacks.json (every jar sha256-pinned).
The Spark version comes from the installed pyspark (or `spark=`), the Iceberg version is the user's
choice (`iceberg=`; default: the newest release with a runtime for that Spark line, or on Java 11 the
newest that runs there).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.spark.jvm_deps.pypi_jars import ICEBERG_VERSION, WHEEL_SOURCES

__all__ = [
    "JvmStack",
    "DEFAULT_STACK",
    "PYPI_STACK",
    "MAVEN_ROUTE",
    "PYPI_ROUTE",
    "supported_stacks",
    "select_stack",
    "StackChoice",
    "min_java_for_stack",
    "installed_spark_version",
    "pinned_maven_jars",
]

ICEBERG_GROUP = "org.apache.iceberg"
MAVEN_ROUTE = "maven"
PYPI_ROUTE = "pypi"
# Iceberg dropped Java 8 in 1.7 and the shim is compiled for 11: every stack needs 11. Java 17 class
# files: Spark 4.x's, and Iceberg's from 1.11 on (it dropped Java 11 there; its 3.5 runtimes 1.11/1.12
# are class version 61). Spark 3.5 itself runs on 8/11/17.
MIN_JAVA = 11
JAVA17 = 17
# Hadoop's UserGroupInformation, in every Spark line up to 4.1, calls Subject.getSubject, which Java 23
# and later refuse (JDK 24 also removed the flag that allowed it): spark-submit then fails resolving
# `spark.jars` through Hadoop's FileSystem. The newest Java those lines start on with jars is 22.
NEWEST_JAVA_WITH_HADOOP_SUBJECT = 22


@lru_cache(maxsize=1)
def _stack_spec() -> dict:
    return json.loads(resources.files("pyspark_catalog_ext").joinpath("resources/jvm-stacks.json").read_text(encoding="utf-8"))


def pinned_maven_jars() -> dict[str, dict[str, object]]:
    """`group:artifact:version` -> {"sha256", "sha1", "size"} of every jar pinned in jvm-stacks.json."""
    return dict(_stack_spec()["jars"])


def major_minor(version: str, what: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", str(version).strip())
    if not match:
        raise ConfigError(f"{what} version {version!r} is not a version; pass one such as '4.1' or '1.12.0'")
    return int(match.group(1)), int(match.group(2))


def min_java_for_stack(spark: str, iceberg: str | None = None) -> int:
    """The oldest Java that Spark `spark` ("4.1", "3.5.9") with Iceberg `iceberg` ("1.12.0"; None:
    Spark's own need and the package's floor) and the shim run on: 17 for Spark 4 or Iceberg >= 1.11."""
    needed = JAVA17 if major_minor(spark, "Spark")[0] >= 4 else MIN_JAVA
    if iceberg is not None and major_minor(iceberg, "Iceberg") >= (1, 11):
        needed = JAVA17
    return needed


def max_java_for_stack(spark: str) -> int | None:
    """The newest Java that Spark `spark` ("4.1") starts on with the package's jars, or None when no
    limit is known (a Spark line after 4.1 may ship a Hadoop that no longer calls Subject.getSubject)."""
    return NEWEST_JAVA_WITH_HADOOP_SUBJECT if major_minor(spark, "Spark") <= (4, 1) else None


@dataclass(frozen=True)
class JvmStack:
    """One supported Spark x Iceberg combination and its jars."""

    spark: str  # Spark minor line, "3.5"
    iceberg: str  # Iceberg release, "1.12.0"
    scala: str  # "2.12" / "2.13"

    @property
    def on_pypi(self) -> bool:
        """Whether PyPI wheels carry this stack's jars (Spark 3.5 + Iceberg 1.10.2 only)."""
        return self == PYPI_STACK

    @property
    def runtime(self) -> str:
        return f"{ICEBERG_GROUP}:iceberg-spark-runtime-{self.spark}_{self.scala}:{self.iceberg}"

    @property
    def aws_bundle(self) -> str:
        return f"{ICEBERG_GROUP}:iceberg-aws-bundle:{_stack_spec()['aws_bundle'][self.iceberg]}"

    @property
    def maven_packages(self) -> str:
        """`spark.jars.packages` for clusters that reach Maven Central."""
        return f"{self.runtime},{self.aws_bundle}"

    @property
    def label(self) -> str:
        return f"Spark {self.spark} + Iceberg {self.iceberg}"

    def jar_names(self, route: str = MAVEN_ROUTE) -> list[str]:
        """File names `resolve_jars(stack=self, route=route)` returns, in order."""
        if route == PYPI_ROUTE:
            _check_on_pypi(self)
            return [name for source in WHEEL_SOURCES for name in source.jars]
        return [jar_file_name(c) for c in (self.runtime, self.aws_bundle)]


def jar_file_name(coordinate: str) -> str:
    _, artifact, version = coordinate.split(":")
    return f"{artifact}-{version}.jar"


def supported_stacks() -> list[JvmStack]:
    """Every supported combination, Spark line by Spark line."""
    return [JvmStack(spark, ice, line["scala"]) for spark, line in _stack_spec()["spark"].items() for ice in line["iceberg"]]


def _supported_summary() -> str:
    return "; ".join(f"Spark {spark}: Iceberg {', '.join(line['iceberg'])}" for spark, line in _stack_spec()["spark"].items())


def installed_spark_version() -> str:
    """The installed pyspark's version (classic pyspark, pyspark-connect or pyspark-client, pip-installed or not)."""
    try:
        from pyspark.version import __version__  # imported here: the package itself never needs pyspark
    except ImportError:
        raise ConfigError(
            "no pyspark is installed: pip install 'pyspark-catalog-ext[spark]' (pyspark 4.1) or a supported pyspark "
            "(3.5, 4.0 or 4.1, e.g. pip install 'pyspark==4.1.*'), or pass spark='4.1' (spark-conf --spark 4.1) to name the cluster's Spark"
        ) from None
    return str(__version__)


def select_stack(spark: str | None = None, iceberg: str | None = None, *, java: int | None = None,
                 progress: Progress | None = None) -> JvmStack:
    """The combination for Spark `spark` ("4.1", "4.1.3"; default: the installed pyspark's) and
    Iceberg `iceberg` ("1.12", "1.12.0"; default: the newest with a runtime for that Spark line).
    `java`: the major version of the Java the stack will run on, when known: without an `iceberg`,
    a line whose default needs a newer Java takes the newest release that runs on it (Spark 3.5 on
    Java 11: Iceberg 1.10.2), and `progress` gets one line saying so.
    Raises ConfigError (one line) for a Spark line or combination Iceberg publishes no runtime for."""
    lines = _stack_spec()["spark"]
    full = spark if spark is not None else installed_spark_version()
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+.*)?", str(full).strip())
    if not match:
        raise ConfigError(f"Spark version {full!r} is not a version; pass one such as '4.1' or '3.5.9'")
    minor = f"{match.group(1)}.{match.group(2)}"
    if minor not in lines:
        what = f"the installed pyspark {full}" if spark is None else f"Spark {full}"
        raise ConfigError(f"{what} has no Iceberg runtime this package supports; supported: {_supported_summary()}; "
                          f"install one of those pyspark lines (e.g. pip install 'pyspark==4.1.*')")
    line = lines[minor]
    if iceberg is None:
        chosen = line["default"]
        if java is not None and java < min_java_for_stack(minor, chosen):
            runnable = [v for v in line["iceberg"] if min_java_for_stack(minor, v) <= java]
            if runnable:
                (progress or progress_to_stderr)(
                    f"pyspark-catalog-ext: Java {java} cannot run Iceberg {chosen} (1.11+ needs Java 17): Spark {minor} takes "
                    f"Iceberg {runnable[-1]} instead; a JDK >= 17 (JAVA_HOME) gets {chosen}")
                chosen = runnable[-1]
    else:
        wanted = str(iceberg).strip()
        found = [v for v in line["iceberg"] if v == wanted or v.startswith(wanted + ".")]
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", wanted) or not found:
            raise ConfigError(f"Iceberg {wanted} has no runtime for Spark {minor} here; Iceberg versions for Spark {minor}: {', '.join(line['iceberg'])} "
                              f"(all: {_supported_summary()})")
        chosen = found[-1]
    return JvmStack(minor, chosen, line["scala"])


@dataclass(frozen=True)
class StackChoice:
    """One `select_stack(spark, iceberg)` call kept to be handed on, so that one `configure()` chooses
    its stack once: the stack, or the ConfigError it raised, and the lines it gave `progress`, which
    `stack_or_raise` raises or says where the stack is used."""

    spark: str | None
    iceberg: str | None
    stack: JvmStack | None
    error: ConfigError | None = None
    lines: tuple[str, ...] = ()

    @classmethod
    def make(cls, spark: str | None = None, iceberg: str | None = None, *, java: int | None = None) -> StackChoice:
        lines: list[str] = []
        try:
            stack = select_stack(spark, iceberg, java=java, progress=lines.append)
        except ConfigError as exc:
            return cls(spark, iceberg, None, exc)
        return cls(spark, iceberg, stack, None, tuple(lines))

    def is_for(self, spark: str | None, iceberg: str | None) -> bool:
        return (self.spark, self.iceberg) == (spark, iceberg)

    def stack_or_raise(self, progress: Progress | None = None) -> JvmStack:
        """The stack, after its lines go to `progress` (default: stderr); or its ConfigError."""
        if self.error is not None:
            raise self.error
        assert self.stack is not None  # make() keeps one or the other
        for line in self.lines:
            (progress or progress_to_stderr)(line)
        return self.stack


# What `pip install 'pyspark-catalog-ext[spark]'` runs: pyspark 4.1 and the newest Iceberg for it.
DEFAULT_STACK = JvmStack("4.1", "1.12.0", "2.13")
# The one stack PyPI wheels carry (the PyPI route).
PYPI_STACK = JvmStack("3.5", ICEBERG_VERSION, "2.12")


def _check_on_pypi(stack: JvmStack) -> None:
    if not stack.on_pypi:
        raise ConfigError(f"the PyPI route has no jars for {stack.label}: PyPI's wheels carry only {PYPI_STACK.label} "
                          f"(pyspark 3.5 with iceberg='1.10'); for {stack.label} take the Maven route (jars='offline', the default)")


Progress = Callable[[str], None]


def progress_to_stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
