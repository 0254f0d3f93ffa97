"""The support matrix is generated, never kept by hand: README's table and docs/emulated-catalogs.md's
catalog x step table are what scripts/update_matrix.py renders from the recorded files, and the
recordings of the emulated catalogs hold only what a user sees (no ports, ids or timings)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pyspark_catalog_ext.catalog.profiles import PROFILES
from pyspark_catalog_ext.doctor.matrix import (
    DEGRADED,
    EMULATED_DIR,
    NOT_APPLICABLE,
    OUTCOMES,
    PARTIAL,
    REFUSED,
    WITHOUT,
    WORKS,
    check_emulated,
    doctor_record,
    load_emulated,
    stable_text,
    step_record,
)
from pyspark_catalog_ext.doctor.matrix_tables import COLUMNS, README_NOTES, render_emulated_table, render_matrix, render_matrix_notes
from tests.helpers import ROOT

STALE = "is stale: run .venv/bin/python scripts/update_matrix.py --readme"


def block(path: Path, name: str) -> str:
    text = path.read_text()
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    assert begin in text and end in text, f"{path.name} lost its {begin} ... {end} markers"
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def test_readme_support_matrix_is_rendered_from_the_recordings() -> None:
    table = render_matrix(notes=README_NOTES).strip()
    assert block(ROOT / "README.md", "support-matrix") == table, f"README's support matrix {STALE}"
    assert "[Catalogs proven here](docs/emulated-catalogs.md#support-matrix-notes)" in table


def test_docs_catalog_by_step_table_and_notes_are_rendered_from_the_recordings() -> None:
    docs = ROOT / "docs" / "emulated-catalogs.md"
    assert block(docs, "emulated-matrix") == render_emulated_table().strip(), f"{docs.name}'s table {STALE}"
    assert block(docs, "support-matrix-notes") == render_matrix_notes().strip(), f"{docs.name}'s notes {STALE}"
    assert "## Support matrix notes" in docs.read_text()  # the README's link target


def test_every_emulated_profile_has_recordings_of_steps_and_doctor() -> None:
    recorded = load_emulated()
    assert {e["profile"] for e in recorded.values()} == {n for n, p in PROFILES.items() if p.emulated}
    for entry_id, entry in recorded.items():
        assert entry_id == f"{entry['family']}-{entry['release']}" and entry["source"] == "emulator", entry_id
        steps = {k: v for k, v in entry.items() if k.startswith("step-")}
        assert set(steps) == {f"step-{n}" for n in "2345678"}, (entry_id, sorted(steps))
        if entry.get("checked_against"):  # the recorded answers the emulator is compared with
            assert (ROOT / entry["checked_against"]).is_file(), entry_id
        outcomes = [v["outcome"] for v in steps.values()]
        outcomes += [c["outcome"] for c in entry["doctor"]["capabilities"].values()]
        assert set(outcomes) <= set(OUTCOMES), (entry_id, outcomes)


def test_recordings_hold_nothing_volatile() -> None:
    files = sorted(EMULATED_DIR.glob("*.json"))
    assert files
    for path in files:
        text = path.read_text()
        for volatile in (r"127\.0\.0\.1|localhost", r"doctor_[0-9a-f]{6}", r"elapsed|duration|generated_at",
                         r"\b\d+(\.\d+)? ?ms\b"):
            assert not re.search(volatile, text), f"{path.name}: {volatile}"
        assert json.loads(text) == json.loads(json.dumps(json.loads(text), sort_keys=True))


REPORT = {
    "summary": {"exit_code": 1},
    "probes": [
        {"id": "config", "status": "pass", "summary": "200; prefix 'p'; expire in 4 s"},
        {"id": "refresh-endpoint", "status": "unsupported", "summary": "no client.refresh-credentials-endpoint"},
        {"id": "stage-commit", "status": "unsupported", "summary": "stage-create refused (HTTP 400)"},
        {"id": "re-stage", "status": "unsupported", "summary": "needs stage-commit, which the catalog does not support"},
        {"id": "tables", "status": "fail", "summary": "POST http://127.0.0.1:41234/v1/x answered 500 in 12.5 ms"},
        {"id": "views", "status": "skipped", "summary": "skipped on request (--skip)"},
    ],
}


def test_a_doctor_report_reduces_to_works_degraded_refused_with_references() -> None:
    record = doctor_record(REPORT, {"refresh-endpoint": "polaris#2341", "views": "unused"})
    caps = record["capabilities"]
    assert record["exit_code"] == 1 and "views" not in caps  # skipped probes are not a capability answer
    assert caps["config"] == {"outcome": WORKS}
    assert caps["refresh-endpoint"] == {"outcome": DEGRADED, "how": WITHOUT["refresh-endpoint"][1],
                                        "doctor": "no client.refresh-credentials-endpoint", "ref": "polaris#2341"}
    assert caps["stage-commit"]["outcome"] == REFUSED and "atomic" in caps["stage-commit"]["why"]
    assert caps["re-stage"]["outcome"] == "not probed"
    assert caps["tables"] == {"outcome": "fail", "why": "POST <loopback>/v1/x answered 500 in <time>"}


def test_a_partial_pass_is_recorded_and_shown_as_partial_never_works() -> None:
    """The idempotency probe passes with "partial: ..." where a catalog replays some operations only
    (Polaris 1.7.0 and main: createTable and updateTable); the matrix said "works" for it."""
    summary = "partial: replayed for commit, create; staged-create commit refused (409); namespace create refused (409)"
    report = {"summary": {"exit_code": 0}, "probes": [
        {"id": "idempotency-advertised", "status": "pass", "summary": "lifetime PT5M"},
        {"id": "idempotency-replay", "status": "pass", "summary": summary}]}
    caps = doctor_record(report)["capabilities"]
    assert caps["idempotency-advertised"] == {"outcome": WORKS}
    assert caps["idempotency-replay"] == {"outcome": PARTIAL, "doctor": summary}
    # The shipped recordings: no emulated catalog that replays only some operations says it works.
    for entry_id, entry in load_emulated().items():
        cap = entry["doctor"]["capabilities"].get("idempotency-replay", {})
        if cap.get("outcome") in (WORKS, PARTIAL) and "only" in str(cap.get("ref")):
            assert cap["outcome"] == PARTIAL and cap["doctor"].startswith("partial:"), (entry_id, cap)
    assert re.search(r"works \[\d+\] / partial \[\d+\]", render_matrix())  # Polaris main: advertised / replayed


def test_stable_text_keeps_statuses_and_drops_ports_ids_and_timings() -> None:
    text = "doctor_4b9f0547 at localhost:8181 took 1.5 s; HTTP 404; PT5M; 3 lifetimes"
    assert stable_text(text) == "doctor_<ns> at <loopback> took <time>; HTTP 404; PT5M; 3 lifetimes"


def test_step_records_need_their_message() -> None:
    assert step_record(WORKS) == {"outcome": WORKS}
    assert step_record(REFUSED, "no  stageCreate\n") == {"outcome": REFUSED, "message": "no stageCreate"}
    with pytest.raises(ValueError, match="needs its message"):
        step_record(REFUSED)
    with pytest.raises(ValueError, match="unknown outcome 'ok'"):
        step_record("ok")


def test_a_changed_outcome_fails_with_one_line_and_the_command(tmp_path: Path) -> None:
    meta = {"family": "acme", "release": "1.0", "profile": "polaris"}
    missing = check_emulated("acme-1.0", "step-2", step_record(WORKS), meta, command="RECORD IT", directory=tmp_path)
    assert missing == "acme-1.0 step-2: no recording in " + f"{tmp_path.name}/acme-1.0.json; record it: RECORD IT"
    assert check_emulated("acme-1.0", "step-2", step_record(WORKS), meta, record=True, directory=tmp_path) is None
    assert check_emulated("acme-1.0", "step-2", step_record(WORKS), meta, directory=tmp_path) is None
    refused = step_record(REFUSED, "the catalog does not support stageCreate")
    problem = check_emulated("acme-1.0", "step-2", refused, meta, command="RECORD IT", directory=tmp_path)
    assert problem is not None and "\n" not in problem
    assert '(recorded -> now): step-2.message: null -> "the catalog does not support stageCreate"; ' in problem
    assert 'step-2.outcome: "works" -> "refused"' in problem and problem.endswith("re-record: RECORD IT")
    moved = check_emulated("acme-1.0", "step-2", step_record(WORKS), {**meta, "profile": "nessie"}, directory=tmp_path)
    assert moved is not None and 'profile: "polaris" -> "nessie"' in moved
    # recording one section keeps the others
    check_emulated("acme-1.0", "step-4", step_record(NOT_APPLICABLE, "read-only"), meta, record=True, directory=tmp_path)
    saved = json.loads((tmp_path / "acme-1.0.json").read_text())
    assert saved["step-2"] == {"outcome": WORKS} and saved["step-4"]["why"] == "read-only" and saved["family"] == "acme"


def test_emulated_rows_say_their_source_and_notes_carry_how_and_reference(tmp_path: Path) -> None:
    meta = {"family": "polaris", "release": "9.9", "profile": "polaris"}
    record = doctor_record(REPORT, {"refresh-endpoint": "polaris#2341"})
    check_emulated("polaris-9.9", "doctor", record, meta, record=True, directory=tmp_path / "emulated")
    check_emulated("polaris-9.9", "step-2", step_record(REFUSED, "no stageCreate | here"), meta, record=True,
                   directory=tmp_path / "emulated")
    table = render_matrix(tmp_path)
    row = next(line for line in table.splitlines() if line.startswith("| `polaris` |"))
    assert "| emulated polaris 9.9 (tests/emulators) | emulator (9.9) |" in row and "degraded [2]" in row and "tables **fail** [1]" in row
    assert "- [2] degraded: " + WITHOUT["refresh-endpoint"][1] in table and "ref: polaris#2341" in table
    assert render_matrix_notes(tmp_path).splitlines()[1].startswith("- [2] degraded: ")
    pointed = render_matrix(tmp_path, notes="NOTES")  # the README's form: notes elsewhere, pointed to
    assert "[2] degraded" not in pointed and pointed.endswith("The notes [n]: NOTES.")
    assert "| `nessie` | emulated (documented behaviour on loopback, tests/emulators; not recorded) | emulator |" in table
    assert "| `rustfs` | reference only (vendor docs, not run here) | reference only |" in table
    docs = render_emulated_table(tmp_path / "emulated")
    assert "| polaris 9.9 | emulator (`polaris-9.9`) | `polaris` | refused: \"no stageCreate \\| here\" | exit 1:" in docs


def test_a_recordings_pyiceberg_cell_is_its_user_path_step_6() -> None:
    """The doctor runs of the recorded catalogs do not probe PyIceberg; the user path does (step 6):
    the PyIceberg column shows that step, e.g. real Nessie's, which signs every request."""
    column = 3 + next(i for i, (title, _) in enumerate(COLUMNS) if title.startswith("PyIceberg"))
    rows = [line.split(" | ") for line in render_matrix(notes=README_NOTES).splitlines() if "nessie 0.99.0" in line]
    assert rows and rows[0][column] == "works", rows


def test_a_row_checked_against_a_real_servers_recorded_answers_says_so(tmp_path: Path) -> None:
    meta = {"family": "polaris", "release": "1.4.1", "profile": "polaris",
            "checked_against": "tests/emulators/observed/polaris-1.4.1.json"}
    check_emulated("polaris-1.4.1", "doctor", doctor_record(REPORT), meta, record=True, directory=tmp_path / "emulated")
    row = next(line for line in render_matrix(tmp_path).splitlines() if line.startswith("| `polaris` |"))
    assert ("| emulated polaris 1.4.1 (tests/emulators), checked against recorded real answers "
            "(tests/emulators/observed/polaris-1.4.1.json) | emulator (1.4.1), checked against recorded real answers |") in row
    docs = render_emulated_table(tmp_path / "emulated")
    assert "| polaris 1.4.1 | emulator, checked against recorded real answers (`polaris-1.4.1`) | `polaris` |" in docs
    assert any(e.get("checked_against") for e in load_emulated().values())  # the shipped matrix has such a row


def test_the_store_table_says_which_emulator_and_stacks_each_store_is_tested_on(tmp_path: Path) -> None:
    from pyspark_catalog_ext.doctor.store_matrix import STORES_DIR, load_stores, render_store_table

    recorded = load_stores()
    assert set(recorded) == {"adls", "gcs"}
    assert recorded["adls"]["emulator"] == "Azurite 3.35.0"
    assert recorded["gcs"]["emulator"] == "fake-gcs-server 1.56.1 behind a token-checking front"
    rows = {line.split(" | ")[0].lstrip("| "): line for line in render_store_table().splitlines() if line.startswith("| ")}
    assert rows["S3"].startswith("| S3 | SeaweedFS") and "Spark 4.0 × 1.11.0" in rows["S3"]
    for store in ("ADLS", "GCS"):
        cells = rows[store].split(" | ")
        assert cells[1] == recorded[store.lower()]["emulator"] and "Spark 4.0 × 1.11.0" in cells[5], cells
        assert "works: committed: reload; staged: re-stage" in rows[store]
    assert "1.10.2 takes 1.10.0, 1.11.0 takes 1.11.0, 1.12.0 takes 1.11.0" in rows["GCS"]  # from store-jars.json
    # The doctor cells come from the recordings: another recording, another cell.
    changed = json.loads((STORES_DIR / "gcs.json").read_text())
    changed["doctor-neither"]["store-refresh"] = {"outcome": "refused", "doctor": "gcs: committed: reload; staged: none"}
    (tmp_path / "gcs.json").write_text(json.dumps(changed))
    assert "refused: committed: reload; staged: none" in render_store_table(tmp_path)
    assert "| ADLS | not recorded |" in render_store_table(tmp_path)


def test_the_rest_fixture_row_names_the_stores_it_was_tested_on() -> None:
    table = render_matrix()
    row = next(line for line in table.splitlines() if "iceberg-rest-fixture 1.11.0 on SeaweedFS" in line)
    assert "| S3 (SeaweedFS); ADLS (Azurite 3.35.0); GCS (fake-gcs-server 1.56.1 behind a token-checking front) |" in row
    main = table.split("\n\n", 1)[0].splitlines()  # the support table, not the store or inventory tables
    others = [line for line in main if line.startswith("| `") and "iceberg-rest-fixture" not in line]
    assert others and all("| S3 (SeaweedFS) |" in line or "| — |" in line for line in others)


def test_docs_doctor_store_table_is_rendered_from_the_recordings() -> None:
    from pyspark_catalog_ext.doctor.matrix_tables import STORE_TABLE_LINK
    from pyspark_catalog_ext.doctor.store_matrix import render_store_table

    assert block(ROOT / "docs" / "doctor.md", "store-matrix") == render_store_table().strip(), f"docs/doctor.md's store table {STALE}"
    assert STORE_TABLE_LINK in render_matrix(notes=README_NOTES) and "## Stores tested" in (ROOT / "docs" / "doctor.md").read_text()
