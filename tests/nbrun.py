"""A tiny notebook runner: executes the code cells of an .ipynb in order in one namespace.

No Jupyter dependency. Lines starting with `%` or `!` (magics) are refused rather than skipped,
so a notebook that needs them fails here instead of silently doing less.
"""

from __future__ import annotations

import json
import sys


def run(path: str) -> int:
    with open(path, encoding="utf-8") as fh:
        cells = json.load(fh)["cells"]
    namespace: dict = {"__name__": "__main__"}
    code_cells = [c for c in cells if c["cell_type"] == "code"]
    for index, cell in enumerate(code_cells, 1):
        source = "".join(cell["source"])
        if any(line.lstrip().startswith(("%", "!")) for line in source.splitlines()):
            raise SystemExit(f"cell {index} uses a notebook magic; notebooks here must be plain Python")
        print(f"--- cell {index}/{len(code_cells)}", flush=True)
        exec(compile(source, f"{path}#cell{index}", "exec"), namespace)
    print(f"--- notebook ok: {len(code_cells)} code cells", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1]))
