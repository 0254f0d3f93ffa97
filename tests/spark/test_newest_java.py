"""Why the Java check refuses Java 23+ for Spark up to 4.1 (tests/unit/spark/test_java_check.py): on the real
JDK 25 installed beside OpenJDK 17 here, plain PySpark with a jar does not start."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

TEMURIN_25 = Path("/usr/lib/jvm/temurin-25-jdk-amd64")


@pytest.mark.skipif(not (TEMURIN_25 / "bin" / "java").exists(), reason="no JDK 25 on this machine")
def test_spark_with_jars_does_not_start_on_java_25_which_is_why_it_is_refused(tmp_path):
    """The reason for the limit, on the real JDK: plain PySpark (not this package) with one jar in
    spark.jars dies in spark-submit with Hadoop's Subject.getSubject. When a Spark line starts here,
    this fails, and the limit can move."""
    jar = tmp_path / "empty.jar"
    with zipfile.ZipFile(jar, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    script = (f"from pyspark.sql import SparkSession\n"
              f"SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')"
              f".config('spark.jars', {str(jar)!r}).getOrCreate().range(1).count()\n")
    env = {**os.environ, "JAVA_HOME": str(TEMURIN_25), "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "getSubject is not supported" in proc.stderr, proc.stderr[-2000:]
