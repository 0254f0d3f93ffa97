"""Markdown tables for the docs that render a shared spec (docs/refresh.md, docs/commits.md,
docs/events.md): one spelling of a header, its rule and a row."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["table"]


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """`header` and `rows` as a Markdown table, one line each, ending in a newline."""
    lines = [_row(header), "|" + "---|" * len(header)]
    lines += [_row(r) for r in rows]
    return "\n".join(lines) + "\n"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
