"""PyIceberg applies the credential rules of the spec both runtimes share
(resources/credential-rules.json; the shim's CredentialRulesTest holds the JVM to the same file),
and what the Python code says of the JVM names classes the shim has."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import pyspark_catalog_ext
from pyspark_catalog_ext.refresh import rejection, rules
from pyspark_catalog_ext.refresh.strategies import StrategyChain
from tests.helpers import ROOT

SPEC = json.loads(rules.SPEC_PATH.read_text())
JAVA = ROOT / "jvm-shim" / "src" / "main" / "java"


def test_the_hard_margin_is_a_quarter_of_the_lifetime_between_one_and_ten_seconds() -> None:
    assert rules.hard_margin_s(0, -1) == 10.0  # expiry before the fetch: an unknown lifetime
    assert rules.hard_margin_s(0, 0.8) == 1.0
    assert rules.hard_margin_s(0, 3) == 1.0
    assert rules.hard_margin_s(0, 10) == 2.5
    assert rules.hard_margin_s(0, 900) == 10.0  # the same values CredentialRulesTest checks in the JVM


def test_the_cache_window_ends_half_way_to_expiry_within_the_backoffs_and_the_hard_margin() -> None:
    # the same values CredentialCacheTest.testTheCacheWindowRule checks in the JVM (seconds here, ms there)
    t0, life = 1000.0, 20.0
    wait_at = t0 + life - rules.hard_margin_s(t0, t0 + life)
    assert rules.cache_window_end_s(t0, t0 + life, wait_at, t0 + 5, 1, 30) == pytest.approx(t0 + 10.4)
    assert rules.cache_window_end_s(t0, t0 + 100, t0 + 90, t0 + 60, 1, 30) == pytest.approx(t0 + 82)
    assert rules.cache_window_end_s(t0, t0 + life, wait_at, t0 + 14, 1, 30) == wait_at
    assert rules.cache_window_end_s(t0, t0 + life, wait_at, t0 + 19, 1, 30) == pytest.approx(t0 + 19.5)
    assert rules.cache_window_end_s(t0, float("inf"), float("inf"), t0, 1, 30) == t0 + 30


def test_the_rules_are_the_specs() -> None:
    assert rules.EXPIRY_CODES == frozenset(SPEC["s3-expiry"]["codes"]) == rejection.EXPIRY_CODES
    assert set(rules.EXPIRY_STATUSES) == set(SPEC["s3-expiry"]["statuses"])
    assert StrategyChain.FORGET_MISSING_AFTER_S * 1000 == SPEC["missing-endpoint"]["forget-after-ms"]
    assert rules.SENDS_PER_CALL == SPEC["sends-per-call"]["max"] == 4


def test_what_python_says_of_the_jvm_names_its_classes() -> None:
    """`X` or `X.member` cited as the JVM's, the shim's or Java's exists in the shim's sources."""
    sources = {p.stem: p.read_text() for p in JAVA.rglob("*.java")}
    package = Path(pyspark_catalog_ext.__file__).parent
    cited = []
    for path in package.rglob("*.py"):
        for m in re.finditer(r"(?:JVM|shim|Java)'s\s+`([A-Z]\w*)(?:\.(\w+))?", path.read_text()):
            cited.append((path.name, m.group(1), m.group(2)))
    assert len(cited) >= 3, cited
    missing = [c for c in cited if c[1] not in sources or (c[2] and not re.search(rf"\b{c[2]}\b", sources[c[1]]))]
    assert missing == []
