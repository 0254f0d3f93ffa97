"""The support matrix's recorded runs: doctor reports saved per profile (`resources/matrix/<profile>.json`,
written by `doctor --save-matrix` against a real server) and recordings of the emulated catalogs
(`resources/matrix/emulated/<family>-<release>.json`, written by the slow emulated suite), saved,
loaded and compared. `matrix_tables` renders them as the README's markdown table and the catalog x
step table of docs/emulated-catalogs.md, `store_matrix` the store table, `profile_listing` the profile
listing. Needs no server and imports neither Spark nor PyIceberg.

Each capability is reduced to what the user sees: works, degraded (how we go on without it) or
refused (why), with its reference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["PARTIAL", "MATRIX_DIR", "EMULATED_DIR", "REAL_DIR", "REAL_SOURCE", "RECORD_ENV", "WITHOUT", "save_matrix", "load_matrix",
           "load_emulated", "load_real", "capabilities", "doctor_record", "step_record", "stable_text", "diff_line", "check_emulated"]

#: Where `--save-matrix` writes and `--print-matrix` reads by default (shipped in the wheel).
MATRIX_DIR = Path(__file__).resolve().parent.parent / "resources" / "matrix"
#: Recordings of the emulated catalogs (tests/slow/test_emulated_catalogs.py), one file per release.
EMULATED_DIR = MATRIX_DIR / "emulated"
#: Recordings of real catalog servers run here (tests/slow/test_real_catalogs.py), same format, one file per release.
REAL_DIR = MATRIX_DIR / "real"
#: The `source` of a real server's recording (an emulated one says "emulator").
REAL_SOURCE = "real server"
#: Set to 1 to make the emulated suite rewrite its recordings instead of comparing with them.
RECORD_ENV = "CATALOG_EXT_RECORD_MATRIX"
RECORD_FORMAT = 1

# What the user sees, per capability and per step of the user path.
WORKS, DEGRADED, REFUSED, FAILS, NOT_PROBED, NOT_APPLICABLE = "works", "degraded", "refused", "fail", "not probed", "n/a"
#: A probe that passes for some of what it measures and not the rest (the doctor's summary starts
#: "partial:", e.g. Idempotency-Key replayed for some operations only): not "works".
PARTIAL = "partial"
OUTCOMES = (WORKS, PARTIAL, DEGRADED, REFUSED, FAILS, NOT_PROBED, NOT_APPLICABLE)

#: What the package does when the doctor finds a capability unsupported: (outcome, how or why).
#: These are this package's documented fallbacks (docs/refresh.md, docs/commits.md, docs/staging.md).
WITHOUT: Mapping[str, tuple[str, str]] = {
    "config": (REFUSED, "GET /v1/config does not answer: nothing can run"),
    "auth": (REFUSED, "the catalog refuses the credentials: nothing can run"),
    "namespaces": (DEGRADED, "read-only catalog: reads work, every write is refused by the catalog"),
    "tables": (REFUSED, "tables cannot be created here"),
    "vended-credentials": (DEGRADED, "jobs use their own storage keys (default AWS chain); nothing to refresh"),
    "credential-scope": (DEGRADED, "vended keys reach beyond the table's prefix: works, with less isolation"),
    "refresh-endpoint": (DEGRADED, "refresh by the next strategy: re-stage (staged tables), "
                                   "GET …/credentials or a reload (committed tables)"),
    "credentials-endpoint": (DEGRADED, "refresh by the refresh endpoint or a table reload (the 404 is remembered)"),
    "storage-refresh-token": (DEGRADED, "refresh by the refresh endpoint, re-stage, GET …/credentials or a reload"),
    "re-stage": (DEGRADED, "a staged table's keys are renewed only where the refresh endpoint serves staged tables"),
    "stage-commit": (REFUSED, "CTAS and writeTo().create() fail before any data is written: without stage-create "
                              "they cannot be atomic (create the table, then insert)"),
    "idempotency-advertised": (DEGRADED, "a commit whose answer is lost is reconciled by reloading the table"),
    "idempotency-replay": (DEGRADED, "a commit whose answer is lost is reconciled by reloading the table"),
    "remote-signing": (DEGRADED, "S3 requests are signed in the job with vended or own keys (no remote signer)"),
    "store-credentials": (DEGRADED, "no ADLS or GCS tokens vended: jobs use their own store credentials; nothing to refresh"),
    "store-refresh": (REFUSED, "a job that outlasts the vended token fails at its expiry"),
}


def save_matrix(report: Mapping[str, Any], directory: Path | str | None = None) -> Path:
    """Store a JSON report (from report.report_dict) as the matrix entry of its profile.

    Per-request HTTP evidence is dropped (it changes on every run); everything else is kept."""
    target = Path(directory) if directory else MATRIX_DIR
    target.mkdir(parents=True, exist_ok=True)
    entry = json.loads(json.dumps(report))
    for probe in entry.get("probes", []):
        probe.pop("http", None)
    path = target / f"{entry['profile']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entry, indent=2) + "\n")
    tmp.replace(path)
    return path


def _load_entries(folder: Path, by_file_name: bool) -> dict[str, dict[str, Any]]:
    """The JSON entries of `folder` that name a profile, by profile (or by file name); invalid files are ignored."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("profile"):
            out[path.stem if by_file_name else str(data["profile"])] = data
    return out


def load_matrix(directory: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """Saved entries by profile name (files that are not valid JSON are ignored)."""
    return _load_entries(Path(directory) if directory else MATRIX_DIR, by_file_name=False)


# ------------------------------------------------------------------ recordings of emulated runs
_VOLATILE = (
    (re.compile(r"(?:https?://)?(?:127\.0\.0\.1|localhost|\[::1\]):\d+"), "<loopback>"),  # ports
    (re.compile(r"\bdoctor_[0-9a-f]{6,}\b"), "doctor_<ns>"),  # the doctor's scratch namespace
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|s)\b"), "<time>"),  # timings and lifetimes
)


def stable_text(text: str) -> str:
    """`text` without what changes from run to run (ports, ids, timings), on one line."""
    out = " ".join(str(text).split())
    for pattern, placeholder in _VOLATILE:
        out = pattern.sub(placeholder, out)
    return out


_NEEDS = re.compile(r"^needs ([\w-]+), which the catalog does not support$")


def capabilities(report: Mapping[str, Any], refs: Mapping[str, str | None] | None = None) -> dict[str, dict[str, Any]]:
    """A doctor JSON report reduced to what the user sees, per probe that ran: works; degraded
    (`how`: what the package does instead); refused (`why`); fail (the doctor's summary); or not
    probed (a prerequisite is missing). `doctor` keeps the probe's own one-line answer, `ref` the
    reference of the documented behaviour (from `refs`, by probe id). Skipped probes are left out. A pass
    whose summary says "partial:" is partial, with that summary, never "works"."""
    out: dict[str, dict[str, Any]] = {}
    for probe in report.get("probes", []):
        pid, status = str(probe["id"]), probe.get("status")
        summary = stable_text(probe.get("summary", ""))
        if status == "pass" and summary.startswith(f"{PARTIAL}:"):
            cap: dict[str, Any] = {"outcome": PARTIAL, "doctor": summary}
        elif status == "pass":
            cap = {"outcome": WORKS}
        elif status == "fail":
            cap = {"outcome": FAILS, "why": summary}
        elif status == "unsupported" and _NEEDS.match(summary):
            cap = {"outcome": NOT_PROBED, "why": summary}
        elif status == "unsupported":
            outcome, text = WITHOUT.get(pid, (REFUSED, summary))
            cap = {"outcome": outcome, "how" if outcome == DEGRADED else "why": text, "doctor": summary}
        else:
            continue
        ref = (refs or {}).get(pid)
        if ref:
            cap["ref"] = ref
        out[pid] = cap
    return out


def doctor_record(report: Mapping[str, Any], refs: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """The recorded form of one doctor run: its exit code and `capabilities(report, refs)`."""
    code = (report.get("summary") or {}).get("exit_code")
    return {"exit_code": code, "capabilities": capabilities(report, refs)}


def step_record(outcome: str, text: str | None = None) -> dict[str, Any]:
    """One step of the user path as recorded: works (optional `note`), degraded (`how`), refused (the
    one-line `message` the user got) or n/a (`why`)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}: use one of {', '.join(OUTCOMES)}")
    key = {WORKS: "note", DEGRADED: "how", REFUSED: "message"}.get(outcome, "why")
    if outcome != WORKS and not text:
        raise ValueError(f"a step that is {outcome} needs its {key}")
    return {"outcome": outcome, key: stable_text(text)} if text else {"outcome": outcome}


def _emulated_path(entry_id: str, directory: Path | str | None) -> Path:
    if not re.fullmatch(r"[\w.+-]+", entry_id):
        raise ValueError(f"bad recording id {entry_id!r}: use <family>-<release> (letters, digits, . + - _)")
    return (Path(directory) if directory else EMULATED_DIR) / f"{entry_id}.json"


def load_emulated(directory: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """Recordings of the emulated catalogs by id (`<family>-<release>`); invalid files are ignored."""
    return _load_entries(Path(directory) if directory else EMULATED_DIR, by_file_name=True)


def load_real(directory: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """Recordings of real servers run here by id (`<family>-<release>`); invalid files are ignored."""
    return _load_entries(Path(directory) if directory else REAL_DIR, by_file_name=True)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(_flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def diff_line(old: Any, new: Any, limit: int = 3) -> str | None:
    """One line naming what differs between two recorded values (None if equal)."""
    if old == new:
        return None
    a, b = _flatten(old), _flatten(new)
    changes = [f"{k}: {json.dumps(a.get(k))} -> {json.dumps(b.get(k))}" for k in sorted(set(a) | set(b))
               if a.get(k) != b.get(k)]
    more = f" (+{len(changes) - limit} more)" if len(changes) > limit else ""
    return "; ".join(changes[:limit]) + more


def check_emulated(entry_id: str, section: str, value: Mapping[str, Any], meta: Mapping[str, str], *,
                   record: bool = False, command: str = "", directory: Path | str | None = None,
                   source: str = "emulator") -> str | None:
    """Compare one section (`doctor`, `step-2`, ...) of a run on an emulated catalog with its
    recording, or (`record=True`) write it there. Returns a one-line difference with the command
    that re-records (`command`), or None when it matches or was recorded. `meta` (family, release,
    profile) heads the file; `source` says what ran (the emulator or, in REAL_DIR, the real server)."""
    path = _emulated_path(entry_id, directory)
    try:
        current = json.loads(path.read_text()) if path.exists() else None
    except ValueError:
        current = None  # unreadable: rewritten when recording, a difference otherwise
    if record:
        entry = dict(current or {})
        entry.update({"format": RECORD_FORMAT, "source": source, **meta})
        entry[section] = json.loads(json.dumps(value))
        entry = {k: entry[k] for k in sorted(entry)}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n")
        tmp.replace(path)
        return None
    where = f"{path.parent.name}/{path.name}"
    if current is None:
        return f"{entry_id} {section}: no recording in {where}; record it: {command}"
    recorded = {section: current.get(section), **{k: current.get(k) for k in meta}}
    diff = diff_line(recorded, {section: json.loads(json.dumps(value)), **meta})
    return (None if diff is None else
            f"{entry_id} {section} differs from {where} (recorded -> now): {diff}; if intended, re-record: {command}")


# ------------------------------------------------------------------ shared by the tables (matrix_tables, store_matrix)
def md_cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("|", "\\|")
