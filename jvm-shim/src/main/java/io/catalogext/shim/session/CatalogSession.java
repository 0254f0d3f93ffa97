package io.catalogext.shim.session;

import io.catalogext.shim.commit.CommitGuard;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.wire.TrustedOrigins;

import java.util.Map;
import java.util.function.LongSupplier;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.rest.RESTClient;

/**
 * One initialised catalog of this JVM (the shim's catalog class makes one in {@code initialize}):
 * its name and URI, the origins its credentials may go to, its refresh settings, its
 * {@link CommitGuard}, the path root and HTTP client of its table operations (the refresh reuses
 * both), and what the catalog turned out not to support. Every HTTP client the catalog derives
 * (withAuthSession makes new ones) and every step of them share this one object, so nothing about
 * a catalog lives in a static.
 */
public final class CatalogSession {
  /** The Spark catalog's name, as table contexts, events and status name it. */
  public final String name;
  /** The catalog's URI as the user configured it. */
  public final String uri;
  /** Where the catalog's credentials may go: its URI's origin and those the user configured. */
  public final TrustedOrigins trust;
  /** catalog-ext.refresh.* of this catalog (the Python face sets them, or spark-conf does). */
  public final RefreshPolicy policy;
  /** Idempotency-Key, retries and reconciliation of this catalog's mutations. */
  public final CommitGuard guard = new CommitGuard();
  /**
   * Endpoints this catalog lacks (404, 405, 501 or "no route" to GET .../credentials, or not in
   * its advertised endpoints), each forgotten after an hour.
   */
  public final MissingEndpoints unsupported;

  /** Path up to "namespaces/" as the catalog's own requests use it (v1/{prefix}/). */
  private volatile String pathRoot;
  /**
   * The auth-session-bound HTTP client of the catalog's last table operation: the refresh
   * strategies reuse it, with its auth, token refresh, scope, TLS and headers.
   */
  private volatile RESTClient refreshClient;

  /**
   * A session for catalog {@code name} with the catalog properties the user configured.
   *
   * @throws IllegalArgumentException one line naming a bad catalog-ext.refresh.* value or URL
   */
  public CatalogSession(String name, Map<String, String> props) {
    this(name, props, System::currentTimeMillis);
  }

  /** The same on {@code clockMs}, the clock the missing-endpoint memory forgets by (a test's). */
  public CatalogSession(String name, Map<String, String> props, LongSupplier clockMs) {
    this.unsupported = new MissingEndpoints(clockMs);
    this.name = name;
    this.uri = props.get(CatalogProperties.URI);
    this.trust = TrustedOrigins.fromUserProperties(name, props);
    this.policy = RefreshPolicy.fromProperties(props);
  }

  /** Records the client and path root a table operation of this catalog just used. */
  public void observedTableOperation(RESTClient client, String root) {
    this.refreshClient = client;
    this.pathRoot = root;
  }

  /** The client the refresh strategies send through, or null before any table was handed out. */
  public RESTClient refreshClient() {
    return refreshClient;
  }

  /** {@code v1/{prefix}/} as the catalog's table paths start, or null before any table operation. */
  public String pathRoot() {
    return pathRoot;
  }

  @Override
  public String toString() {
    return "CatalogSession(" + name + ")"; // no URI or settings: repr stays free of anything private
  }
}
