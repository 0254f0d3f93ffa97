"""`pyspark-catalog-ext doctor`: conformance probes and a support matrix for Iceberg REST catalogs.

Modules, one job each: `result` (statuses, outcomes), `context` (shared run state, cleanup,
secret scrubbing), `probes`, `refresh_probes`, `commit_probes`, `signing_probes` (catalog probes;
`suite` orders them), `s3scope` (vended-credential scope with boto3), `engines` (PyIceberg and
Spark), `runner` (connection, preflight, signals, cleanup), `report` (table, summary, JSON), `matrix`
(saved runs), `matrix_tables` (-> README table), `store_matrix` (store table), `profile_listing`
(`--print-profiles`). The command line is `pyspark_catalog_ext.cli.doctor`.

Library use::

    from pyspark_catalog_ext.doctor import run_doctor
    report = run_doctor("seaweedfs", uri="http://127.0.0.1:8181", warehouse="warehouse",
                        credential="id:secret", skip=["spark"])
    report.exit_code, [(r.id, r.status) for r in report.results]

Importing this package imports no Spark, PyIceberg or boto3.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_doctor"]


def run_doctor(*args: Any, **kwargs: Any) -> Any:
    """See `pyspark_catalog_ext.doctor.runner.run_doctor`."""
    from pyspark_catalog_ext.doctor.runner import run_doctor as _run

    return _run(*args, **kwargs)
