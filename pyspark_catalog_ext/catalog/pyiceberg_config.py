"""Reading PyIceberg's own catalog configuration (`.pyiceberg.yaml` and `PYICEBERG_CATALOG__*`
environment variables) for `--from-pyiceberg`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pyspark_catalog_ext.errors import ConfigError

__all__ = ["pyiceberg_config"]


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}."))
        elif value is not None:
            out[f"{prefix}{key}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def pyiceberg_config(name: str) -> dict[str, str]:
    """The PyIceberg catalog definition `name` (yaml + env), flattened; ConfigError if absent."""
    from pyiceberg.utils.config import Config
    from strictyaml.ruamel.error import MarkedYAMLError, YAMLError  # PyIceberg parses with strictyaml

    try:
        config = Config()
    except YAMLError as exc:
        where = _pyiceberg_yaml_path()
        line = ""
        if isinstance(exc, MarkedYAMLError) and exc.problem_mark is not None:
            line = f" line {exc.problem_mark.line + 1}"  # ruamel's marks count from 0
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError(f"{where}{line}: invalid YAML ({problem}); fix the file or drop --from-pyiceberg") from None
    found = config.get_catalog_config(name)
    if not found:
        known = ", ".join(config.get_known_catalogs()) or "none"
        raise ConfigError(f"no PyIceberg catalog {name!r} in .pyiceberg.yaml or PYICEBERG_CATALOG__* env (known: {known}); define it or drop --from-pyiceberg")
    props = _flatten(found)
    if props.get("type", "rest") != "rest":
        raise ConfigError(f"PyIceberg catalog {name!r} has type {props['type']!r}; only REST catalogs are supported")
    return props


def _pyiceberg_yaml_path() -> str:
    """The `.pyiceberg.yaml` PyIceberg reads: the first of $PYICEBERG_HOME, ~ and the working dir."""
    for directory in (os.environ.get("PYICEBERG_HOME"), os.path.expanduser("~"), os.getcwd()):
        if directory and os.path.isfile(os.path.join(directory, ".pyiceberg.yaml")):
            return os.path.join(directory, ".pyiceberg.yaml")
    return ".pyiceberg.yaml"
