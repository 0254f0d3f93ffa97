"""The maintenance plan: what it holds (`Plan`, a `TablePlan` per table, an `Action` per procedure
call) and how a call renders as Spark SQL (`table_arg`, `sql_value`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Action", "Plan", "TablePlan", "sql_value", "table_arg"]


# --------------------------------------------------------------------------- plan model


@dataclass
class Action:
    """One procedure call decided by one policy."""

    policy_type: str
    policy: str  # name@vN
    origin: str  # where the policy applies from
    procedure: str  # rewrite_data_files, ..., or "" when nothing runs
    args: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    unknown_keys: list[str] = field(default_factory=list)
    refused: str | None = None  # why a (deleting) action will not run
    table_properties: dict[str, str] = field(default_factory=dict)  # set before the call

    @property
    def runnable(self) -> bool:
        return bool(self.procedure) and self.refused is None


@dataclass
class TablePlan:
    table: str  # catalog.ns.table
    namespace: list[str]
    name: str
    location: str = ""
    snapshot_id: int | None = None
    actions: list[Action] = field(default_factory=list)
    skip: str | None = None  # why the whole table is skipped
    error: str | None = None  # the policies could not be read or validated
    versions: dict[str, str] = field(default_factory=dict)


@dataclass
class Plan:
    catalog: str
    tables: list[TablePlan]
    source: str
    state_file: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "policy_source": self.source, "tables": [asdict(t) for t in self.tables]}

    def render(self) -> str:
        """The dry-run text: table, policy and origin, action with parameters, why."""
        lines = [f"maintenance plan for catalog {self.catalog} (policies from {self.source})"]
        for t in self.tables:
            head = f"{t.table}"
            if t.error:
                lines.append(f"{head}: ERROR {t.error}")
                continue
            if t.skip:
                lines.append(f"{head}: skip ({t.skip})")
                continue
            if not t.actions:
                lines.append(f"{head}: nothing to do (no maintenance policy applies)")
                continue
            lines.append(f"{head}:")
            for a in t.actions:
                lines.append(f"  {a.policy_type} {a.policy} [{a.origin}]")
                if a.procedure:
                    args = ", ".join(f"{k} => {sql_value(v)}" for k, v in a.args.items())
                    props = "".join(f" after setting {k}={v}" for k, v in a.table_properties.items())
                    state = f"REFUSED: {a.refused}" if a.refused else "run"
                    lines.append(f"    {state}: CALL {self.catalog}.system.{a.procedure}({args}){props}")
                lines.append(f"    why: {a.reason}")
                if a.unknown_keys:
                    lines.append(f"    ignored unknown config keys: {', '.join(a.unknown_keys)}")
        return "\n".join(lines)


class Timestamp(str):
    """A timestamp argument (rendered as a SQL TIMESTAMP literal)."""


def _quote(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part) else "`" + part.replace("`", "``") + "`"


def table_arg(namespace: Sequence[str], name: str) -> str:
    return ".".join(_quote(p) for p in [*namespace, name])


def sql_value(value: Any) -> str:
    if isinstance(value, Timestamp):
        return f"TIMESTAMP '{value}'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, Mapping):
        return "map(" + ", ".join(f"{sql_value(str(k))}, {sql_value(str(v))}" for k, v in value.items()) + ")"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
