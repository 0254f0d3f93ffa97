"""The jars Iceberg's ADLS and GCS FileIOs need on Spark, beside the Iceberg runtime.

The Spark runtime jar carries Iceberg's own ADLSFileIO and GCSFileIO classes but not the Azure or
Google SDKs they call; Iceberg publishes those as `iceberg-azure-bundle` and `iceberg-gcp-bundle`.
The pins (resources/store-jars.json) say which bundle goes with which Iceberg release, each
sha256-pinned; the download goes through the same verified path as the stacks' own Maven jars
(`maven_jars.fetch_maven`: ~/.m2 first, then Maven Central or $PYSPARK_CATALOG_EXT_MAVEN_REPO) into the
same cache folder.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir, file_lock, sha256_file
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import JvmStack, Progress, jar_file_name, progress_to_stderr
from pyspark_catalog_ext.spark.jvm_deps.maven_jars import fetch_maven

__all__ = ["STORES", "store_bundle", "store_file_io", "store_jars"]

STORES = ("adls", "gcs")


@lru_cache(maxsize=1)
def _spec() -> dict:
    return json.loads(resources.files("pyspark_catalog_ext").joinpath("resources/store-jars.json").read_text(encoding="utf-8"))


def _store(store: str) -> dict:
    try:
        return _spec()["stores"][store]
    except KeyError:
        raise ConfigError(f"unknown store {store!r}; one of {', '.join(STORES)}") from None


def store_file_io(store: str) -> str:
    """Iceberg's FileIO class for `store` ("adls", "gcs")."""
    return str(_store(store)["file_io"])


def store_bundle(store: str, stack: JvmStack) -> str:
    """`group:artifact:version` of the SDK bundle `store` needs on `stack` (for spark.jars.packages)."""
    bundles = _store(store)["bundle"]
    if stack.iceberg not in bundles:
        raise ConfigError(f"no {store} bundle is pinned for Iceberg {stack.iceberg}; pinned: {', '.join(bundles)}")
    return str(bundles[stack.iceberg])


def store_jars(store: str, stack: JvmStack, cache: Path | None = None, progress: Progress | None = None) -> list[Path]:
    """The verified bundle jar of `store` for `stack`, fetched into the cache on first use."""
    coordinate = store_bundle(store, stack)
    pin = _spec()["jars"][coordinate]
    target = (cache or cache_dir()) / "jars" / "maven"
    target.mkdir(parents=True, exist_ok=True)
    path = target / jar_file_name(coordinate)
    with file_lock(target / ".lock"):
        if not path.is_file() or sha256_file(path) != pin["sha256"]:
            fetch_maven(coordinate, str(pin["sha256"]), int(pin["size"]), path, progress or progress_to_stderr)
    return [path]
