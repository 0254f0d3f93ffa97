"""The catalog-ext.* knob spec is the one source both runtimes read: every knob either runtime
uses is in it, and Python parses each the way the spec says, with the JVM's words (the JVM side
is jvm-shim/src/test/java/.../KnobsTest.java, over the same spec)."""

from __future__ import annotations

import re

import pytest

from pyspark_catalog_ext import knobs
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.pyiceberg_ext import CommitPolicy, refresh_policy
from pyspark_catalog_ext.pyiceberg_ext.fileio import write_bounds
from pyspark_catalog_ext.refresh import RefreshPolicy
from tests.helpers import ROOT

GROUPS = ("commit", "refresh", "events", "pyiceberg")


def _names_in_sources() -> set[str]:
    """Every catalog-ext.<group>.<name> either runtime spells out (whole literals or prefix + name)."""
    found: set[str] = set()
    literal = re.compile(rf"catalog-ext\.(?:{'|'.join(GROUPS)})\.[a-z][a-z-]*[a-z]")
    for path in [*ROOT.joinpath("pyspark_catalog_ext").rglob("*.py"), *ROOT.joinpath("jvm-shim/src/main/java").rglob("*.java")]:
        text = path.read_text()
        found |= set(literal.findall(text))
        found |= {f"catalog-ext.commit.{m}" for m in re.findall(r'PROP_PREFIX \+ "([a-z-]+)"', text)}
        found |= {f"catalog-ext.{m}" for m in re.findall(rf'PREFIX \+ "((?:{"|".join(GROUPS)})\.[a-z-]+)"', text)}
    return found


def test_every_knob_either_runtime_reads_is_in_the_spec():
    used = _names_in_sources()
    assert {"catalog-ext.commit.base-delay-ms", "catalog-ext.refresh.min-ahead-ms", "catalog-ext.events.jsonl-path"} <= used
    assert used <= set(knobs.spec()), f"not in resources/catalog-ext-knobs.json: {sorted(used - set(knobs.spec()))}"


def test_the_spec_is_well_formed():
    for name, k in knobs.spec().items():
        assert name.startswith("catalog-ext.") and k["meaning"] and set(k["runtimes"]) <= {"jvm", "pyiceberg"}, name
        if k["type"] == "int":
            assert k["min"] <= k["default"] <= k["max"], name
        elif k["type"] == "fraction":
            assert k["min"] <= k["default"] < k["max"], name
        elif k["type"] == "choice":
            assert k["default"] in k["choices"], name
        elif k["type"] == "bool":
            assert isinstance(k["default"], bool), name
        else:
            assert k["type"] == "string", name


def _bad_and_good(k: dict) -> tuple[list[str], list[str]]:
    if k["type"] == "int":
        return [str(k["min"] - 1), str(k["max"] + 1), "fast", "1.5"], [str(k["min"]), str(k["max"]), str(k["default"])]
    if k["type"] == "fraction":
        return [str(k["min"] - 0.1), str(k["max"]), "lots"], [str(k["min"]), str(k["default"])]
    return ["sometimes"], [c.upper() for c in k["choices"]]


PYTHON_KNOBS = [k for k in knobs.spec().values() if "pyiceberg" in k["runtimes"] and k["type"] in ("int", "fraction", "choice")]


@pytest.mark.parametrize("k", PYTHON_KNOBS, ids=lambda k: k["name"])
def test_python_reads_each_knob_as_the_spec_says(k):
    """Through the public entry points (CommitPolicy, refresh_policy), not only the helpers."""
    parse = CommitPolicy.from_properties if ".commit." in k["name"] else write_bounds if ".pyiceberg." in k["name"] \
        else refresh_policy
    bad, good = _bad_and_good(k)
    if k["name"].endswith("initial-backoff-ms"):
        good = [g for g in good if int(g) <= 60000]  # the policy also needs initial <= max-backoff-ms (60 s)
    for raw in bad:
        with pytest.raises(ConfigError) as info:
            parse({k["name"]: raw})
        expected = knobs.bad_value_message(k, raw)
        assert str(info.value) == expected
        if k["type"] == "int":  # the JVM's words (KnobsTest.java checks the same literal format)
            assert expected == f"Bad catalog property {k['name']}='{raw}': use a whole number from {k['min']} to {k['max']}"
    for raw in good:
        if k["name"].endswith("max-backoff-ms") and int(raw) < 1000:
            continue  # below the default initial backoff: the policy's own cross-check refuses it
        parse({k["name"]: raw})


def test_python_defaults_are_the_spec_defaults():
    commit, refresh = CommitPolicy(), RefreshPolicy()
    spec = knobs.spec()
    assert commit.max_attempts == spec["catalog-ext.commit.max-attempts"]["default"]
    assert commit.base_delay_s * 1000 == spec["catalog-ext.commit.base-delay-ms"]["default"]
    assert commit.idempotency == spec["catalog-ext.commit.idempotency"]["default"]
    assert refresh.min_ahead_s * 1000 == spec["catalog-ext.refresh.min-ahead-ms"]["default"]
    assert refresh.lifetime_fraction == spec["catalog-ext.refresh.lifetime-fraction"]["default"]
    assert refresh.catalog_properties()["catalog-ext.refresh.timeout-ms"] == str(spec["catalog-ext.refresh.timeout-ms"]["default"])


def test_the_shim_jar_carries_the_same_spec():
    import zipfile

    from pyspark_catalog_ext.spark.jvm_deps import shim_build

    with zipfile.ZipFile(shim_build.shim_jar()) as jar:
        assert jar.read("io/catalogext/shim/catalog-ext-knobs.json") == knobs.SPEC_PATH.read_bytes()


def test_the_readme_knob_table_names_every_knob_with_its_default():
    readme = ROOT.joinpath("README.md").read_text()
    section = readme[readme.index("### Knobs"):]
    section = section[:section.index("\n## ")]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    for name, k in knobs.spec().items():
        short = name.removeprefix("catalog-ext.")
        group, _, leaf = short.rpartition(".")
        row = next((r for r in rows if f"`{short}`" in r or (group and f"{group}." in r and f".{leaf}`" in r) or f"`{short}," in r), None)
        assert row is not None, f"README knob table lacks {name}"
        default = k["default"]
        if default is not None and k["type"] != "string":
            shown = {True: "true", False: "false"}.get(default, str(default)) if isinstance(default, bool) else str(default)
            assert shown in row or (k["unit"] == "bytes" and "MiB" in row), f"{name}: default {shown} not in {row!r}"


def test_python_spells_the_refresh_knob_names_in_one_place():
    """RefreshPolicy's fields map to the spec's catalog-ext.refresh.* knobs in refresh/policy.py;
    no other Python module spells a refresh knob's name."""
    from dataclasses import fields

    from pyspark_catalog_ext.refresh.policy import KNOBS

    assert set(KNOBS) == {f.name for f in fields(RefreshPolicy)}
    assert set(KNOBS.values()) == {n for n, k in knobs.spec().items()
                                   if n.startswith("catalog-ext.refresh.") and k["type"] in ("int", "fraction")}
    code = re.compile(r'["\']catalog-ext\.refresh\.[a-z-]+["\']')
    spelled = [p.relative_to(ROOT).as_posix() for p in ROOT.joinpath("pyspark_catalog_ext").rglob("*.py")
               if code.search(p.read_text())]
    assert spelled == [], f"refresh knob names spelled outside refresh/policy.py's KNOBS: {spelled}"
    java = [p.name for p in ROOT.joinpath("jvm-shim/src/main/java").rglob("*.java") if code.search(p.read_text())]
    assert java == [], f"refresh knob names spelled outside ShimKeys (PREFIX + ...): {java}"
    assert RefreshPolicy.from_properties(RefreshPolicy(min_ahead_s=7.0).catalog_properties()) == RefreshPolicy(min_ahead_s=7.0)
