"""What a probe produces: a status (pass / fail / unsupported / skipped), a one-line summary and
evidence (HTTP statuses, config keys seen, timings). Plain data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PASS", "FAIL", "UNSUPPORTED", "SKIPPED", "STATUSES", "Outcome", "ProbeResult",
           "passed", "failed", "unsupported", "skipped"]

PASS = "pass"
FAIL = "fail"
#: The catalog does not offer the feature (a definite answer, not an error).
UNSUPPORTED = "unsupported"
#: Not run: excluded with --skip, a prerequisite probe did not pass, or a local library is missing.
SKIPPED = "skipped"
STATUSES = (PASS, FAIL, UNSUPPORTED, SKIPPED)


@dataclass
class Outcome:
    """The answer of one probe function."""

    status: str
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown probe status {self.status!r}")
        self.summary = " ".join(str(self.summary).split())


def passed(summary: str, **evidence: Any) -> Outcome:
    """A probe that passed."""
    return Outcome(PASS, summary, evidence)


def failed(summary: str, **evidence: Any) -> Outcome:
    """A probe that found the catalog misbehaving (or could not complete)."""
    return Outcome(FAIL, summary, evidence)


def unsupported(summary: str, **evidence: Any) -> Outcome:
    """The catalog does not offer this feature."""
    return Outcome(UNSUPPORTED, summary, evidence)


def skipped(summary: str, **evidence: Any) -> Outcome:
    """The probe was not run."""
    return Outcome(SKIPPED, summary, evidence)


@dataclass
class ProbeResult:
    """One finished probe, as reported (text table and JSON)."""

    id: str
    title: str
    group: str
    status: str
    summary: str
    required: bool
    elapsed_ms: float
    evidence: dict[str, Any] = field(default_factory=dict)
    http: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self, include_http: bool = True) -> dict[str, Any]:
        """JSON-ready form (see resources/doctor-report.schema.json)."""
        out: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "group": self.group,
            "status": self.status,
            "required": self.required,
            "summary": self.summary,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "evidence": self.evidence,
        }
        if include_http:
            out["http"] = self.http
        return out
