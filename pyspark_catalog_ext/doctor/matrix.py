"""The support matrix: doctor reports saved per profile (`resources/matrix/<profile>.json`,
written by `doctor --save-matrix`) rendered as the README's markdown table, plus the profile
listing. Needs no server and imports neither Spark nor PyIceberg.

Profiles without a saved run are shown as "reference only": their defaults come from vendor
documentation and were never run here, so the table never claims they work.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.catalog.profiles import PROFILES, Profile

__all__ = ["MATRIX_DIR", "COLUMNS", "INVENTORY_COLUMNS", "save_matrix", "load_matrix", "render_matrix", "render_profiles", "profiles_json"]

#: Where `--save-matrix` writes and `--print-matrix` reads by default (shipped in the wheel).
MATRIX_DIR = Path(__file__).resolve().parent.parent / "resources" / "matrix"

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


def load_matrix(directory: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """Saved entries by profile name (files that are not valid JSON are ignored)."""
    folder = Path(directory) if directory else MATRIX_DIR
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("profile"):
            out[str(data["profile"])] = data
    return out


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


def render_matrix(directory: Path | str | None = None) -> str:
    """The markdown support table: one row per profile."""
    entries = load_matrix(directory)
    head = ["Profile", "Tested against"] + [title for title, _ in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    names = list(PROFILES) + sorted(set(entries) - set(PROFILES))
    for name in names:
        entry = entries.get(name)
        if entry is None:
            prof = PROFILES[name]
            alias = f", alias of `{prof.alias_of}`" if prof.alias_of else ""
            where = ("emulated (documented behaviour on loopback, tests/emulators)" if prof.emulated
                     else f"reference only (vendor docs, not run here{alias})")
            cells = [f"`{name}`", where] + ["—"] * len(COLUMNS)
        else:
            server = (entry.get("catalog") or {}).get("server") or "catalog"
            when = str(entry.get("generated_at", ""))[:10]
            version = (entry.get("tool") or {}).get("version", "?")
            cells = [f"`{name}`", f"{server}, {when}, doctor {version}"] + [_cell(entry, ids) for _, ids in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += _inventory_table(entries)
    lines.append("pass / **fail** / unsupported: the probe's answer in the recorded `doctor` run "
                 "(`pyspark_catalog_ext/resources/matrix/<profile>.json`). "
                 "Emulated: the user path (configure, CTAS, long read, MERGE, PyIceberg, doctor) runs in the test suite "
                 "against an emulation of the vendor's documented behaviour, not its server. "
                 "Reference only: defaults from vendor documentation, never run here.")
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
