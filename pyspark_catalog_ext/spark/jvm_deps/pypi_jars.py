"""The PyPI route: Spark 3.5 + Iceberg 1.10.2's jars, taken out of two sha256-pinned PyPI wheels.

For sites that reach only PyPI: the same runtime jar and the AWS SDK modules, from a folder of wheels
($PYSPARK_CATALOG_EXT_WHEELHOUSE) or `pip download`, into the per-user cache (an fcntl lock + atomic
renames); every call re-verifies every checksum.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark_catalog_ext.cache import file_lock, sha256_file
from pyspark_catalog_ext.errors import JarError

if TYPE_CHECKING:
    from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import Progress

__all__ = [
    "ICEBERG_VERSION",
    "AWS_SDK_VERSION",
    "WheelSource",
    "WHEEL_SOURCES",
]

# The PyPI route's stack: the Iceberg release and AWS SDK the wheels carry.
ICEBERG_VERSION = "1.10.2"
AWS_SDK_VERSION = "2.29.26"

WHEELHOUSE_ENV = "PYSPARK_CATALOG_EXT_WHEELHOUSE"


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


def resolve_pypi(cache_path: Path, wheelhouse: Path | str | None, progress: Progress) -> list[Path]:
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
