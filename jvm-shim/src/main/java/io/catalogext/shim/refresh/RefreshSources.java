package io.catalogext.shim.refresh;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.Json;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Where a driver entry's fresh credentials come from, and under which policy: the user's Python
 * source for a catalog that has one (through the Py4J bridge), else the catalog itself through the
 * refresh strategies. Either way bounded by the policy's timeout.
 */
public final class RefreshSources {
  private final Set<String> customSourceCatalogs = ConcurrentHashMap.newKeySet();
  private final Map<String, RefreshPolicy> policyOverrides = new ConcurrentHashMap<>();
  private volatile PythonCredentialBridge bridge;

  public void registerBridge(PythonCredentialBridge pythonBridge) {
    this.bridge = pythonBridge;
  }

  public void unregisterBridge() {
    this.bridge = null;
  }

  /** Tables of this catalog get an entry even when it vends nothing: a user source fills them. */
  public void enableCustomSource(String catalog) {
    customSourceCatalogs.add(catalog);
  }

  public boolean wantsTable(String catalog, boolean vended) {
    return vended || customSourceCatalogs.contains(catalog);
  }

  /**
   * A policy Python set for one catalog ({@code attach(policy=...)}): it wins over that catalog's own
   * {@code catalog-ext.refresh.*} properties for tables handed out from now on; other catalogs keep theirs.
   */
  public void setRefreshPolicy(String catalog, RefreshPolicy policy) {
    policyOverrides.put(catalog, policy);
  }

  /** The catalog's policy: one set from Python for this catalog, else its properties'. */
  public RefreshPolicy policyFor(CatalogSession session) {
    return policyOverrides.getOrDefault(session.name, session.policy);
  }

  /** The fresh credentials of {@code entry}, a table of catalog session {@code session}. */
  RefreshResult fetch(RefreshSubject entry, CatalogSession session) throws Exception {
    long timeoutMs = entry.policy().timeoutMs;
    String catalog = session.name;
    if (customSourceCatalogs.contains(catalog)) {
      PythonCredentialBridge b = bridge;
      if (b == null) {
        throw new IllegalStateException(
            "the Python credential source of catalog " + catalog + " is detached");
      }
      String request = Json.write(entry.describe()); // a user source gets the table, no tokens
      String response = BoundedCalls.call(
          "catalog " + catalog, () -> b.fetchCredentials(request), timeoutMs, "the Python credential source");
      JsonNode node = Json.read(response);
      if (node.hasNonNull("error")) {
        throw new IllegalStateException(node.get("error").asText());
      }
      return RefreshResult.fromJson(node);
    }
    return BoundedCalls.call(
        "catalog " + catalog, () -> CatalogRefresher.fetch(session, entry), timeoutMs, "the catalog request");
  }
}
