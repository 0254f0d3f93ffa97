"""Spark setup: session builder, spark-conf, the jars and the shim's build (jvm_deps/) and its one typed Py4J boundary."""
