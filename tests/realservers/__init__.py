"""Real catalog servers (Iceberg's REST fixture, Project Nessie) resolved from Maven Central and
started on loopback in front of the embedded SeaweedFS. See docs/real-catalogs.md."""
