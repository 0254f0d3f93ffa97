"""The per-user cache directory and the helpers that share it safely between processes (an
advisory file lock, checksums), and files readable by this user only. Used by the jar resolver, the
shim build, the embedded lakehouse and Trino's configuration."""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_dir", "sha256_file", "file_lock"]

CACHE_ENV = "PYSPARK_CATALOG_EXT_CACHE"


def cache_dir(create: bool = True) -> Path:
    """The per-user cache dir: $PYSPARK_CATALOG_EXT_CACHE, else $XDG_CACHE_HOME/pyspark-catalog-ext,
    else ~/.cache/pyspark-catalog-ext."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        path = Path(explicit).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = Path(base) / "pyspark-catalog-ext"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock; a second resolver waits here instead of racing the first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, created readable and writable by this user only (it may hold keys)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
