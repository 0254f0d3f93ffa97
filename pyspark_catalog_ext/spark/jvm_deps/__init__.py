"""Which jars and which shim a Spark session gets, and from where: the Spark x Iceberg stack
(jvm_stacks), its pinned jars from Maven Central or PyPI wheels (jars, maven_jars, pypi_jars), a
store's SDK bundle (store_jars), a Maven repository of them for `--packages` (maven_repo), and the
Java shim built from jvm-shim/ (shim_build, shim_maven)."""
