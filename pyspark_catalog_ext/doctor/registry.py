"""How a probe is declared: `@probe(id, title, group, needs=...)` on a function
`ProbeContext -> Outcome`. The runner runs probes in registration order (see `suite`); a probe
whose prerequisite did not pass is skipped (or unsupported, when the prerequisite was
unsupported). `refusal` answers first, when a probe can tell without its prerequisites that it
cannot work on this catalog (an engine that lacks the catalog's auth): that reason is reported."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark_catalog_ext.doctor.context import ProbeContext
    from pyspark_catalog_ext.doctor.result import Outcome

__all__ = ["ProbeSpec", "probe", "registered"]


@dataclass(frozen=True)
class ProbeSpec:
    """A registered probe."""

    id: str
    title: str
    group: str
    func: Callable[[ProbeContext], Outcome]
    needs: tuple[str, ...] = ()
    refusal: Callable[[ProbeContext], Outcome | None] | None = None


_REGISTERED: list[ProbeSpec] = []


def probe(id: str, title: str, group: str, needs: tuple[str, ...] = (),
          refusal: Callable[[ProbeContext], Outcome | None] | None = None,
          ) -> Callable[[Callable[[ProbeContext], Outcome]], Callable[[ProbeContext], Outcome]]:
    """Register a probe function (order of registration = order of execution)."""

    def deco(func: Callable[[ProbeContext], Outcome]) -> Callable[[ProbeContext], Outcome]:
        _REGISTERED.append(ProbeSpec(id, title, group, func, tuple(needs), refusal))
        return func

    return deco


def registered() -> list[ProbeSpec]:
    """The probes registered so far, in registration order."""
    return list(_REGISTERED)
