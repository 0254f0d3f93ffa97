#!/usr/bin/env python3
"""Regenerate the support matrix from real `pyspark-catalog-ext doctor` runs, and the README.

Runs, each a real doctor subprocess with Spark included:
  * profile `local`     - the doctor starts its own embedded lakehouse (SeaweedFS `weed mini`);
  * profile `seaweedfs` - a SeaweedFS started here, reached by --uri/--warehouse/--credential.
Each run is saved with `--save-matrix` as pyspark_catalog_ext/resources/matrix/<profile>.json.
The emulated catalogs' rows come from resources/matrix/emulated/<family>-<release>.json, recorded
by the slow emulated suite (tests/slow/test_emulated_catalogs.py with CATALOG_EXT_RECORD_MATRIX=1,
or `--record-emulated` here). Then README.md, docs/doctor.md and docs/emulated-catalogs.md are rewritten between
  <!-- support-matrix:begin --> ... <!-- support-matrix:end -->    README (`doctor --print-matrix`)
  <!-- doctor-run:begin --> ... <!-- doctor-run:end -->            docs/doctor.md (the seaweedfs run's table)
  <!-- emulated-matrix:begin --> ... <!-- emulated-matrix:end -->  docs (catalog x step)
  <!-- support-matrix-notes:begin --> ... <!-- support-matrix-notes:end -->  docs (the README table's notes)
  <!-- store-matrix:begin --> ... <!-- store-matrix:end -->        docs/doctor.md (stores, emulators, stacks)

usage (from the repo root):
  .venv/bin/python scripts/update_matrix.py                    # run the doctor, then render
  .venv/bin/python scripts/update_matrix.py --readme           # only re-render from the recorded files
  .venv/bin/python scripts/update_matrix.py --record-emulated  # re-record the emulated suite, then render
  .venv/bin/python scripts/update_matrix.py --check            # exit 1 if README/docs differ from a render
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs" / "emulated-catalogs.md"
DOCTOR_DOC = ROOT / "docs" / "doctor.md"  # the sample run
EMULATED_SUITE = "tests/slow/test_emulated_catalogs.py"
CLI = [sys.executable, "-m", "pyspark_catalog_ext.cli", "doctor"]


def run(args: list[str]) -> subprocess.CompletedProcess:
    # the value after --credential is id:secret (random per lakehouse): show the id only
    shown = [a.split(":", 1)[0] + ":***" if i and args[i - 1] == "--credential" else a for i, a in enumerate(args)]
    print("+ doctor", " ".join(shown), file=sys.stderr)
    proc = subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise SystemExit(f"doctor {args[:2]} exited {proc.returncode}; matrix not updated")
    return proc


def replace_block(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"no {begin} ... {end} block in the file: put the markers back where the table goes")
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    return pattern.sub(lambda _: f"{begin}\n{body.strip()}\n{end}", text, count=1)


def rendered(readme: str, docs: str, doctor_doc: str) -> tuple[str, str, str]:
    """README, docs/emulated-catalogs.md and docs/doctor.md with their generated blocks re-rendered
    from the recorded files."""
    from pyspark_catalog_ext.doctor.matrix_tables import README_NOTES, render_emulated_table, render_matrix, render_matrix_notes
    from pyspark_catalog_ext.doctor.store_matrix import render_store_table

    docs = replace_block(docs, "emulated-matrix", render_emulated_table())
    return (replace_block(readme, "support-matrix", render_matrix(notes=README_NOTES)),
            replace_block(docs, "support-matrix-notes", render_matrix_notes()),
            replace_block(doctor_doc, "store-matrix", render_store_table()))


def record_emulated() -> None:
    """Run the emulated suite once, recording what each family's user sees (long: minutes)."""
    from pyspark_catalog_ext.doctor.matrix import RECORD_ENV

    print(f"+ {RECORD_ENV}=1 pytest {EMULATED_SUITE} -x", file=sys.stderr)
    proc = subprocess.run([sys.executable, "-m", "pytest", EMULATED_SUITE, "-x", "-q"], cwd=ROOT,
                          env={**os.environ, RECORD_ENV: "1"})
    if proc.returncode != 0:
        raise SystemExit(f"the emulated suite exited {proc.returncode}; recordings may be partial (see git diff)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--readme", action="store_true", help="only re-render README and docs from the recorded files")
    mode.add_argument("--record-emulated", action="store_true",
                      help="re-record the emulated catalogs (runs the slow emulated suite), then re-render")
    mode.add_argument("--check", action="store_true", help="exit 1 if README or docs differ from a fresh render")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from pyspark_catalog_ext.lakehouse.server import start_lakehouse

    if args.check:
        readme, docs, doctor_doc = README.read_text(), DOCS.read_text(), DOCTOR_DOC.read_text()
        fresh = rendered(readme, docs, doctor_doc)
        stale = [name for name, old, new in (("README.md", readme, fresh[0]), ("docs/emulated-catalogs.md", docs, fresh[1]),
                                             ("docs/doctor.md", doctor_doc, fresh[2])) if old != new]
        if stale:
            print(f"stale support matrix in {', '.join(stale)}: run scripts/update_matrix.py --readme", file=sys.stderr)
            return 1
        return 0
    if args.record_emulated:
        record_emulated()
    text = README.read_text()
    if not (args.readme or args.record_emulated):
        run(["--profile", "local", "--save-matrix"])
        with start_lakehouse() as lake:
            info = lake.info
            proc = run(["--profile", "seaweedfs", "--uri", info.iceberg_uri, "--warehouse", info.warehouse,
                        "--credential", info.credential, "--s3-endpoint", info.s3_endpoint,  # Trino's store (docs/clients.md)
                        "--server-label", "SeaweedFS 4.48 (weed mini)",
                        "--save-matrix"])
        shown = proc.stdout.replace(info.secret_key, "***")
        command = (f"$ pyspark-catalog-ext doctor --profile seaweedfs --uri {info.iceberg_uri} "
                   f"--warehouse {info.warehouse} --credential {info.access_key}:*** --s3-endpoint {info.s3_endpoint}")
        shown = shown.split("matrix entry written to")[0].rstrip()
        DOCTOR_DOC.write_text(replace_block(DOCTOR_DOC.read_text(), "doctor-run", f"```\n{command}\n{shown}\n```"))
    text, docs, doctor_doc = rendered(text, DOCS.read_text(), DOCTOR_DOC.read_text())
    README.write_text(text)
    DOCS.write_text(docs)
    DOCTOR_DOC.write_text(doctor_doc)
    print("README.md, docs/ and pyspark_catalog_ext/resources/matrix/ updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
