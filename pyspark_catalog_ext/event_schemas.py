"""The schema of every event either runtime emits (`resources/event-schemas.json`): its fields, their
JSON types, whether each is required or may be null, and which runtimes emit it. `violations()`
checks one event against it (the test suites hold every event to it: tests/conftest.py here, the
shim's `EventSchemas.java` there); docs/events.md shows the table `markdown_table()` renders.

Java twin: `io.catalogext.shim.events.EventSchemas`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pyspark_catalog_ext import markdown

__all__ = ["SCHEMAS_PATH", "schemas", "by_type", "violations", "markdown_table"]

SCHEMAS_PATH = Path(__file__).resolve().parent / "resources" / "event-schemas.json"

_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
                                       "array": (list, tuple), "object": (Mapping,)}


@lru_cache(maxsize=1)
def schemas() -> dict[str, Any]:
    return json.loads(SCHEMAS_PATH.read_text())


def by_type() -> dict[str, dict[str, Any]]:
    return {e["type"]: e for e in schemas()["events"]}


def _is(value: Any, type_name: str) -> bool:
    if isinstance(value, bool) and type_name != "boolean":
        return False  # JSON keeps true apart from 1
    return isinstance(value, _TYPES[type_name])


def violations(type_: str, fields: Mapping[str, Any], runtime: str) -> list[str]:
    """What is wrong with event `type_` carrying `fields` (as its emitter gave them: without the
    envelope) from `runtime` ("python" or "jvm"): one line each; empty when it matches the schema."""
    schema = by_type().get(type_)
    if schema is None:
        return [f"{type_}: unknown event type (add it to resources/event-schemas.json)"]
    if runtime not in schema["runtimes"]:
        return [f"{type_}: emitted by {runtime}, but the schema names only {', '.join(schema['runtimes'])}"]
    allowed = {name: spec for name, spec in schema["fields"].items() if runtime in spec.get("runtimes", schema["runtimes"])}
    found = []
    for name in sorted(set(fields) - set(allowed)):
        found.append(f"{type_} ({runtime}): " + (f"field {name!r} is the envelope's (each runtime sets it)"
                                                 if name in schemas()["envelope"] else f"unexpected field {name!r}"))
    for name, spec in allowed.items():
        if name not in fields:
            if spec["required"]:
                found.append(f"{type_} ({runtime}): missing required field {name!r}")
            continue
        value = fields[name]
        if value is None:
            if not spec["nullable"]:
                found.append(f"{type_} ({runtime}): field {name!r} is null, which the schema does not allow")
        elif not _is(value, spec["type"]):
            found.append(f"{type_} ({runtime}): field {name!r} is {type(value).__name__} {value!r}, not {spec['type']}")
        elif "values" in spec and value not in spec["values"]:
            found.append(f"{type_} ({runtime}): field {name!r} is {value!r}, not one of {spec['values']}")
        elif "items" in spec and not all(_is(item, spec["items"]["type"]) for item in value):
            found.append(f"{type_} ({runtime}): field {name!r} holds an item that is not {spec['items']['type']}")
    return found


def _field(name: str, spec: dict[str, Any], runtimes: list[str]) -> str:
    kind = spec["type"] + (f" of {spec['items']['type']}" if "items" in spec else "")
    notes = [kind] + (["optional"] if not spec["required"] else []) + (["nullable"] if spec["nullable"] else [])
    if spec.get("runtimes", runtimes) != runtimes:
        notes.append(" ".join(spec["runtimes"]) + " only")
    text = f"`{name}` ({', '.join(notes)}"
    if "values" in spec:
        text += ": " + "/".join(f"`{v}`" for v in spec["values"])
    if "meaning" in spec:
        text += ("; " if "values" in spec else ": ") + spec["meaning"]
    return text + ")"


def markdown_table() -> str:
    """One row per event type, as docs/events.md shows it."""
    rows = [[f"`{e['type']}`", ", ".join(e["runtimes"]), e["meaning"],
             ", ".join(_field(n, s, e["runtimes"]) for n, s in e["fields"].items())] for e in schemas()["events"]]
    return markdown.table(["event", "runtimes", "meaning", "fields"], rows)


if __name__ == "__main__":  # python -m pyspark_catalog_ext.event_schemas: the table for docs/events.md
    print(markdown_table(), end="")
