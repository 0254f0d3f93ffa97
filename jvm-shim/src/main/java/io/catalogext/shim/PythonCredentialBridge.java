package io.catalogext.shim;

/**
 * Implemented in Python and registered through Py4J. The driver's registry calls it when a table
 * needs fresh credentials; Python picks the strategy and talks to the catalog.
 */
public interface PythonCredentialBridge {
  /**
   * @param requestJson the table's context (may include its storage-refresh-tokens)
   * @return {"strategy", "config", "storage-credentials"} or {"error": one-line message}
   */
  String fetchCredentials(String requestJson);
}
