"""Build hook: a wheel must carry the Java shim, so build_py compiles it into the package
(with Maven, jvm-shim/pom.xml; javac where Maven is not installed), and pip users need neither.

Editable installs skip it: at run time `pyspark_catalog_ext.spark.shim_build.shim_jar()` builds from
`jvm-shim/` into the user cache (and prefers a packaged jar only when its source hash matches).
"""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class build_py_with_shim(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        sys.path.insert(0, str(ROOT))
        try:
            from pyspark_catalog_ext.spark import shim_build as jvm  # the one place that knows how to build the shim
        finally:
            sys.path.pop(0)
        src = ROOT / "jvm-shim" / "src" / "main" / "java"
        out = Path(self.build_lib) / "pyspark_catalog_ext" / "_jars" / jvm.SHIM_JAR_NAME
        jvm.check_java()
        if jvm.find_maven() is None:
            # The javac fallback compiles against pyspark's jars: fail fast (before downloading the
            # offline jars) under build isolation, which needs --no-build-isolation then.
            jvm._pyspark_jars_dir()
        print(f"building the Java shim into {out}", file=sys.stderr)
        jvm.build_shim(src, out, None, jvm.source_hash(src))


setup(cmdclass={"build_py": build_py_with_shim})
