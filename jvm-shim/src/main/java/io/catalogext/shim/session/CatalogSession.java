package io.catalogext.shim.session;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.commit.CommitGuard;
import io.catalogext.shim.http.ConfigCapture;
import io.catalogext.shim.wire.RemoteSigning;
import io.catalogext.shim.config.RefreshPolicy;

import java.util.Map;
import java.util.function.LongSupplier;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.rest.RESTClient;

/**
 * One initialised catalog of this JVM ({@link ExtRESTCatalog#initialize} makes one): its name and
 * URI, its refresh settings, its {@link CommitGuard}, the path root and HTTP client of its table
 * operations (the refresh reuses both), and what the catalog turned out not to support. Every HTTP
 * client the catalog derives (withAuthSession makes new ones) and every decorator of them
 * ({@code CatalogHttpFunnel} and its steps, {@link ConfigCapture}) share this one
 * object, so nothing about a catalog lives in a static.
 */
public final class CatalogSession {
  /** The Spark catalog's name, as table contexts, events and status name it. */
  public final String name;
  /** The catalog's URI: refresh endpoints elsewhere never get our credentials. */
  public final String uri;
  /** The user's own {@code s3.signer.uri}, or null: a signer the user trusts with the catalog's token. */
  public final String userSignerUri;
  /** catalog-ext.refresh.* of this catalog (the Python face sets them, or spark-conf does). */
  public final RefreshPolicy policy;
  /** Idempotency-Key, retries and reconciliation of this catalog's mutations. */
  public final CommitGuard guard = new CommitGuard();
  /**
   * Strategies this catalog lacks (404, 405, 501 or "no route" to GET .../credentials, or not in
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
   * A session for catalog {@code name} with its (timeout-completed) catalog properties.
   *
   * @throws IllegalArgumentException one line naming a bad catalog-ext.refresh.* value
   */
  public CatalogSession(String name, Map<String, String> props) {
    this(name, props, System::currentTimeMillis);
  }

  /** The same on {@code clockMs}, the clock the missing-endpoint memory forgets by (a test's). */
  public CatalogSession(String name, Map<String, String> props, LongSupplier clockMs) {
    this.unsupported = new MissingEndpoints(clockMs);
    this.name = name;
    this.uri = props.get(CatalogProperties.URI);
    this.userSignerUri = props.get(RemoteSigning.SIGNER_URI);
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
