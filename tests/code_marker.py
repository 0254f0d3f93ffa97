"""A class a hostile answer names wherever a client could load code: each instantiation or call is
recorded in `LOADED` (the code-loading sweep asserts it stays empty)."""

from __future__ import annotations

from typing import Any

LOADED: list[str] = []
NAME = "tests.code_marker.Marker"


class Marker:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        LOADED.append(f"instantiated with {len(args)} args")

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        LOADED.append("called")
