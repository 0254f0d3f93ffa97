"""Moved: the bridge of the driver JVM's events is `pyspark_catalog_ext.spark.jvm_events`."""

raise ImportError("pyspark_catalog_ext.governance.jvm_events moved to pyspark_catalog_ext.spark.jvm_events; import that instead")
