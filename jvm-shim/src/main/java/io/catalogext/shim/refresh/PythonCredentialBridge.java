package io.catalogext.shim.refresh;


/**
 * Implemented in Python and registered through Py4J by {@code attach(spark, sources=...)}. The
 * driver's registry calls it, with a timeout, for tables of a catalog served by a user source
 * (what only Python can do: a boto3 AssumeRole, a company token service); the catalog's own
 * strategies run in the JVM ({@link CatalogRefresher}).
 */
public interface PythonCredentialBridge {
  /**
   * @param requestJson the table's identity and status (no secrets)
   * @return {"strategy", "config", "storage-credentials"} or {"error": one-line message}
   */
  String fetchCredentials(String requestJson);
}
