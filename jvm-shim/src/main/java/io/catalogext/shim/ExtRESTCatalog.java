package io.catalogext.shim;

import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.http.CatalogClients;
import io.catalogext.shim.http.ConfigCapture;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.spark.PurgeStatements;
import io.catalogext.shim.spark.SparkCompat;
import io.catalogext.shim.wire.RestJson;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.iceberg.catalog.SessionCatalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.rest.RESTClient;

/**
 * Iceberg's REST catalog with an observing HTTP client (Spark: {@code catalog-impl}). It behaves
 * exactly like {@code type=rest}; it only learns which tables were handed out, with which
 * credentials, so they can be refreshed.
 */
public class ExtRESTCatalog extends RESTCatalog {
  /**
   * This catalog's session, made by {@link #initialize}. A holder because Iceberg takes the client
   * builder in the constructor (before {@code this} exists) and calls it only from initialize.
   */
  private final AtomicReference<CatalogSession> session;

  public ExtRESTCatalog() {
    this(new AtomicReference<>());
  }

  private ExtRESTCatalog(AtomicReference<CatalogSession> session) {
    super(SessionCatalog.SessionContext.createEmpty(), config -> newClient(config, session.get()));
    this.session = session;
  }

  /** Iceberg's HTTPClient property names (HTTPClient.REST_CONNECTION_TIMEOUT_MS, ..._SOCKET_...). */
  static final String CONNECTION_TIMEOUT_MS = "rest.client.connection-timeout-ms";
  static final String SOCKET_TIMEOUT_MS = "rest.client.socket-timeout-ms";
  /**
   * Iceberg sets no timeout unless asked, and Apache HttpClient 5 then waits 3 min to connect and
   * forever for an answer: a stalled catalog would hang a commit, a load or a refresh thread past
   * every bound of ours. 10 s to connect is plenty on any network that works. 60 s without a byte
   * is far beyond a slow commit (seconds) and equals the commit guard's default total timeout
   * (catalog-ext.commit.total-timeout-ms); a commit that times out is "answer lost" to the guard,
   * which then checks the table and never deletes files it cannot prove unused.
   */
  static final long DEFAULT_CONNECTION_TIMEOUT_MS = 10_000L;
  static final long DEFAULT_SOCKET_TIMEOUT_MS = 60_000L;

  /** {@code props} plus our connect/read timeouts where the user set none; the user's values win. */
  static Map<String, String> withTimeoutDefaults(Map<String, String> props) {
    Map<String, String> out = new HashMap<>(props);
    out.putIfAbsent(CONNECTION_TIMEOUT_MS, String.valueOf(DEFAULT_CONNECTION_TIMEOUT_MS));
    out.putIfAbsent(SOCKET_TIMEOUT_MS, String.valueOf(DEFAULT_SOCKET_TIMEOUT_MS));
    for (String key : List.of(CONNECTION_TIMEOUT_MS, SOCKET_TIMEOUT_MS)) {
      String v = out.get(key);
      long ms;
      try {
        ms = Long.parseLong(v.trim());
      } catch (NumberFormatException e) {
        ms = -1;
      }
      if (ms < 0 || ms > Integer.MAX_VALUE) { // Iceberg reads the read timeout as an int
        throw new IllegalArgumentException(
            key + " must be a whole number of milliseconds (0 = no limit), not '" + v + "'");
      }
      out.put(key, String.valueOf(ms));
    }
    return out;
  }

  @Override
  public void initialize(String name, Map<String, String> userProps) {
    Map<String, String> props = withTimeoutDefaults(userProps);
    // Spark initialises a catalog on the thread of the query that first names it, with that query's
    // session active: the session whose status shows this catalog's tables.
    CatalogSession created = new CatalogSession(name, props, System::currentTimeMillis, SparkCompat.currentSession());
    session.set(created);
    CredentialRegistry.get().catalogs().register(created);
    super.initialize(name, props);
  }

  /**
   * Spark's {@code DROP TABLE ... PURGE} (Iceberg 1.10/1.11's {@code SparkCatalog.purgeTable}) drops
   * the table without asking the catalog to purge, then deletes its files itself. A catalog that
   * drops tables only with their data (S3 Tables: 400 without {@code purgeRequested=true}) refuses
   * that drop, so no Spark statement could drop the table. The user asked for the data to go: only
   * then ({@link PurgeStatements}, from the statement itself), and only after that refusal, the drop
   * is repeated with purge. A plain {@code DROP TABLE} keeps the refusal (its one-line translation
   * names {@code DROP TABLE ... PURGE}).
   */
  @Override
  public boolean dropTable(TableIdentifier identifier, boolean purge) {
    try {
      return super.dropTable(identifier, purge);
    } catch (BadRequestException e) {
      CatalogSession current = session.get();
      if (purge || current == null || !PurgeStatements.requested(current.name, identifier)) {
        throw e;
      }
      return super.dropTable(identifier, true);
    }
  }

  private static RESTClient newClient(Map<String, String> config, CatalogSession session) {
    if (session == null) {
      throw new IllegalStateException("ExtRESTCatalog built a client before initialize(name, properties); call initialize first");
    }
    session.guard.configure(config); // the merged config too: /v1/config may set catalog-ext.commit.*
    EventLog.configure(config); // catalog-ext.events.jsonl-path: the JVM's own JSON-lines event file
    // Captures idempotency-key-lifetime and notes server-named URLs from /v1/config.
    return CatalogClients.funnel(config, ConfigCapture.register(RestJson.restMapper(), session), session);
  }
}
