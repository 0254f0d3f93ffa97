"""The support matrix as markdown: the README's support table (one row per profile and recorded run),
its numbered notes, the server inventory table, and the catalog x step table of
docs/emulated-catalogs.md, from the recordings `matrix` loads (the store table is `store_matrix`'s).

Profiles with neither a run nor a recording are shown as "reference only": their
defaults come from vendor documentation and were never run here, so the table never claims they work.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.catalog.profiles import PROFILES
from pyspark_catalog_ext.doctor.matrix import (
    DEGRADED,
    FAILS,
    NOT_PROBED,
    OUTCOMES,
    REAL_DIR,
    REAL_SOURCE,
    REFUSED,
    WORKS,
    capabilities,
    load_emulated,
    load_matrix,
    load_real,
    md_cell,
)
from pyspark_catalog_ext.doctor.store_matrix import load_stores, render_store_table

__all__ = ["README_NOTES", "STORE_TABLE_LINK", "COLUMNS", "INVENTORY_COLUMNS", "STEP_TITLES", "render_matrix", "render_matrix_notes",
           "render_emulated_table"]

#: Where the README's support matrix points for its numbered notes (rendered there by update_matrix.py).
README_NOTES = "[Catalogs proven here](docs/emulated-catalogs.md#support-matrix-notes)"
#: Where the README's support matrix points for the store table (rendered there by update_matrix.py).
STORE_TABLE_LINK = "[Doctor: stores](docs/doctor.md#stores-tested)"

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
        return [f"- [{i}] {md_cell(note)}" for i, note in enumerate(self.items, 1)]


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
    caps.update((entry.get("clients") or {}).get("capabilities") or {})  # the client probes (step 10), run on their own
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
        lines += ["| " + " | ".join(md_cell(c) if i < 4 else c for i, c in enumerate(cells)) + " |" for cells in rows]
    return lines, notes, entries


LEGEND = ("Source: *real server*: a recorded `doctor` run against SeaweedFS (`resources/matrix/<profile>.json`); "
          "*real server N*: recorded by the slow real-server suite against that release run here on SeaweedFS "
          "(`resources/matrix/real/`); *emulator (release)*: recorded by the slow emulated suite against a loopback emulation of that release's "
          "documented behaviour, not its server (`resources/matrix/emulated/`); *emulator (release), checked against recorded real "
          "answers*: the same emulation compared, answer by answer, with a real server's recorded answers "
          "(tests/emulators/observed/, tests/unit/harness/test_emulated_polaris.py); *reference only*: vendor docs, never "
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
    return f"{outcome}: \"{md_cell(text)}\"" if outcome == REFUSED else f"{outcome} ({md_cell(text)})"


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


def _stores_cell(entry: Mapping[str, Any] | None, stores: Mapping[str, Mapping[str, Any]]) -> str:
    """The stores a row was tested on: S3 on SeaweedFS under every run, plus the store recordings of its catalog."""
    if entry is None:
        return "—"
    family, release = entry.get("family"), entry.get("release")
    extra = [f"{store.upper()} ({rec.get('emulator')})" for store, rec in stores.items()
             if entry.get("source") == REAL_SOURCE and rec.get("catalog") == family and rec.get("release") == release]
    return "; ".join(["S3 (SeaweedFS)", *extra])
