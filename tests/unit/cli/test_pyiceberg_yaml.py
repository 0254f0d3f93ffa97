"""A broken `.pyiceberg.yaml` given to --from-pyiceberg is one line naming the file and line."""

from __future__ import annotations

import pytest

from tests.conftest import assert_one_line_error, run_cli


@pytest.mark.parametrize("text, line, problem", [
    ("catalog:\n  prod:\n    uri: http://127.0.0.1:9\n   warehouse: [oops\n", 4, "expected <block end>"),
    ("catalog:\n  prod:\n    uri: http://127.0.0.1:9\n    uri: http://127.0.0.1:8\n", 4, "Duplicate key 'uri'"),
])
def test_broken_pyiceberg_yaml_is_one_line_with_file_and_line(tmp_path, text, line, problem):
    path = tmp_path / ".pyiceberg.yaml"
    path.write_text(text)
    proc = run_cli("spark-conf", "--profile", "seaweedfs", "--from-pyiceberg", "prod", "--jars", "none",
                   env={"PYICEBERG_HOME": str(tmp_path)})
    assert_one_line_error(proc, f"{path} line {line}: invalid YAML", problem)


def test_valid_pyiceberg_yaml_still_works(tmp_path):
    (tmp_path / ".pyiceberg.yaml").write_text("catalog:\n  prod:\n    uri: http://127.0.0.1:9\n    warehouse: wh\n"
                                              "    credential: a:b\n")
    proc = run_cli("spark-conf", "--profile", "seaweedfs", "--from-pyiceberg", "prod", "--jars", "none",
                   "--format", "defaults", env={"PYICEBERG_HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "spark.sql.catalog.lake.warehouse wh" in proc.stdout.splitlines()
