"""The Maven route: a stack's sha256-pinned jars from a Maven repository, or from `~/.m2`.

Maven Central, or $PYSPARK_CATALOG_EXT_MAVEN_REPO for a mirror or company repository; one that does not
answer raises `RepositoryUnreachable` (`jars.resolve_stack_jars` may then take the PyPI route). Also
`maven_coordinate`: the Maven coordinates of any pinned jar, the PyPI route's included.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from pyspark_catalog_ext.cache import file_lock, sha256_file
from pyspark_catalog_ext.errors import JarError
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import JvmStack, Progress, jar_file_name, pinned_maven_jars
from pyspark_catalog_ext.spark.jvm_deps.pypi_jars import WHEEL_SOURCES

__all__ = [
    "RepositoryUnreachable",
    "maven_coordinate",
    "MAVEN_REPO_ENV",
]

# A Maven repository (Central mirror, company Nexus) to download the stacks' jars from.
MAVEN_REPO_ENV = "PYSPARK_CATALOG_EXT_MAVEN_REPO"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
# Seconds to wait for a Maven repository to accept the connection: one that does not answer in that
# time is taken as unreachable (then the PyPI route may serve instead), not waited on for minutes.
CONNECT_TIMEOUT_S = 10


AWS_SDK_GROUP = "software.amazon.awssdk"
# Group of each pinned jar's artifact on Maven Central; every other pinned jar is an AWS SDK module.
_MAVEN_GROUPS = {
    "iceberg-spark-runtime-3.5_2.12": "org.apache.iceberg",
    "reactive-streams": "org.reactivestreams",
}


def resolve_maven(stack: JvmStack, cache_path: Path, progress: Progress) -> list[Path]:
    target = cache_path / "jars" / "maven"
    target.mkdir(parents=True, exist_ok=True)
    pins = pinned_maven_jars()
    out = []
    with file_lock(target / ".lock"):
        for coordinate in (stack.runtime, stack.aws_bundle):
            pin = pins[coordinate]
            path = target / jar_file_name(coordinate)
            if not path.is_file() or sha256_file(path) != pin["sha256"]:
                if path.exists():
                    progress(f"pyspark-catalog-ext: cached {path.name} failed its checksum; fetching it again")
                fetch_maven(coordinate, str(pin["sha256"]), int(str(pin["size"])), path, progress)
            out.append(path)
    return out


class RepositoryUnreachable(JarError):
    """The Maven repository did not answer: no connection, a timeout, or a gateway's 502/503/504."""

    def __init__(self, message: str, repository: str, reason: str) -> None:
        super().__init__(message)
        self.repository = repository
        self.reason = reason


def fetch_maven(coordinate: str, sha256: str, size: int, path: Path, progress: Progress) -> None:
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
        if jar_file_name(coordinate) == jar_name:
            group, artifact, version = coordinate.split(":")
            return group, artifact, version
    if not any(jar_name in source.jars for source in WHEEL_SOURCES):
        raise JarError(f"{jar_name} is not one of the pinned jars; only those have known Maven coordinates")
    artifact, _, version = jar_name[: -len(".jar")].rpartition("-")
    return _MAVEN_GROUPS.get(artifact, AWS_SDK_GROUP), artifact, version
