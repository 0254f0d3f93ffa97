"""Resolve the JVM dependencies (Iceberg Spark runtime + AWS SDK v2) without Maven.

The Spark x Iceberg matrix (`JvmStack`, resources/jvm-stacks.json): the Spark version comes from the
installed pyspark (or `spark=`), the Iceberg version is the user's choice (`iceberg=`; default: the
newest release with a runtime for that Spark line, or on Java 11 the newest that runs there).

Two routes to a stack's jars, both sha256-pinned:
- Maven (every stack): Apache's own artifacts, the Iceberg runtime and `iceberg-aws-bundle`, from
  Maven Central ($PYSPARK_CATALOG_EXT_MAVEN_REPO for a mirror or company repository) or a local
  `~/.m2` copy of the pinned file.
- PyPI (Spark 3.5 + Iceberg 1.10.2 only), for sites that reach only PyPI: the same runtime jar and the
  AWS SDK modules, extracted from two wheels. Taken when asked for (`route="pypi"`), or by
  `resolve_stack_jars` when the Maven repository does not answer and that stack will do.
Both land in a per-user cache dir; resolution is safe to run concurrently (an fcntl lock + atomic
renames) and re-verifies every checksum.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir, file_lock, sha256_file
from pyspark_catalog_ext.errors import ConfigError, JarError

__all__ = [
    "ICEBERG_VERSION",
    "AWS_SDK_VERSION",
    "MAVEN_PACKAGES",
    "WheelSource",
    "WHEEL_SOURCES",
    "resolve_jars",
    "resolve_stack_jars",
    "StackJars",
    "RepositoryUnreachable",
    "maven_coordinate",
    "JvmStack",
    "DEFAULT_STACK",
    "PYPI_STACK",
    "MAVEN_ROUTE",
    "PYPI_ROUTE",
    "supported_stacks",
    "select_stack",
    "min_java_for_stack",
    "installed_spark_version",
    "pinned_maven_jars",
    "MAVEN_REPO_ENV",
]

# The PyPI route's stack: the Iceberg release and AWS SDK the wheels carry.
ICEBERG_VERSION = "1.10.2"
AWS_SDK_VERSION = "2.29.26"

WHEELHOUSE_ENV = "PYSPARK_CATALOG_EXT_WHEELHOUSE"
# A Maven repository (Central mirror, company Nexus) to download the stacks' jars from.
MAVEN_REPO_ENV = "PYSPARK_CATALOG_EXT_MAVEN_REPO"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
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
# Seconds to wait for a Maven repository to accept the connection: one that does not answer in that
# time is taken as unreachable (then the PyPI route may serve instead), not waited on for minutes.
CONNECT_TIMEOUT_S = 10


@lru_cache(maxsize=1)
def _stack_spec() -> dict:
    return json.loads(resources.files("pyspark_catalog_ext").joinpath("resources/jvm-stacks.json").read_text(encoding="utf-8"))


def pinned_maven_jars() -> dict[str, dict[str, object]]:
    """`group:artifact:version` -> {"sha256", "sha1", "size"} of every jar pinned in jvm-stacks.json."""
    return dict(_stack_spec()["jars"])


def _major_minor(version: str, what: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", str(version).strip())
    if not match:
        raise ConfigError(f"{what} version {version!r} is not a version; pass one such as '4.1' or '1.12.0'")
    return int(match.group(1)), int(match.group(2))


def min_java_for_stack(spark: str, iceberg: str | None = None) -> int:
    """The oldest Java that Spark `spark` ("4.1", "3.5.9") with Iceberg `iceberg` ("1.12.0"; None:
    Spark's own need and the package's floor) and the shim run on: 17 for Spark 4 or Iceberg >= 1.11."""
    needed = JAVA17 if _major_minor(spark, "Spark")[0] >= 4 else MIN_JAVA
    if iceberg is not None and _major_minor(iceberg, "Iceberg") >= (1, 11):
        needed = JAVA17
    return needed


def max_java_for_stack(spark: str) -> int | None:
    """The newest Java that Spark `spark` ("4.1") starts on with the package's jars, or None when no
    limit is known (a Spark line after 4.1 may ship a Hadoop that no longer calls Subject.getSubject)."""
    return NEWEST_JAVA_WITH_HADOOP_SUBJECT if _major_minor(spark, "Spark") <= (4, 1) else None


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
        return [_file_name(c) for c in (self.runtime, self.aws_bundle)]


def _file_name(coordinate: str) -> str:
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
                (progress or _stderr)(
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


# What `pip install 'pyspark-catalog-ext[spark]'` runs: pyspark 4.1 and the newest Iceberg for it.
DEFAULT_STACK = JvmStack("4.1", "1.12.0", "2.13")
# The one stack PyPI wheels carry (the PyPI route).
PYPI_STACK = JvmStack("3.5", ICEBERG_VERSION, "2.12")
MAVEN_PACKAGES = DEFAULT_STACK.maven_packages


def _check_on_pypi(stack: JvmStack) -> None:
    if not stack.on_pypi:
        raise ConfigError(f"the PyPI route has no jars for {stack.label}: PyPI's wheels carry only {PYPI_STACK.label} "
                          f"(pyspark 3.5 with iceberg='1.10'); for {stack.label} take the Maven route (jars='offline', the default)")


AWS_SDK_GROUP = "software.amazon.awssdk"
# Group of each pinned jar's artifact on Maven Central; every other pinned jar is an AWS SDK module.
_MAVEN_GROUPS = {
    "iceberg-spark-runtime-3.5_2.12": "org.apache.iceberg",
    "reactive-streams": "org.reactivestreams",
}


@dataclass(frozen=True)
class WheelSource:
    """A PyPI wheel that carries some of the jars we need."""

    dist: str  # distribution name as on PyPI
    version: str
    member_dir: str  # folder inside the wheel holding the jars
    jars: Mapping[str, str] = field(repr=False)  # jar file name -> pinned sha256
    approx_mb: int = 0  # shown before the first download so users know what's coming

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """Wheel file names use the normalized distribution name (PEP 427)."""
        return f"{re.sub(r'[-_.]+', '_', self.dist).lower()}-{self.version}-"


_AWS_PINS = {
    "s3-2.29.26.jar": "49d2e0f6f3c5d9ebfbdf490b84883255158de1a3ccb81e11ef39e39e77026c7b",
    "sdk-core-2.29.26.jar": "21ffd779415d6e28b67de2a29773997bb4e67cd5e3a8b77c7e03dd2564a6cd1e",
    "aws-core-2.29.26.jar": "f211a8bdbac010c16be6d3aa2d104a6f5bcff8315eab3035ce9f1149347146fa",
    "auth-2.29.26.jar": "3597fb8e42b18c5706fbeea38331022c4c57994e8cee30ad69345d0af7576408",
    "regions-2.29.26.jar": "f52ec0d58ab62dd113c6196ae22ae0d1d89eeb400a45e4039f0e5a304362a8a0",
    "utils-2.29.26.jar": "bcab120d0d2129faa2d48cecf6034ed6a1f27421e407348f973ca53b0d44ccae",
    "profiles-2.29.26.jar": "8033fd5847bef28643913e0079bf479040d20b825ac1fe2ef5e61d05cc68995d",
    "protocol-core-2.29.26.jar": "ac5d2d4fb17d7dea29751533999d65a4746eeadcfa1c062836314bb02ad33793",
    "aws-xml-protocol-2.29.26.jar": "52318cd5ca191e4b78a82cdf60b1c6a1e4a83b2a01317062156f63b45b272f4f",
    "aws-query-protocol-2.29.26.jar": "fdfc7eff6f58ab69c3bd83acf8f932ecdd7e52acde3ac194fcf5de8fb6e9833e",
    "http-client-spi-2.29.26.jar": "af9d60aceaf2136738d8df61c95b89d088f698316de17a1442230983fff754f6",
    "metrics-spi-2.29.26.jar": "0333df653c6ef5673553931190bab78dc14a102179eb7c390d15ebf5a58e829b",
    "json-utils-2.29.26.jar": "f7838c0a4e6fd38a0e1781606da883752ce8b543ebd40b69dec2ff69db86da45",
    "third-party-jackson-core-2.29.26.jar": "82effe7379a181e6d8bb94c75becb9401eedfdef7bc1698dc3c732892fab2eef",
    "endpoints-spi-2.29.26.jar": "3a53cb14905a2a05213a43e74bda37adbd169cfc1d03386fb64143fc2be5782e",
    "identity-spi-2.29.26.jar": "a0fcd5a76ae8af684f31328b75e8e77dc55fe322b4409022cc5fb328776ca728",
    "http-auth-spi-2.29.26.jar": "4c72064a6c2b555ef9e62da7c35f35e42cd2cbf0e4d87d2d8a91cc8114d4efbc",
    "http-auth-2.29.26.jar": "30af1028623034436c8ac473f2d5ac96f43996d4dc1b27c0a2324ced523b339d",
    "http-auth-aws-2.29.26.jar": "5d8ec7c4a2d407740c4793d2cbc76682e6a9de5f123186d5b068bca5e01cee68",
    "checksums-spi-2.29.26.jar": "d2b9224b0f76a4e4506a31becebb8db904f2a7b78975fbb3911e8cf912aef700",
    "checksums-2.29.26.jar": "753612b562bd3108848bec04801aa80ab054531ef1d96545e005370c670cb7fc",
    "retries-spi-2.29.26.jar": "5c5161c18a1886e4f234a70b410ce2b60cfd237c280fbbcff17889f2323aad9d",
    "retries-2.29.26.jar": "91ba6ce9f14169d276908f29cf66b1dfee96c51afd562e0a899494e1cf9d211e",
    "apache-client-2.29.26.jar": "13d58ff12f66df140cfcad17781f1af9d882a1bb839247bab18a974c89de0949",
    "kms-2.29.26.jar": "6898d489d0679374e55c25271367229b096134609950b2ca55f1993257f5b630",
    "sts-2.29.26.jar": "af6e6d22d29b752119176bf3d06c67a331ff9fe0a83aec34b721e4654925cffc",
    "reactive-streams-1.0.4.jar": "f75ca597789b3dac58f61857b9ac2e1034a68fa672db35055a8fb4509e325f28",
}

# Order matters only for readability of spark.jars: the runtime first, then the SDK.
WHEEL_SOURCES: tuple[WheelSource, ...] = (
    WheelSource(
        dist="snowpark-connect-deps-iceberg",
        # 1.0.2, not 1.0.3: 1.0.3's runtime jar lacks the shaded Jackson/HttpClient5 classes.
        version="1.0.2",
        member_dir="snowpark_connect_deps_iceberg/jars/",
        jars={
            "iceberg-spark-runtime-3.5_2.12-1.10.2.jar": "c562d482dcd16b666e808b755469fbc4b2604284b41622c9d87e2c02b7cc6c5f",
        },
        approx_mb=85,
    ),
    WheelSource(
        dist="bodo-iceberg-connector",
        version="2026.10",
        member_dir="bodo_iceberg_connector/jars/libs/",
        jars=_AWS_PINS,
        approx_mb=139,
    ),
)

Progress = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _jar_dir(cache: Path) -> Path:
    return cache / "jars" / f"iceberg-{ICEBERG_VERSION}-awssdk-{AWS_SDK_VERSION}"


def _bad_jars(target: Path, source: WheelSource) -> list[str]:
    """Jars of `source` that are missing from `target` or fail their pinned checksum."""
    return [
        name
        for name, pin in source.jars.items()
        if not (target / name).is_file() or sha256_file(target / name) != pin
    ]


def _find_in_wheelhouse(source: WheelSource, wheelhouse: Path) -> Path:
    matches = sorted(p for p in wheelhouse.glob(source.wheel_prefix + "*.whl"))
    if not matches:
        raise JarError(
            f"wheel {source.requirement} not found in wheelhouse {wheelhouse}; put the wheel there "
            f"(pip download --no-deps {source.requirement} -d {wheelhouse}) or unset {WHEELHOUSE_ENV} to download from PyPI"
        )
    return matches[0]


def _download_wheel(source: WheelSource, dest: Path, progress: Progress) -> Path:
    """`pip download` honours the user's pip config (index-url, proxy, certificates)."""
    progress(f"pyspark-catalog-ext: downloading {source.requirement} (~{source.approx_mb} MB) from the package index, once")
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "-d", str(dest), source.requirement,
    ]
    # pip's own output (and progress bar) goes to our stderr so stdout stays clean for `spark-conf`.
    proc = subprocess.run(cmd, stdout=2, stderr=2, check=False)
    if proc.returncode != 0:
        raise JarError(
            f"could not download {source.requirement} with pip (exit {proc.returncode}); check network/pip config "
            f"(pip output above), or set {WHEELHOUSE_ENV} to a folder holding the wheel"
        )
    return _find_in_wheelhouse(source, dest)


def _extract(source: WheelSource, wheel: Path, target: Path, names: list[str]) -> list[str]:
    """Extract `names` from the wheel into `target` atomically; returns names whose checksum failed."""
    failed = []
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = set(zf.namelist())
            for name in names:
                member = source.member_dir + name
                if member not in members:
                    raise JarError(f"{wheel.name} has no {member}; the wheel is not the pinned {source.requirement}, remove it from the wheelhouse")
                fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{name}.", suffix=".part")
                digest = hashlib.sha256()
                try:
                    with os.fdopen(fd, "wb") as out, zf.open(member) as src:
                        for block in iter(lambda: src.read(1 << 20), b""):
                            digest.update(block)
                            out.write(block)
                    if digest.hexdigest() != source.jars[name]:
                        failed.append(name)
                        os.unlink(tmp)
                    else:
                        os.replace(tmp, target / name)  # atomic: readers never see half a jar
                except BaseException:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
                    raise
    except zipfile.BadZipFile:
        raise JarError(f"{wheel.name} is not a valid wheel (corrupt download?); delete it and retry") from None
    return failed


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
    progress = progress or _stderr
    cache_path = Path(cache) if cache is not None else cache_dir()
    if route == MAVEN_ROUTE:
        return _resolve_maven(stack or DEFAULT_STACK, cache_path, progress)
    if route != PYPI_ROUTE:
        raise ConfigError(f"route {route!r} is not a jar route; use {MAVEN_ROUTE!r} (Maven Central) or {PYPI_ROUTE!r} (PyPI wheels)")
    _check_on_pypi(stack or PYPI_STACK)
    return _resolve_pypi(cache_path, wheelhouse, progress)


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
    progress = progress or _stderr
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


def _resolve_pypi(cache_path: Path, wheelhouse: Path | str | None, progress: Progress) -> list[Path]:
    wheelhouse = wheelhouse if wheelhouse is not None else os.environ.get(WHEELHOUSE_ENV) or None
    target = _jar_dir(cache_path)
    target.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / ".lock"):
        for source in WHEEL_SOURCES:
            bad = _bad_jars(target, source)
            if not bad:
                continue
            existing = [n for n in bad if (target / n).exists()]
            if existing:
                progress(f"pyspark-catalog-ext: {len(existing)} cached jar(s) failed their checksum ({existing[0]}...); fetching them again")
            with tempfile.TemporaryDirectory(dir=cache_path, prefix=".dl-") as tmp:
                if wheelhouse:
                    wheel = _find_in_wheelhouse(source, Path(wheelhouse))
                else:
                    wheel = _download_wheel(source, Path(tmp), progress)
                progress(f"pyspark-catalog-ext: extracting {len(bad)} jar(s) from {wheel.name} ({wheel.stat().st_size / 1e6:.0f} MB)")
                failed = _extract(source, wheel, target, bad)
            if failed:
                raise JarError(
                    f"{failed[0]} from {source.requirement} does not match its pinned sha256 even after a fresh "
                    f"download; the index served a different file: check your pip index/mirror"
                )
    return [target / name for source in WHEEL_SOURCES for name in source.jars]


def _resolve_maven(stack: JvmStack, cache_path: Path, progress: Progress) -> list[Path]:
    target = cache_path / "jars" / "maven"
    target.mkdir(parents=True, exist_ok=True)
    pins = pinned_maven_jars()
    out = []
    with file_lock(target / ".lock"):
        for coordinate in (stack.runtime, stack.aws_bundle):
            pin = pins[coordinate]
            path = target / _file_name(coordinate)
            if not path.is_file() or sha256_file(path) != pin["sha256"]:
                if path.exists():
                    progress(f"pyspark-catalog-ext: cached {path.name} failed its checksum; fetching it again")
                _fetch_maven(coordinate, str(pin["sha256"]), int(str(pin["size"])), path, progress)
            out.append(path)
    return out


class RepositoryUnreachable(JarError):
    """The Maven repository did not answer: no connection, a timeout, or a gateway's 502/503/504."""

    def __init__(self, message: str, repository: str, reason: str) -> None:
        super().__init__(message)
        self.repository = repository
        self.reason = reason


def _fetch_maven(coordinate: str, sha256: str, size: int, path: Path, progress: Progress) -> None:
    """Copy the jar from ~/.m2 when it holds the pinned file, else download it (twice at most: a
    second checksum mismatch means the repository serves another file)."""
    group, artifact, version = coordinate.split(":")
    rel = "/".join([*group.split("."), artifact, version, path.name])
    local = Path(os.path.expanduser("~")) / ".m2" / "repository" / rel
    if local.is_file() and sha256_file(local) == sha256:
        def copy(out) -> None:
            with local.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)

        if _copy_verified(copy, sha256, path):
            return
    import requests

    base = os.environ.get(MAVEN_REPO_ENV) or MAVEN_CENTRAL
    where = "Maven Central" if base == MAVEN_CENTRAL else base
    url = f"{base.rstrip('/')}/{rel}"
    progress(f"pyspark-catalog-ext: downloading {coordinate} ({size / 1e6:.0f} MB) from {where}, once")
    for _attempt in range(2):  # one re-download on a bad checksum, as the wheel path does

        def download(out, url: str = url) -> None:
            try:
                with requests.get(url, stream=True, timeout=(CONNECT_TIMEOUT_S, 60)) as resp:
                    resp.raise_for_status()
                    for block in resp.iter_content(1 << 20):
                        out.write(block)
            except requests.RequestException as exc:
                status = exc.response.status_code if exc.response is not None else None
                reason = f"HTTP {status}" if status is not None else type(exc).__name__
                message = (f"could not download {coordinate} from {where} ({reason}); check the network or proxy, "
                           f"or set {MAVEN_REPO_ENV} to a reachable Maven repository")
                if status is None or status in (502, 503, 504):
                    raise RepositoryUnreachable(message, where, reason) from None
                raise JarError(message) from None

        if _copy_verified(download, sha256, path):
            return
    raise JarError(f"{path.name} from {where} does not match its pinned sha256 even after a fresh download; the repository serves a different file")


def _copy_verified(write: Callable, sha256: str, path: Path) -> bool:
    """Write through `write(file)` into a temp file beside `path`; rename it in place (atomic, readers
    never see half a jar) only when its sha256 is the pinned one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        if sha256_file(Path(tmp)) != sha256:
            os.unlink(tmp)
            return False
        os.replace(tmp, path)
        return True
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def maven_coordinate(jar_name: str) -> tuple[str, str, str]:
    """(group, artifact, version) on Maven Central of a pinned jar, from its `<artifact>-<version>.jar` name."""
    for coordinate in pinned_maven_jars():
        if _file_name(coordinate) == jar_name:
            group, artifact, version = coordinate.split(":")
            return group, artifact, version
    if not any(jar_name in source.jars for source in WHEEL_SOURCES):
        raise JarError(f"{jar_name} is not one of the pinned jars; only those have known Maven coordinates")
    artifact, _, version = jar_name[: -len(".jar")].rpartition("-")
    return _MAVEN_GROUPS.get(artifact, AWS_SDK_GROUP), artifact, version
