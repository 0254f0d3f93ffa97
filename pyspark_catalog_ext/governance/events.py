"""Moved: the event stream is `pyspark_catalog_ext.events`."""

raise ImportError("pyspark_catalog_ext.governance.events moved to pyspark_catalog_ext.events; import that instead")
