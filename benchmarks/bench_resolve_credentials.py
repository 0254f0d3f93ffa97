"""Benchmark 1: JVM resolveCredentials() with a warm cache, ours against AWS StaticCredentialsProvider.

Compiles jvm-shim/src/bench against the shim jar and runs it in one JVM, alternating rounds.
Target: ours at most 2x StaticCredentialsProvider.

    python benchmarks/bench_resolve_credentials.py [rounds] [iterations]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars  # noqa: E402
from pyspark_catalog_ext.spark.jvm_deps.jvm_stacks import installed_spark_version, min_java_for_stack, select_stack  # noqa: E402
from pyspark_catalog_ext.spark.jvm_deps.shim_build import shim_jar  # noqa: E402


def main() -> None:
    import pyspark

    classpath = [str(shim_jar()), *map(str, resolve_jars(stack=select_stack())), str(Path(pyspark.__file__).parent / "jars" / "*")]
    release = str(min_java_for_stack(installed_spark_version()))  # Spark 4's jars are Java 17 class files
    source = ROOT / "jvm-shim/src/bench/java/io/catalogext/shim/ResolveCredentialsBench.java"
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["javac", "--release", release, "-nowarn", "-d", out, "-cp", os.pathsep.join(classpath),
                        str(source)], check=True)
        subprocess.run(["java", "-cp", os.pathsep.join([out, *classpath]), "io.catalogext.shim.ResolveCredentialsBench",
                        *sys.argv[1:]], check=True, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
