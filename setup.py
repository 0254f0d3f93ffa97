"""Build hook: a wheel must carry the Java shim, so build_py compiles it into the package with Maven
(jvm-shim/pom.xml), and pip users need neither Maven nor a JDK. Building from source (`pip install .`,
`pip wheel .`, `python -m build`, an sdist) needs both; without them the build stops in one line.

The build runs in pip's isolated build environment, where the package's dependencies are not
installed: the Maven build is loaded from its one file (pyspark_catalog_ext/spark/jvm_deps/shim_maven.py,
standard library only), never through the package. Editable installs skip it: at run time
`pyspark_catalog_ext.spark.jvm_deps.shim_build.shim_jar()` builds from `jvm-shim/` into the user cache.
"""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "pyspark_catalog_ext"


def _shim_maven():
    spec = importlib.util.spec_from_file_location("_pce_shim_maven", PACKAGE / "spark" / "jvm_deps" / "shim_maven.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class build_py_with_shim(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        maven = _shim_maven()
        src = ROOT / "jvm-shim" / "src" / "main" / "java"
        pom = ROOT / "jvm-shim" / "pom.xml"
        specs = [PACKAGE / "resources" / name for name in maven.SHARED_SPEC_NAMES]
        out = Path(self.build_lib) / "pyspark_catalog_ext" / "_jars" / maven.SHIM_JAR_NAME
        if not maven.java_sources(src) or not pom.is_file():
            raise SystemExit(f"error: pyspark-catalog-ext: no Java shim sources at {src.parent.parent}; build from a full clone or sdist")
        print(f"building the Java shim into {out} with Maven", flush=True)
        try:
            maven.build_with_maven(pom, src, out, maven.source_hash(src, specs, pom))
        except maven.ShimBuildError as exc:
            raise SystemExit(f"error: pyspark-catalog-ext: {exc}") from None


setup(cmdclass={"build_py": build_py_with_shim})
