"""Recorded real-server runs (resources/matrix/real/) render as "real server <version>" rows,
before the emulated rows of the same profile, in the README's matrix and the docs' step table."""
from __future__ import annotations

import json
from pathlib import Path

from pyspark_catalog_ext.doctor.matrix import REAL_DIR, REAL_SOURCE, WORKS, check_emulated, load_real, step_record
from pyspark_catalog_ext.doctor.matrix_tables import render_emulated_table, render_matrix


def _record(directory: Path, entry_id: str, meta: dict, source: str, note: str) -> None:
    check_emulated(entry_id, "step-2", step_record(WORKS, note), meta, record=True, directory=directory, source=source)
    check_emulated(entry_id, "doctor", {"exit_code": 0, "capabilities": {"config": {"outcome": WORKS}}}, meta,
                   record=True, directory=directory, source=source)


def test_real_rows_render_before_the_emulated_ones_of_their_profile(tmp_path: Path) -> None:
    _record(tmp_path / "emulated", "nessie-0.108", {"family": "nessie", "release": "0.108", "profile": "nessie"},
            "emulator", "emulated")
    _record(tmp_path / "real", "nessie-0.99.0", {"family": "nessie", "release": "0.99.0", "profile": "nessie"},
            REAL_SOURCE, "really")
    assert json.loads((tmp_path / "real" / "nessie-0.99.0.json").read_text())["source"] == REAL_SOURCE
    rows = [line for line in render_matrix(tmp_path).splitlines() if line.startswith("| `nessie` |")]
    assert len(rows) == 2, rows
    assert "| nessie 0.99.0 on SeaweedFS (tests/realservers) | real server 0.99.0 |" in rows[0]
    assert "| emulator (0.108) |" in rows[1]
    steps = [line for line in render_emulated_table(tmp_path / "emulated").splitlines() if "`nessie`" in line]
    assert steps[0].startswith("| nessie 0.99.0 | real server (`nessie-0.99.0`) |") and "works (really)" in steps[0]
    assert steps[1].startswith("| nessie 0.108 | emulator (`nessie-0.108`) |")


def test_the_shipped_real_recordings_say_they_are_real() -> None:
    recorded = load_real()
    assert recorded, f"no recording in {REAL_DIR}"
    for entry_id, entry in recorded.items():
        assert entry["source"] == REAL_SOURCE and entry_id == f"{entry['family']}-{entry['release']}", entry_id
