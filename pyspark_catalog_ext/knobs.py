"""The `catalog-ext.*` catalog properties, read from the one spec both runtimes share
(`resources/catalog-ext-knobs.json`; the JVM shim carries the same file in its jar and reads it
with `Knobs.java`). Defaults, ranges and the one-line error for a bad value come from the spec, so
a setting means the same in a Spark job and in PyIceberg.

Java twin: `io.catalogext.shim.config.Knobs`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.errors import ConfigError

__all__ = ["SPEC_PATH", "spec", "knob", "read_int", "read_fraction", "read_choice", "bad_value_message", "unknown_names"]

SPEC_PATH = Path(__file__).resolve().parent / "resources" / "catalog-ext-knobs.json"


@lru_cache(maxsize=1)
def spec() -> dict[str, dict[str, Any]]:
    """Every knob by name, from the spec file: name, type (int, fraction, choice, string), default,
    min/max or choices, unit, runtimes, meaning."""
    return {k["name"]: k for k in json.loads(SPEC_PATH.read_text())["knobs"]}


def knob(name: str) -> dict[str, Any]:
    """The spec entry of `name` (a KeyError names a knob missing from the spec: a bug, not input)."""
    return spec()[name]


def bad_value_message(k: Mapping[str, Any], raw: object) -> str:
    """The one-line error for a bad value, word for word what the JVM says (Knobs.java)."""
    if k["type"] == "int":
        allowed = f"use a whole number from {k['min']} to {k['max']}"
    elif k["type"] == "fraction":
        allowed = f"use a number from {_num(k['min'])} up to (not including) {_num(k['max'])}"
    else:
        allowed = "use " + ", ".join(k["choices"][:-1]) + " or " + k["choices"][-1]
    return f"Bad catalog property {k['name']}='{raw}': {allowed}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _raw(props: Mapping[str, Any], name: str) -> str | None:
    raw = props.get(name)
    return None if raw is None or not str(raw).strip() else str(raw).strip()


def _read_number(props: Mapping[str, Any], name: str, convert: Callable[[str], float], upper_open: bool) -> float | None:
    """A number knob's value in [min, max] ([min, max) when upper_open), None when unset."""
    k = knob(name)
    raw = _raw(props, name)
    if raw is None:
        return None
    try:
        value = convert(raw)
    except ValueError:
        raise ConfigError(bad_value_message(k, raw)) from None
    if not (k["min"] <= value < k["max"] if upper_open else k["min"] <= value <= k["max"]):
        raise ConfigError(bad_value_message(k, raw))
    return value


def read_int(props: Mapping[str, Any], name: str) -> int:
    """An int knob: its value, or the spec's default when unset; out of range is a ConfigError."""
    value = _read_number(props, name, int, upper_open=False)
    return int(knob(name)["default"] if value is None else value)


def read_fraction(props: Mapping[str, Any], name: str) -> float:
    """A fraction knob in [min, max)."""
    value = _read_number(props, name, float, upper_open=True)
    return float(knob(name)["default"] if value is None else value)


def read_choice(props: Mapping[str, Any], name: str) -> str:
    """A choice knob, case-insensitive; returns the spec's spelling."""
    k = knob(name)
    raw = _raw(props, name)
    if raw is None:
        return str(k["default"])
    if raw.lower() not in k["choices"]:
        raise ConfigError(bad_value_message(k, raw))
    return raw.lower()


def unknown_names(props: Mapping[str, Any], group: str) -> list[str]:
    """Names under `catalog-ext.<group>.` that the spec does not know (typos)."""
    prefix = f"catalog-ext.{group}."
    return sorted(n for n in props if str(n).startswith(prefix) and n not in spec())
