"""Moved: the event stream is `pyspark_catalog_ext.events.jvm`."""

raise ImportError("pyspark_catalog_ext.governance.jvm_events moved to pyspark_catalog_ext.events.jvm; import that instead")
