"""What a local-cluster job leaves behind, and its removal.

local-cluster's Workers put each application's executors under `$SPARK_HOME/work/<app id>`: a copy
of every jar the job added (~110 MB per executor) and the executors' logs. Nothing removes it, not
even a clean stop, so a whole test run left ~2.5 GB inside the venv's pyspark, on a machine whose
free disk also sizes the embedded lakehouse's storage. Jobs stop through `stop_and_remove_work`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any


def work_dir(spark: Any) -> Path:
    """Where this application's local-cluster executors keep their files (the driver JVM's Spark home)."""
    import pyspark

    sc = spark.sparkContext
    home = sc._jvm.java.lang.System.getenv("SPARK_HOME") or str(Path(pyspark.__file__).parent)
    return Path(home) / "work" / sc.applicationId


def stop_and_remove_work(spark: Any, keep: bool = False) -> Path:
    """Stop `spark` and remove its executors' directory unless `keep` (the caller reads their logs and
    removes it); returns that directory."""
    path = work_dir(spark)
    spark.stop()  # the Workers stop their executors before this returns
    if not keep:
        shutil.rmtree(path, ignore_errors=True)
    return path
