"""The support matrix: doctor reports saved per profile (`resources/matrix/<profile>.json`,
written by `doctor --save-matrix` against a real server) and recordings of the emulated catalogs
(`resources/matrix/emulated/<family>-<release>.json`, written by the slow emulated suite), rendered
as the README's markdown table and the catalog x step table of docs/emulated-catalogs.md, plus the
profile listing. Needs no server and imports neither Spark nor PyIceberg.

Each capability is reduced to what the user sees: works, degraded (how we go on without it) or
refused (why), with its reference. Profiles with neither a run nor a recording are shown as
"reference only": their defaults come from vendor documentation and were never run here, so the
table never claims they work.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.catalog.profiles import PROFILES, Profile

__all__ = ["PARTIAL", "MATRIX_DIR", "EMULATED_DIR", "REAL_DIR", "REAL_SOURCE", "RECORD_ENV", "README_NOTES", "COLUMNS",
           "INVENTORY_COLUMNS", "WITHOUT", "STEP_TITLES", "save_matrix", "load_matrix", "load_emulated", "load_real",
           "capabilities", "doctor_record", "step_record",
           "stable_text", "diff_line", "check_emulated", "render_matrix", "render_matrix_notes",
           "render_emulated_table", "render_profiles", "profiles_json",
           "STORE_TABLE_LINK", "STORES_DIR", "STORE_PROBES", "STORE_STYLES", "STORE_STACKS", "load_stores", "store_record", "render_store_table"]

#: Where `--save-matrix` writes and `--print-matrix` reads by default (shipped in the wheel).
MATRIX_DIR = Path(__file__).resolve().parent.parent / "resources" / "matrix"
#: Recordings of the emulated catalogs (tests/slow/test_emulated_catalogs.py), one file per release.
EMULATED_DIR = MATRIX_DIR / "emulated"
#: Recordings of real catalog servers run here (tests/slow/test_real_catalogs.py), same format, one file per release.
REAL_DIR = MATRIX_DIR / "real"
#: The `source` of a real server's recording (an emulated one says "emulator").
REAL_SOURCE = "real server"
#: Recordings of the doctor's ADLS and GCS probes on the emulated stores (tests/slow/test_store_doctor.py), one file per store.
STORES_DIR = MATRIX_DIR / "stores"
#: Set to 1 to make the emulated suite rewrite its recordings instead of comparing with them.
RECORD_ENV = "CATALOG_EXT_RECORD_MATRIX"
RECORD_FORMAT = 1
#: Where the README's support matrix points for its numbered notes (rendered there by update_matrix.py).
README_NOTES = "[Catalogs proven here](docs/emulated-catalogs.md#support-matrix-notes)"
#: Where the README's support matrix points for the store table (rendered there by update_matrix.py).
STORE_TABLE_LINK = "[Doctor: stores](docs/doctor.md#stores-tested)"

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

#: The user path the emulated suite runs on each catalog, by step number (the catalog x step table shows the recorded ones).
STEP_TITLES: Mapping[str, str] = {
    "1": "configure", "2": "CTAS + writeTo", "3": "long read + MERGE", "4": "lost commit answer",
    "5": "cleanup dry run", "6": "PyIceberg scan + append", "7": "maintain (policies)", "8": "remote signing",
}

#: (column title, probe ids) of the markdown table.
COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Catalog basics", ("config", "auth", "namespaces", "tables")),
    ("PyIceberg append + scan", ("pyiceberg",)),
    ("Spark CTAS / read / append", ("spark-ctas", "spark-read", "spark-append")),
    ("Vended credentials", ("vended-credentials",)),
    ("Exact-prefix scope", ("credential-scope",)),
    ("Refresh endpoint", ("refresh-endpoint",)),
    ("`GET …/credentials`", ("credentials-endpoint",)),
    ("`storage-refresh-token`", ("storage-refresh-token",)),
    ("Re-stage", ("re-stage",)),
    ("Stage + commit", ("stage-commit",)),
    ("Idempotency-Key advertised / replayed", ("idempotency-advertised", "idempotency-replay")),
    ("Remote signing", ("remote-signing",)),
    # Other engines on the same catalog (doctor/clients.py); a row recorded before the probe existed says "not run".
    ("Clients: DuckDB", ("duckdb",)),
    ("Clients: Trino", ("trino",)),
)

#: (column title, probe ids) of the server inventory table: what Iceberg users do in Spark.
INVENTORY_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Rename table", ("rename-table",)),
    ("Views", ("views",)),
    ("Namespace properties", ("namespace-properties",)),
    ("Partition by first column", ("partition-first-column",)),
    ("DELETE/MERGE merge-on-read", ("dml-merge-on-read",)),
    ("DELETE/MERGE copy-on-write", ("dml-copy-on-write",)),
    ("rewrite_data_files", ("rewrite-data-files",)),
    ("expire_snapshots", ("expire-snapshots",)),
    ("remove_orphan_files", ("remove-orphan-files",)),
    ("rewrite_manifests", ("rewrite-manifests",)),
)


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


def _by_profile(recordings: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Recordings in the order of the profiles (then by id), as the tables list them."""
    order = {name: i for i, name in enumerate(PROFILES)}
    # A profile's real-server rows come before its emulated ones: where they disagree, the real one wins.
    return dict(sorted(recordings.items(), key=lambda kv: (order.get(str(kv[1].get("profile")), len(order)),
                                                          kv[1].get("source") != REAL_SOURCE, kv[0])))


def _recordings(emulated_dir: Path | str | None) -> dict[str, dict[str, Any]]:
    """Emulated and real-server recordings together (the real ones beside `emulated_dir`, in real/)."""
    real_dir = Path(emulated_dir).parent / "real" if emulated_dir else REAL_DIR
    return _by_profile({**load_emulated(emulated_dir), **load_real(real_dir)})


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


def _cell(entry: Mapping[str, Any], ids: tuple[str, ...]) -> str:
    by_id = {p["id"]: p for p in entry.get("probes", [])}
    statuses = [by_id[i]["status"] if i in by_id else "not run" for i in ids]
    if len(set(statuses)) == 1:
        text = statuses[0]
    elif len(ids) == 2:
        text = " / ".join(statuses)
    else:
        bad = [f"{i} {s}" for i, s in zip(ids, statuses, strict=True) if s != "pass"]
        text = "pass except " + ", ".join(bad) if "pass" in statuses else " / ".join(statuses)
    if ids == ("vended-credentials",) and text == "pass":
        lifetime = (by_id["vended-credentials"].get("evidence") or {}).get("lifetime_s")
        rotates = (by_id["vended-credentials"].get("evidence") or {}).get("rotates_per_load")
        if lifetime:
            text += f" ({_round_lifetime(lifetime)} s{', rotate per load' if rotates else ''})"
    return "**fail**" if text == "fail" else text


def _round_lifetime(seconds: float) -> int:
    # A run measures the remaining lifetime a moment after vending: round to the minute.
    return int(round(float(seconds) / 60.0) * 60) if seconds >= 60 else int(seconds)


class _Notes:
    """Numbered notes under a table, one per distinct text: a cell says `degraded [2]`, note 2 says how."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def label(self, cap: Mapping[str, Any] | None) -> str:
        if cap is None:
            return "not run"
        outcome = str(cap.get("outcome"))
        if outcome == NOT_PROBED:  # the legend says why; the missing prerequisite has its own note
            return outcome
        parts = [cap.get("how") or cap.get("why") or ""]
        if cap.get("doctor") and cap.get("doctor") != parts[0]:
            parts.append(f"doctor: \"{cap['doctor']}\"")
        if cap.get("ref"):
            parts.append(f"ref: {cap['ref']}")
        text = "; ".join(p for p in parts if p)
        shown = f"**{outcome}**" if outcome == FAILS else outcome
        if not text:
            return shown
        note = f"{outcome}: {text}"
        if note not in self.items:
            self.items.append(note)
        return f"{shown} [{self.items.index(note) + 1}]"

    def lines(self) -> list[str]:
        return [f"- [{i}] {_md(note)}" for i, note in enumerate(self.items, 1)]


def _md(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("|", "\\|")


def _capability_cell(caps: Mapping[str, Mapping[str, Any]], ids: tuple[str, ...], notes: _Notes) -> str:
    labels = [notes.label(caps.get(i)) for i in ids]
    if len(set(labels)) == 1:
        return labels[0]
    if len(ids) <= 2:
        return " / ".join(labels)
    works = [lab.startswith(WORKS) for lab in labels]
    if all(works):  # every probe works, some with a reference: one "works" with their notes
        return "works " + " ".join(dict.fromkeys(lab.split(" ", 1)[1] for lab in labels if " " in lab))
    if any(works):
        return "works except " + ", ".join(f"{i} {lab}" for i, lab, ok in zip(ids, labels, works, strict=True) if not ok)
    return " / ".join(labels)


def _real_row(name: str, entry: Mapping[str, Any], notes: _Notes) -> list[str]:
    """A `--save-matrix` run's row (always on SeaweedFS's S3)."""
    server = (entry.get("catalog") or {}).get("server") or "catalog"
    when = str(entry.get("generated_at", ""))[:10]
    version = (entry.get("tool") or {}).get("version", "?")
    caps = capabilities(entry)
    cells = [f"`{name}`", f"{server}, {when}, doctor {version}", "real server", "S3 (SeaweedFS)"]
    for _, ids in COLUMNS:
        text = _capability_cell(caps, ids, notes)
        if ids == ("vended-credentials",) and text == WORKS:
            by_id = {p["id"]: p for p in entry.get("probes", [])}
            evidence = by_id["vended-credentials"].get("evidence") or {}
            if evidence.get("lifetime_s"):
                rotate = ", rotate per load" if evidence.get("rotates_per_load") else ""
                text += f" ({_round_lifetime(evidence['lifetime_s'])} s{rotate})"
        cells.append(text)
    return cells


def _emulated_row(entry_id: str, entry: Mapping[str, Any], notes: _Notes, stores: Mapping[str, Mapping[str, Any]]) -> list[str]:
    caps = dict((entry.get("doctor") or {}).get("capabilities") or {})
    if "pyiceberg" not in caps and isinstance(entry.get("step-6"), Mapping):
        caps["pyiceberg"] = _step_capability(entry["step-6"])  # the user path's PyIceberg scan + append
    release = f"{entry.get('family', '?')} {entry.get('release', '?')}"
    if entry.get("source") == REAL_SOURCE:
        cells = [f"`{entry['profile']}`", f"{release} on SeaweedFS (tests/realservers)",
                 f"real server {entry.get('release', '?')}"]
    elif entry.get("checked_against"):
        cells = [f"`{entry['profile']}`", f"emulated {release} (tests/emulators), checked against recorded real answers "
                 f"({entry['checked_against']})", f"emulator ({entry.get('release', '?')}), checked against recorded real answers"]
    else:
        cells = [f"`{entry['profile']}`", f"emulated {release} (tests/emulators)", f"emulator ({entry.get('release', '?')})"]
    return cells + [_stores_cell(entry, stores)] + [_capability_cell(caps, ids, notes) for _, ids in COLUMNS]


def _step_capability(step: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded user-path step as a capability cell: its outcome, and what it said as the note."""
    text = step.get("note") or step.get("how") or step.get("message") or step.get("why")
    outcome = str(step.get("outcome"))
    return {"outcome": outcome, **({} if outcome == WORKS or not text else {"how" if outcome == DEGRADED else "why": text})}


def _support_table(directory: Path | str | None) -> tuple[list[str], _Notes, dict[str, dict[str, Any]]]:
    entries = load_matrix(directory)
    emulated = _recordings(Path(directory) / "emulated" if directory else None)
    stores = load_stores(Path(directory) / "stores" if directory else None)
    notes = _Notes()
    head = ["Profile", "Tested against", "Source", "Stores"] + [title for title, _ in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    names = list(PROFILES) + sorted((set(entries) | {e["profile"] for e in emulated.values()}) - set(PROFILES))
    for name in names:
        rows = []
        if name in entries:
            rows.append(_real_row(name, entries[name], notes))
        rows += [_emulated_row(eid, e, notes, stores) for eid, e in emulated.items() if e.get("profile") == name]
        if not rows:
            prof = PROFILES[name]
            alias = f", alias of `{prof.alias_of}`" if prof.alias_of else ""
            where, source = (("emulated (documented behaviour on loopback, tests/emulators; not recorded)", "emulator")
                             if prof.emulated else (f"reference only (vendor docs, not run here{alias})", "reference only"))
            rows.append([f"`{name}`", where, source, _stores_cell(None, stores)] + ["—"] * len(COLUMNS))
        lines += ["| " + " | ".join(_md(c) if i < 4 else c for i, c in enumerate(cells)) + " |" for cells in rows]
    return lines, notes, entries


LEGEND = ("Source: *real server*: a recorded `doctor` run against SeaweedFS (`resources/matrix/<profile>.json`); "
          "*real server N*: recorded by the slow real-server suite against that release run here on SeaweedFS "
          "(`resources/matrix/real/`); *emulator (release)*: recorded by the slow emulated suite against a loopback emulation of that release's "
          "documented behaviour, not its server (`resources/matrix/emulated/`); *emulator (release), checked against recorded real "
          "answers*: the same emulation compared, answer by answer, with a real server's recorded answers "
          "(tests/emulators/observed/, tests/unit/test_emulated_polaris.py); *reference only*: vendor docs, never "
          "run here. works / degraded [n]: how the package goes on without it / refused [n]: why / **fail**; "
          "not probed: a prerequisite is missing; not run: skipped (the emulated runs leave Spark and the inventory "
          "to the user path; their PyIceberg cell is the user path's step 6, scan + append), or recorded before the probe "
          "existed (Clients: DuckDB and Trino, the doctor's `duckdb` and `trino` probes: each is claimed only from a run that included it).")


def render_matrix(directory: Path | str | None = None, notes: str | None = None) -> str:
    """The markdown support table: one row per profile and recorded run (real server or emulator);
    profiles with neither are "reference only". Numbered notes say how each degraded capability
    degrades and why each refused one is refused, with the reference, and the store table follows:
    listed under the table, or, with `notes` (a markdown link), only pointed to (the README, whose
    length is kept short; the store table is in docs/doctor.md)."""
    lines, numbered, entries = _support_table(directory)
    lines.append("")
    if notes is None:
        lines += numbered.lines() + ([""] if numbered.items else [])
        lines += [render_store_table(Path(directory) / "stores" if directory else None), ""]
    lines += _inventory_table(entries)
    lines.append(LEGEND + (f" The stores: {STORE_TABLE_LINK}. The notes [n]: {notes}." if notes else ""))
    return "\n".join(lines)


def render_matrix_notes(directory: Path | str | None = None) -> str:
    """The numbered notes of `render_matrix` on their own (docs/emulated-catalogs.md)."""
    return "\n".join(_support_table(directory)[1].lines())


def _step_cell(step: Mapping[str, Any] | None) -> str:
    if step is None:
        return "not recorded"
    outcome = str(step.get("outcome"))
    text = step.get("note") or step.get("how") or step.get("message") or step.get("why")
    if not text:
        return outcome
    return f"{outcome}: \"{_md(text)}\"" if outcome == REFUSED else f"{outcome} ({_md(text)})"


def _doctor_cell(doctor: Mapping[str, Any] | None) -> str:
    if not doctor:
        return "not recorded"
    counts: dict[str, int] = {}
    for cap in (doctor.get("capabilities") or {}).values():
        counts[cap["outcome"]] = counts.get(cap["outcome"], 0) + 1
    shown = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts.get(o))
    return f"exit {doctor.get('exit_code')}: {shown}"


def render_emulated_table(directory: Path | str | None = None) -> str:
    """The catalog x step table of docs/emulated-catalogs.md, from the emulated recordings."""
    emulated = _recordings(directory)
    steps = sorted({k.split("-", 1)[1] for e in emulated.values() for k in e if k.startswith("step-")}, key=int)
    head = ["catalog", "source", "profile"] + [f"{n} {STEP_TITLES.get(n, 'step ' + n)}" for n in steps] + ["9 doctor"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for entry_id, entry in emulated.items():
        source = ("real server" if entry.get("source") == REAL_SOURCE
                  else "emulator, checked against recorded real answers" if entry.get("checked_against") else "emulator")
        cells = [f"{entry.get('family')} {entry.get('release')}", f"{source} (`{entry_id}`)", f"`{entry['profile']}`"]
        cells += [_step_cell(entry.get(f"step-{n}")) for n in steps] + [_doctor_cell(entry.get("doctor"))]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Rendered by `scripts/update_matrix.py` from `pyspark_catalog_ext/resources/matrix/emulated/*.json` "
                 "and `real/*.json`, which the slow emulated and real-server suites record "
                 "(`CATALOG_EXT_RECORD_MATRIX=1`) and compare on every run. Doctor: its exit code and how many capabilities work, degrade or are refused (per capability: the "
                 "README's support matrix).")
    return "\n".join(lines)


def _inventory_table(entries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Server inventory of the profiles with a recorded run (none: no table)."""
    rows = [name for name in list(PROFILES) + sorted(set(entries) - set(PROFILES)) if name in entries]
    if not rows:
        return []
    head = ["Server inventory"] + [title for title, _ in INVENTORY_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for name in rows:
        cells = [f"`{name}`"] + [_cell(entries[name], ids) for _, ids in INVENTORY_COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return lines


# ------------------------------------------------------------------ stores
#: The store probes a store recording keeps, and the catalog switches each recording ran with.
STORE_PROBES = ("store-credentials", "store-access", "store-refresh")
STORE_STYLES: Mapping[str, str] = {"tokens": "storage-refresh-token", "endpoint": "refresh endpoint", "neither": "neither"}

#: Which Spark x Iceberg stacks each store runs on, and why (docs/stores.md, section 3): `ci` is run by
#: the suite, `checked` was run once by hand, `not_run` was not run. S3's are every stack of jvm-stacks.json.
STORE_STACKS: Mapping[str, Mapping[str, str]] = {
    "adls": {"ci": "Spark 4.1 × 1.11.0 (the shim's refresh, tests/slow/test_stores.py); Spark 3.5 × 1.10.2 (a staged CTAS)",
             "checked": "Spark 3.5 × 1.10.2, 1.11.0, 1.12.0; Spark 4.1 × 1.11.0, 1.12.0 (plain Iceberg: a round trip and a staged CTAS)",
             "not_run": "Spark 4.0 × 1.11.0 (no 4.0 venv made here; the same runtime classes and bundle)",
             "why": "Maven Central serves `iceberg-azure-bundle` at 1.10.0 only, so every Iceberg takes it; ADLSFileIO takes "
                    "the shim's client function from 1.11.0 on; 1.10 has no such hook: there a renewed SAS reaches files opened "
                    "after the renewal (a new ADLSFileIO per SAS), nothing is resent on a 403"},
    "gcs": {"ci": "Spark 4.1 × 1.11.0 (the shim's refresh, tests/slow/test_stores.py)",
            "checked": "Spark 3.5 × 1.10.2, 1.11.0, 1.12.0; Spark 4.1 × 1.11.0, 1.12.0 (plain Iceberg: a round trip and a staged CTAS)",
            "not_run": "Spark 4.0 × 1.11.0 (no 4.0 venv made here; the same runtime classes and bundle)",
            "why": "Maven Central serves `iceberg-gcp-bundle` at 1.10.0 and 1.11.0: {bundles}"},
}


def _resource(name: str) -> dict[str, Any]:
    return json.loads((MATRIX_DIR.parent / name).read_text())


def _s3_stacks() -> str:
    lines = _resource("jvm-stacks.json")["spark"]
    return "; ".join(f"Spark {line} × {', '.join(spec['iceberg'])}" for line, spec in lines.items())


def _bundles(store: str) -> str:
    by_release = _resource("store-jars.json")["stores"][store]["bundle"]
    return ", ".join(f"{release} takes {coord.rsplit(':', 1)[1]}" for release, coord in by_release.items())


def load_stores(directory: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """Store recordings by store ("adls", "gcs"); invalid files are ignored."""
    out: dict[str, dict[str, Any]] = {}
    folder = Path(directory) if directory else STORES_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("store") == path.stem:
            out[path.stem] = data
    return out


def store_record(report: Mapping[str, Any]) -> dict[str, Any]:
    """What a store recording keeps of one doctor run: the store probes' capabilities, and the
    `store-refresh` probe's own one-line answer (the strategies; the other answers hold what changes
    from run to run: an Azurite SAS made in the same second as the last is the same token)."""
    caps = capabilities(report)
    by_id = {p["id"]: p for p in report.get("probes", [])}
    out = {pid: dict(caps[pid]) for pid in STORE_PROBES if pid in caps}
    if "store-refresh" in out:
        out["store-refresh"]["doctor"] = stable_text(by_id["store-refresh"].get("summary", ""))
    return out


def _store_refresh_cell(section: Mapping[str, Any] | None, store: str) -> str:
    if not section:
        return "not recorded"
    cap = section.get("store-refresh") or {}
    text = str(cap.get("doctor") or "").removeprefix(f"{store}: ")
    access = (section.get("store-access") or {}).get("outcome")
    shown = f"**{cap.get('outcome')}**" if cap.get("outcome") == FAILS else str(cap.get("outcome"))
    return _md(f"{shown}: {text}" + ("" if access == WORKS else f"; the token: {access}"))


def render_store_table(directory: Path | str | None = None) -> str:
    """Which stores are tested, on which emulator and Spark x Iceberg stacks (and why), and what the
    doctor's store probes answer on the test catalog per refresh style."""
    stores = load_stores(directory)
    head = ["Store", "Emulator", "Catalog", "Spark × Iceberg in the suite", "Run once by hand", "Not run", "Why these stacks"]
    head += [f"doctor `store-refresh`, catalog with {title}" for title in STORE_STYLES.values()]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines.append("| " + " | ".join(["S3", "SeaweedFS (`weed mini`, the embedded lakehouse)", "every catalog of the support matrix",
                                    _s3_stacks() + " (tests/slow/test_stack_matrix.py)", "—", "—",
                                    "the whole supported matrix (`resources/jvm-stacks.json`)"]
                                   + ["the S3 probes (the support matrix)"] * len(STORE_STYLES)) + " |")
    for store, facts in STORE_STACKS.items():
        entry = stores.get(store) or {}
        catalog = (f"{entry.get('catalog')} {entry.get('release')} + a vending front (tests/stores)" if entry else "not recorded")
        cells = [store.upper(), str(entry.get("emulator") or "not recorded"), catalog, facts["ci"], facts["checked"],
                 facts["not_run"], facts["why"].format(bundles=_bundles(store))]
        lines.append("| " + " | ".join(_md(c) for c in cells)
                     + " | " + " | ".join(_store_refresh_cell(entry.get(f"doctor-{style}"), store) for style in STORE_STYLES) + " |")
    lines.append("")
    lines.append("Stores: rendered from `resources/matrix/stores/*.json`, which tests/slow/test_store_doctor.py records "
                 f"(`{RECORD_ENV}=1`) and compares on every run, and from the stacks run (docs/stores.md, section 3). "
                 "Each `store-refresh` cell lists the strategies the Spark shim tries, in its order, for a committed and a staged "
                 "table (PyIceberg jobs renew with their own strategies, proven with FsspecFileIO); Iceberg alone has only the endpoint, and a staged "
                 "table's endpoint answers 404.")
    return "\n".join(lines)


def _stores_cell(entry: Mapping[str, Any] | None, stores: Mapping[str, Mapping[str, Any]]) -> str:
    """The stores a row was tested on: S3 on SeaweedFS under every run, plus the store recordings of its catalog."""
    if entry is None:
        return "—"
    family, release = entry.get("family"), entry.get("release")
    extra = [f"{store.upper()} ({rec.get('emulator')})" for store, rec in stores.items()
             if entry.get("source") == REAL_SOURCE and rec.get("catalog") == family and rec.get("release") == release]
    return "; ".join(["S3 (SeaweedFS)", *extra])


def profiles_json() -> list[dict[str, Any]]:
    """Profiles as plain data (for `--print-profiles --json`)."""
    out = []
    for prof in PROFILES.values():
        out.append({
            "name": prof.name, "description": prof.description, "uri": prof.uri_template, "auth": prof.auth,
            "signing_name": prof.signing_name, "region": prof.region, "delegation": prof.delegation,
            "warehouse": prof.warehouse_hint, "required_probes": list(prof.required_probes),
            "alias_of": prof.alias_of, "tested_here": prof.tested_here, "emulated": prof.emulated, "notes": prof.notes,
        })
    return out


def _auth_text(prof: Profile) -> str:
    if prof.auth == "sigv4":
        return f"SigV4 ({prof.signing_name or 'execute-api'})"
    return {"oauth2": "OAuth2", "token": "bearer token", "none": "none"}.get(prof.auth, prof.auth)


def render_profiles() -> str:
    """A readable listing of the vendor profiles and the probes each requires."""
    rows = [("PROFILE", "AUTH", "URI", "STATUS")]
    for prof in PROFILES.values():
        status = "tested here" if prof.tested_here else "emulated here" if prof.emulated else "reference only"
        if prof.alias_of:
            status += f" (alias of {prof.alias_of})"
        rows.append((prof.name, _auth_text(prof), prof.uri_template or "(the running lakehouse)", status))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.append("")
    for prof in PROFILES.values():
        lines.append(f"{prof.name}: {prof.description}")
        lines.append(f"  warehouse: {prof.warehouse_hint}")
        lines.append(f"  required probes: {', '.join(prof.required_probes)}")
        if prof.notes:
            lines.append(f"  notes: {prof.notes}")
    return "\n".join(lines)
