"""Progress bars for long CLI work (the cleanup listing and deletes, maintain's tables): drawn on
stderr when it is a terminal, silent otherwise (logs, CI, pipes), so scripted output never changes.

Drawn with rich, which PyIceberg already depends on, rather than by hand.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO, Any

__all__ = ["Progress"]


class Progress:
    """`with Progress() as p: advance = p.task("listing", total=None); advance(1)`."""

    def __init__(self, stream: IO[str] | None = None, *, enabled: bool | None = None) -> None:
        self._stream = stream or sys.stderr
        tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self.enabled = tty if enabled is None else enabled
        self._bars: Any = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bars

            self._bars = Bars(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                              console=Console(file=self._stream), transient=True)
            self._bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bars is not None:
            self._bars.stop()
            self._bars = None

    def task(self, description: str, total: int | None = None) -> Callable[[int], None]:
        """A bar (total None: a count without an end); returns `advance(n)`. No-op when silent."""
        if self._bars is None:
            return _no_progress
        bars, task_id = self._bars, self._bars.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            bars.advance(task_id, n)

        return advance

    @classmethod
    def silent(cls) -> Progress:
        return cls(enabled=False)


def _no_progress(n: int = 1) -> None:
    """The silent bar: a terminal is not attached."""
