"""Spark setup: session builder, spark-conf, jars, the shim's build and its one typed Py4J boundary."""
