#!/usr/bin/env python3
"""Regenerate the support matrix from real `pyspark-catalog-ext doctor` runs, and the README.

Runs, each a real doctor subprocess with Spark included:
  * profile `local`     - the doctor starts its own embedded lakehouse (SeaweedFS `weed mini`);
  * profile `seaweedfs` - a SeaweedFS started here, reached by --uri/--warehouse/--credential.
Each run is saved with `--save-matrix` as pyspark_catalog_ext/resources/matrix/<profile>.json.
Then README.md is rewritten between the markers
  <!-- support-matrix:begin --> ... <!-- support-matrix:end -->  (`doctor --print-matrix`)
  <!-- doctor-run:begin --> ... <!-- doctor-run:end -->          (the seaweedfs run's table)

usage (from the repo root):
  .venv/bin/python scripts/update_matrix.py            # run the doctor, then update README
  .venv/bin/python scripts/update_matrix.py --readme   # only re-render README from saved runs
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CLI = [sys.executable, "-m", "pyspark_catalog_ext.cli", "doctor"]


def run(args: list[str]) -> subprocess.CompletedProcess:
    print("+ doctor", " ".join(a if "secret" not in a else "lakeadmin:***" for a in args), file=sys.stderr)
    proc = subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise SystemExit(f"doctor {args[:2]} exited {proc.returncode}; matrix not updated")
    return proc


def replace_block(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"README.md has no {begin} ... {end} block")
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    return pattern.sub(lambda _: f"{begin}\n{body.strip()}\n{end}", text, count=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readme", action="store_true", help="only re-render the README from the saved runs")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from pyspark_catalog_ext.doctor.matrix import render_matrix
    from pyspark_catalog_ext.lakehouse.server import start_lakehouse

    text = README.read_text()
    if not args.readme:
        run(["--profile", "local", "--save-matrix"])
        with start_lakehouse() as lake:
            info = lake.info
            proc = run(["--profile", "seaweedfs", "--uri", info.iceberg_uri, "--warehouse", info.warehouse,
                        "--credential", info.credential, "--server-label", "SeaweedFS 4.48 (weed mini)",
                        "--save-matrix"])
        shown = proc.stdout.replace(info.secret_key, "***")
        command = (f"$ pyspark-catalog-ext doctor --profile seaweedfs --uri {info.iceberg_uri} "
                   f"--warehouse {info.warehouse} --credential {info.access_key}:***")
        shown = shown.split("matrix entry written to")[0].rstrip()
        text = replace_block(text, "doctor-run", f"```\n{command}\n{shown}\n```")
    text = replace_block(text, "support-matrix", render_matrix())
    README.write_text(text)
    print("README.md and pyspark_catalog_ext/resources/matrix/ updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
