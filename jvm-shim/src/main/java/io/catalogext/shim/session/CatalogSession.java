package io.catalogext.shim.session;

import io.catalogext.shim.commit.CommitGuard;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.wire.TrustedOrigins;

import java.lang.ref.WeakReference;
import java.security.SecureRandom;
import java.util.Base64;
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
  private static final SecureRandom RANDOM = new SecureRandom();

  /** The Spark catalog's name, as table contexts, events and status name it. */
  public final String name;
  /**
   * Random, one per initialised catalog: what credential handles and events are bound to. On a
   * shared driver (Spark Connect) two sessions' catalogs of one name are two different sessions,
   * and a catalog defined at run time with the same name is a third.
   */
  public final String id;
  /** The Spark session that initialised this catalog, held weakly; null outside Spark. */
  private final WeakReference<Object> owner;
  /** The catalog's URI as the user configured it. */
  public final String uri;
  /** Where the catalog's credentials may go: its URI's origin and those the user configured. */
  public final TrustedOrigins trust;
  /** The settings only the user makes (HTTP client, S3 client factory), as the user made them. */
  public final UserOnlySettings userOnly;
  /** Storage endpoints server answers name, and which of them a table's FileIO may use. */
  public final ServerEndpoints endpoints;
  /** catalog-ext.refresh.* of this catalog (the Python face sets them, or spark-conf does). */
  public final RefreshPolicy policy;
  /** Idempotency-Key, retries and reconciliation of this catalog's mutations. */
  public final CommitGuard guard = new CommitGuard();
  /**
   * Endpoints this catalog lacks (404, 405, 501 or "no route" to GET .../credentials), each
   * forgotten after an hour.
   */
  public final MissingEndpoints unsupported;
  /**
   * The key lifetime and server clock skew this session's tables taught it: this session's alone
   * (another session's catalog of the same name learns for itself), gone with the session.
   */
  public final ServerClocks clocks;

  /** Path up to "namespaces/" as the catalog's own requests use it (v1/{prefix}/). */
  private volatile String pathRoot;
  /**
   * The catalog's own (contextual) auth-session client that last handed out a table, never a
   * table-scoped one: catalog reads reuse it, with its auth, token refresh, scope, TLS and headers,
   * and so does the refresh of a table entry that holds no client of its own (each entry refreshes
   * under its own table's login).
   */
  private volatile RESTClient refreshClient;

  /**
   * A session for catalog {@code name} with the catalog properties the user configured.
   *
   * @throws IllegalArgumentException one line naming a bad catalog-ext.refresh.* value or URL
   */
  public CatalogSession(String name, Map<String, String> props) {
    this(name, props, System::currentTimeMillis, null);
  }

  /** The same on {@code clockMs}, the clock the missing-endpoint memory forgets by (a test's). */
  public CatalogSession(String name, Map<String, String> props, LongSupplier clockMs) {
    this(name, props, clockMs, null);
  }

  /**
   * A session of Spark session {@code sparkSession} (compared by identity only; null outside Spark):
   * status shows its tables to that Spark session alone.
   */
  public CatalogSession(String name, Map<String, String> props, LongSupplier clockMs, Object sparkSession) {
    this.unsupported = new MissingEndpoints(clockMs);
    this.name = name;
    this.clocks = new ServerClocks(name);
    byte[] random = new byte[16];
    RANDOM.nextBytes(random);
    this.id = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
    this.owner = sparkSession == null ? null : new WeakReference<>(sparkSession);
    this.uri = props.get(CatalogProperties.URI);
    this.trust = TrustedOrigins.fromUserProperties(name, props);
    this.userOnly = UserOnlySettings.fromUserProperties(name, this.uri, props);
    this.endpoints = new ServerEndpoints(name, props, this.trust);
    this.policy = RefreshPolicy.fromProperties(props);
  }

  /**
   * Whether this catalog was initialised by Spark session {@code sparkSession} (the same object;
   * null: initialised outside any Spark session).
   */
  public boolean ownedBy(Object sparkSession) {
    if (owner == null) {
      return sparkSession == null;
    }
    Object held = owner.get();
    return held != null && held == sparkSession;
  }

  /**
   * Records the catalog-level client and path root that just handed out a table (the funnel passes
   * only clients that are not one table's own auth session).
   */
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
