"""A class a hostile answer names wherever a client could load code: each instantiation or call is
recorded in `LOADED` (the code-loading sweep asserts it stays empty), and appended to the file that
`PCE_CODE_MARKER_LOG` names, for a client that runs in a process of its own (the CLI, the doctor)."""

from __future__ import annotations

import os
import traceback
from typing import Any

LOADED: list[str] = []
NAME = "tests.code_marker.Marker"
LOG_ENV = "PCE_CODE_MARKER_LOG"


def _record(what: str) -> None:
    LOADED.append(what)
    log = os.environ.get(LOG_ENV)
    if log:
        # Where from: the last frames before the marker, to name the loader in a failure message.
        callers = " < ".join(f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}" for f in traceback.extract_stack()[-14:-2][::-1])
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{what} ({callers})\n")


class Marker:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _record(f"instantiated with {len(args)} args")

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        _record("called")
