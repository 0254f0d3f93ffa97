"""Issue 19: the shim's numbers in Spark's own metrics system. A spark-submit job with the
PrometheusServlet sink outlives fast-expiring credentials in a CTAS and then reads its driver's
/metrics/prometheus over HTTP while still running: refreshes by strategy, the seconds to the
earliest expiry and the commits are there under the plugin's namespace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from tests.spark.test_spark_submit import LIFETIME, SPARK_SUBMIT, cli_properties, expiring, parsed, slow_ctas

__all__ = ["expiring"]  # the module-scoped fixture, shared with test_spark_submit

PREFIX = "plugin_io_catalogext_shim_CatalogExtPlugin_"
SINKS = {
    "spark.ui.enabled": "true",
    "spark.ui.port": "0",  # any free port: the job asks Spark for its UI address
    "spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
    "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus",
}


def plugin_metrics(lines: list[str]) -> dict[str, float]:
    """`metrics_<app>_driver_plugin_..._<name>_Count{type="counters"} 3` -> {"<name>_Count": 3.0}."""
    found = {}
    for line in lines:
        match = re.match(r"^\S*?_driver_" + PREFIX + r"(\w+)\{[^}]*\}\s+(\S+)$", line)
        if match:
            found[match.group(1)] = float(match.group(2))
    return found


def test_running_job_publishes_refreshes_expiry_and_commits_in_prometheus(lakehouse, expiring, tmp_path):
    catalog_proxy, s3_proxy = expiring
    s3_proxy.reset_counters()
    props = cli_properties(tmp_path, lakehouse, catalog_proxy.url)
    # Java properties: the last of a repeated key wins, so these override spark.ui.enabled=false.
    props.write_text(props.read_text() + "".join(f"{k} {v}\n" for k, v in SINKS.items()))
    table = f"lake.db.metrics_{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run([str(SPARK_SUBMIT), "--master", "local[2]", "--properties-file", str(props),
                           str(Path(__file__).resolve().parents[1].joinpath("jobs", "metrics_job.py")),
                           json.dumps({"ctas": slow_ctas(table), "table": table})],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-5000:]
    assert parsed(proc, "COUNT") == "3000"
    lines = [line[len("METRIC "):] for line in proc.stdout.splitlines() if line.startswith("METRIC ")]
    metrics = plugin_metrics(lines)
    assert metrics, "no catalog-ext metric on /metrics/prometheus:\n" + "\n".join(lines[:40])
    print("\n" + "\n".join(line for line in lines if PREFIX in line))

    assert metrics.get("refresh_re_stage_refreshed_Count", 0) > 0, metrics  # the staged CTAS re-staged
    expiry = next(v for k, v in metrics.items() if k.startswith("expiry_earliest_seconds"))
    assert 0 < expiry <= LIFETIME, metrics
    assert metrics.get("commits_committed_Count", 0) >= 1, metrics
    assert metrics.get("catalog_requests_Count", 0) >= 3, metrics  # config, stage-create, commit, load...
    assert s3_proxy.total_rejected == 0, s3_proxy.rejected
