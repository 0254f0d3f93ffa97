"""The notebooks run top to bottom in a real Jupyter kernel (nbclient + ipykernel), so they can't rot.

quickstart.ipynb builds its own lakehouse and session. databricks_quickstart.py is in Databricks
source format and starts from a `spark` the cluster configured: here the test plays the cluster,
writing `spark-conf --format defaults` into a properties file the kernel's session is built from.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests.spark.test_spark_submit import assert_outlived, cli_properties, expiring  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
HEADER = "# Databricks notebook source"
SEPARATOR = "\n# COMMAND ----------\n"
KERNEL = "pce-test-python"


def databricks_to_ipynb(source: str) -> nbformat.NotebookNode:
    """A Databricks source notebook as an nbformat 4.5 notebook: one cell per COMMAND block,
    `# MAGIC %md` blocks as markdown. Any other magic is refused: Jupyter could not run it."""
    header, _, body = source.partition("\n")
    assert header == HEADER, f"not a Databricks source notebook: the first line must be {HEADER!r}"
    cells = []
    for index, block in enumerate(body.split(SEPARATOR), 1):
        text = block.strip("\n")
        lines = text.splitlines()
        if lines and lines[0].startswith("# MAGIC"):
            assert all(line.startswith("# MAGIC") for line in lines), f"cell {index} mixes MAGIC and code lines"
            magic = [line[len("# MAGIC "):] if line.startswith("# MAGIC ") else "" for line in lines]
            assert magic[0].startswith("%md"), f"cell {index}: only %md magics can run here, not {magic[0]!r}"
            magic[0] = magic[0][len("%md"):].strip()
            cells.append(new_markdown_cell("\n".join(magic).strip("\n"), id=f"cell-{index:02d}"))
        else:
            jupyter_only = [line for line in lines if line.lstrip().startswith(("%", "!"))]
            assert not jupyter_only, f"cell {index} uses Jupyter magics Databricks can't import: {jupyter_only}"
            cells.append(new_code_cell(text, id=f"cell-{index:02d}"))
    return new_notebook(cells=cells)


def execute(nb: nbformat.NotebookNode, tmp_path: Path, env: dict[str, str]) -> str:
    """Runs `nb` in a fresh ipykernel of this interpreter (a kernelspec in a temp dir, so a fresh CI
    venv needs no `ipykernel install`); returns everything its code cells printed."""
    spec_dir = tmp_path / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "pce test", "language": "python"}))
    km = KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")]))
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "pce test", "language": "python"}
    client = NotebookClient(nb, km=km, timeout=600, kernel_name=KERNEL, resources={"metadata": {"path": str(tmp_path)}})
    kernel_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                  "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, **env}
    try:
        client.execute(env=kernel_env)
    finally:  # nbclient leaves a kernel it was handed running
        if km.has_kernel:
            km.shutdown_kernel(now=False)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "a code cell did not run"
    return "".join(out.get("text", "") for cell in code for out in cell.outputs if out.output_type == "stream")


def test_quickstart_notebook_validates_as_nbformat_4_5():
    raw = json.loads((NOTEBOOKS / "quickstart.ipynb").read_text(encoding="utf-8"))
    assert (raw["nbformat"], raw["nbformat_minor"]) == (4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nbformat warns (and will refuse) on cells without ids
        nbformat.validate(nbformat.from_dict(raw))
    ids = [cell["id"] for cell in raw["cells"]]
    assert len(set(ids)) == len(ids)


def test_quickstart_notebook_executes(tmp_path):
    # A fresh kernel: the notebook starts its own lakehouse and SparkSession.
    nb = nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4)
    out = execute(nb, tmp_path, {})
    assert len([c for c in nb.cells if c.cell_type == "code"]) == 10
    assert "published rows: 2000" in out
    assert "strategy:" in out
    assert "renewals via reload" in out  # the long PyIceberg read renewed its keys
    assert "run: CALL lake.system.rewrite_data_files(table => 'quickstart.daily'" in out  # the dry run
    assert "1 table(s): 1 maintained, 0 skipped, 0 failed" in out  # the run's summary
    assert ("events: [('python', 'maintenance.action.started', None), ('jvm', 'commit.started', None), "
            "('jvm', 'commit.finished', 'committed'), ('python', 'maintenance.action.finished', 'ok')]") in out
    assert "rows via PyIceberg: 5000" in out
    assert "secret_key=" not in out  # its own lakehouse's keys are random; LakehouseInfo's repr leaves them out


def test_databricks_source_converts_to_nbformat_4_5():
    nb = databricks_to_ipynb((NOTEBOOKS / "databricks_quickstart.py").read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbformat.validate(nb)
    kinds = [cell.cell_type for cell in nb.cells]
    assert kinds[0] == "markdown" and kinds.count("code") == 4, kinds
    assert not any("spark =" in cell.source or "builder" in cell.source for cell in nb.cells if cell.cell_type == "code"), \
        "the notebook must use the cluster's `spark`, not build one"


@pytest.mark.parametrize("bad, why", [("# MAGIC %sql\n# MAGIC SELECT 1", "only %md"), ("%pip install x", "Jupyter magics")])
def test_databricks_converter_refuses_what_jupyter_cannot_run(bad, why):
    with pytest.raises(AssertionError, match=why):
        databricks_to_ipynb(f"{HEADER}\n{bad}\n")


def test_databricks_notebook_executes_on_a_configured_cluster(lakehouse, expiring, tmp_path):
    catalog_proxy, s3_proxy = expiring
    s3_proxy.reset_counters()
    catalog_proxy.reset_counters()
    # The cluster: spark-defaults.conf from `spark-conf --format defaults`, credentials living 6 s.
    defaults = cli_properties(tmp_path, lakehouse, catalog_proxy.url)
    nb = databricks_to_ipynb((NOTEBOOKS / "databricks_quickstart.py").read_text(encoding="utf-8"))
    # What the cluster does before the first cell: a session from its settings (spark-submit reads the file).
    nb.cells.insert(0, new_code_cell("from pyspark.sql import SparkSession\n\n"
                                     "spark = SparkSession.builder.getOrCreate()\n"
                                     "spark.sparkContext.setLogLevel('ERROR')", id="cluster-setup"))
    out = execute(nb, tmp_path, {"PYSPARK_SUBMIT_ARGS": f"--master local[2] --properties-file {defaults} pyspark-shell"})
    assert "CTAS rows: 3000" in out, out
    assert_outlived(catalog_proxy, s3_proxy, "notebook_demo.orders")  # renewed while staged, no S3 call refused
    assert "lake.notebook_demo.orders | strategy:" in out, out
    assert "published rows: 2000" in out, out
    assert "run: CALL lake.system.rewrite_data_files(table => 'notebook_demo.orders'" in out, out  # the dry run
    assert lakehouse.info.secret_key not in out
