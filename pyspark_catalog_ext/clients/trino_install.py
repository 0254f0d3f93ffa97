"""Trino's server and the Java it needs, found or fetched once.

The server is `io.trino:trino-server:476` from Maven Central (a tar.gz of about 820 MB; Central
serves no newer Trino here). It is downloaded once into the user cache (`<cache>/trino/`), with a
progress bar on a terminal, resumed from its partial file after an interrupted download, checked
against the sha256 pinned below before it is unpacked, and unpacked into a temp dir that is then
renamed into place, so a reader never sees half a server. The tar.gz is removed once unpacked.

Trino 476 runs only on Java 24 or newer; `find_trino_java` looks for such a JDK.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir, file_lock, sha256_file
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.progress import Progress

__all__ = ["TRINO_VERSION", "TrinoUnavailable", "trino_home", "find_trino_java", "JAVA_HOME_ENV", "MIN_TRINO_JAVA"]

TRINO_VERSION = "476"
# Central serves a .sha1 (c9b38be4017ebd2f7095455aaac772fb40247ebe) and no .sha256 for this file:
# the sha256 below was taken from the download that matched Central's sha1.
TRINO_SHA256 = "cfd5accde17e8ebd251eeeb78aed1f490e77bb3a164d95a0f454bf8a7c1cbd3f"
TRINO_SIZE = 821_045_832
MIN_TRINO_JAVA = 24
JAVA_HOME_ENV = "PYSPARK_CATALOG_EXT_TRINO_JAVA_HOME"
_COORDINATE = f"io/trino/trino-server/{TRINO_VERSION}/trino-server-{TRINO_VERSION}.tar.gz"
_COMPLETE = ".complete"  # written last into an unpacked server: its presence means the tree is whole
# Where JDKs are usually installed (Debian/Ubuntu, Fedora/RHEL, Docker images, SDKMAN, macOS)
_JDK_DIRS = ("/usr/lib/jvm", "/usr/lib64/jvm", "/usr/java", "/opt/java", "/opt", "~/.sdkman/candidates/java",
             "~/.jdks", "/Library/Java/JavaVirtualMachines")
JAVA_HINT = (f"Trino {TRINO_VERSION} needs Java {MIN_TRINO_JAVA} or newer: install a JDK {MIN_TRINO_JAVA}+ "
             f"(e.g. Temurin 25: apt-get install temurin-25-jdk) and set {JAVA_HOME_ENV} or JAVA_HOME to it")


class TrinoUnavailable(ConfigError):
    """Trino cannot run here: no Java 24+, or its server could not be downloaded."""


def _java_major(home: Path) -> int | None:
    """The major version a JDK's `release` file declares, or None when `home` is no JDK."""
    release = home / "release"
    if not (home / "bin" / "java").is_file() or not release.is_file():
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)', release.read_text(errors="replace"), re.M)
    return int(match.group(1)) if match else None


def find_trino_java(minimum: int = MIN_TRINO_JAVA) -> Path:
    """The home of a JDK >= `minimum`: $PYSPARK_CATALOG_EXT_TRINO_JAVA_HOME, $JAVA_HOME, then the
    newest one in the usual install dirs. Spark keeps its own Java; this one runs Trino only."""
    given = [os.environ.get(JAVA_HOME_ENV), os.environ.get("JAVA_HOME")]
    found: list[Path] = []
    for base in _JDK_DIRS:
        root = Path(base).expanduser()
        if root.is_dir():
            for child in root.iterdir():
                found += [child, child / "Contents" / "Home"]  # the second: macOS bundles
    best: tuple[int, Path] | None = None
    for candidate in [Path(c) for c in given if c] + sorted(found):
        home = candidate.resolve()
        major = _java_major(home)
        if major is not None and major >= minimum and (best is None or major > best[0]):
            best = (major, home)
    if best is None:
        raise TrinoUnavailable(f"no Java {minimum}+ found (looked at ${JAVA_HOME_ENV}, $JAVA_HOME, {', '.join(_JDK_DIRS)}); {JAVA_HINT}")
    return best[1]


def _trino_dir() -> Path:
    return cache_dir() / "trino"


def trino_home(*, progress: Progress | None = None) -> Path:
    """The unpacked Trino server (its `bin/launcher`, `lib/`, `plugin/`), downloading and
    unpacking it on first use. Raises TrinoUnavailable in one line when it cannot be had."""
    root = _trino_dir()
    home = root / f"trino-server-{TRINO_VERSION}"
    if (home / _COMPLETE).is_file():
        return home
    with file_lock(root / ".lock"):  # a second process waits for the first download instead of racing it
        if (home / _COMPLETE).is_file():
            return home
        tarball = root / f"trino-server-{TRINO_VERSION}.tar.gz"
        if not (tarball.is_file() and sha256_file(tarball) == TRINO_SHA256):
            _download(tarball, progress or Progress(), _server_tarball())
        _unpack(tarball, home)
        tarball.unlink()  # 820 MB: the unpacked tree is what runs
    return home


@dataclass(frozen=True)
class PinnedFile:
    """A file to fetch once: where from, and the size and sha256 it must have."""

    url: str
    size: int
    sha256: str
    label: str  # for the messages and the progress bar


def _server_tarball() -> PinnedFile:
    from pyspark_catalog_ext.spark.jvm_deps.maven_jars import MAVEN_CENTRAL, MAVEN_REPO_ENV

    base = os.environ.get(MAVEN_REPO_ENV) or MAVEN_CENTRAL
    return PinnedFile(f"{base.rstrip('/')}/{_COORDINATE}", TRINO_SIZE, TRINO_SHA256, f"Trino {TRINO_VERSION}")


def _download(tarball: Path, progress: Progress, pinned: PinnedFile) -> None:
    """Download into `<tarball>.part`, resuming what an earlier run left there (an HTTP Range
    request); the file is renamed to `tarball` only when its sha256 is the pinned one. An interrupted
    download raises at once (the next run resumes it) rather than retrying here: a user who stops a
    slow 820 MB download loses nothing."""
    import requests

    from pyspark_catalog_ext.spark.jvm_deps.maven_jars import CONNECT_TIMEOUT_S, MAVEN_REPO_ENV

    url = pinned.url
    part = tarball.with_name(tarball.name + ".part")
    mb = 1 << 20
    for attempt in range(2):  # a partial file that does not verify is downloaded afresh, once
        have = part.stat().st_size if part.is_file() else 0
        if have > pinned.size:
            part.unlink()
            have = 0
        if have < pinned.size:
            print(f"pyspark-catalog-ext: downloading {pinned.label} ({pinned.size / 1e6:.0f} MB) from {url}, once"
                  + (f", resuming at {have / 1e6:.0f} MB" if have else ""), flush=True, file=sys.stderr)
            headers = {"Range": f"bytes={have}-"} if have else {}
            try:
                with requests.get(url, stream=True, headers=headers, timeout=(CONNECT_TIMEOUT_S, 60)) as resp:
                    resp.raise_for_status()
                    if have and resp.status_code != 206:  # the server ignored the range: start over
                        have = 0
                    with progress, open(part, "ab" if have else "wb") as out:
                        advance = progress.task(f"{pinned.label} (MB)", total=max(pinned.size // mb, 1))
                        advance(have // mb)
                        for block in resp.iter_content(mb):
                            out.write(block)
                            advance(len(block) // mb)
            except (requests.RequestException, OSError) as exc:
                status = getattr(getattr(exc, "response", None), "status_code", None)
                reason = f"HTTP {status}" if status is not None else type(exc).__name__
                raise TrinoUnavailable(f"could not download {pinned.label} from {url} ({reason}); run again to resume, check "
                                       f"the network or proxy, or set {MAVEN_REPO_ENV} to a Maven repository that serves "
                                       f"{_COORDINATE}") from None
        if sha256_file(part) == pinned.sha256:
            os.replace(part, tarball)
            return
        part.unlink()
        if attempt:
            raise TrinoUnavailable(f"the {pinned.label} download from {url} does not match its pinned sha256 even "
                                   "after a fresh download; the repository serves a different file")


def _unpack(tarball: Path, home: Path) -> None:
    """Unpack into a temp dir beside `home`, then rename it into place (atomic)."""
    tmp = Path(tempfile.mkdtemp(dir=home.parent, prefix=f".{home.name}."))
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            tar.extractall(tmp, filter="data")  # no absolute paths, no links out of the tree
        top = tmp / f"trino-server-{TRINO_VERSION}"
        if not (top / "bin" / "launcher").is_file():
            raise TrinoUnavailable(f"{tarball} holds no trino-server-{TRINO_VERSION}/bin/launcher; delete it and retry")
        (top / _COMPLETE).write_text(TRINO_SHA256 + "\n")
        if home.exists():  # a tree without its marker: an unpack that was interrupted
            shutil.rmtree(home)
        os.replace(top, home)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
