"""`pyspark-catalog-ext doctor`: conformance probes and a support matrix for Iceberg REST catalogs.

One job per module (`registry` declares a probe, `suite` orders them, `runner` runs them, `report`
prints them, `matrix*` keep and render the support matrix); the command line is
`pyspark_catalog_ext.cli.doctor`. Library use: `run_doctor("seaweedfs", uri=..., warehouse=...)`
returns a report (`exit_code`, `results`). Importing this package imports no Spark, PyIceberg or
boto3.

Why: docs/doctor.md, section 'Library use and modules'.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_doctor"]


def run_doctor(*args: Any, **kwargs: Any) -> Any:
    """See `pyspark_catalog_ext.doctor.runner.run_doctor`."""
    from pyspark_catalog_ext.doctor.runner import run_doctor as _run

    return _run(*args, **kwargs)
