package io.catalogext.shim;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.rest.credentials.Credential;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The credential entries of this JVM. On the driver, entries are created when the catalog hands
 * out a table and are refreshed through the Python bridge; in an executor JVM, entries are created
 * from the FileIO properties and refreshed from the driver.
 */
public final class CredentialRegistry {
  private static final Logger LOG = LoggerFactory.getLogger(CredentialRegistry.class);
  private static final CredentialRegistry INSTANCE = new CredentialRegistry();
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Map<String, TableCredentials> entries = new ConcurrentHashMap<>();
  private final Set<String> customSourceCatalogs = ConcurrentHashMap.newKeySet();
  private final Map<String, Object> tableLocks = new ConcurrentHashMap<>();
  private volatile PythonCredentialBridge bridge;
  private volatile RefreshPolicy policy =
      new RefreshPolicy(RefreshPolicy.DEFAULT_MIN_AHEAD_MS, RefreshPolicy.DEFAULT_FRACTION);
  private volatile DriverChannel.Server channel;
  private final TableCredentials.Clock clock = System::currentTimeMillis;

  private CredentialRegistry() {
    // One ticker per JVM flags due snapshots so the providers' hot path never reads the clock.
    java.util.concurrent.ScheduledExecutorService ticker =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "catalog-ext-ticker");
              t.setDaemon(true);
              return t;
            });
    ticker.scheduleWithFixedDelay(
        () -> {
          long now = clock.nowMs();
          for (TableCredentials e : entries.values()) {
            e.tick(now);
          }
        },
        1, 1, java.util.concurrent.TimeUnit.SECONDS);
  }

  public static CredentialRegistry get() {
    return INSTANCE;
  }

  // ---- called from Python (Py4J) ----

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

  public void setRefreshPolicy(long minAheadMs, double lifetimeFraction) {
    this.policy = new RefreshPolicy(minAheadMs, lifetimeFraction);
  }

  /** JSON array describing every table entry; no secrets. */
  public String describe() {
    ArrayNode out = Json.MAPPER.createArrayNode();
    entries.values().forEach(e -> out.add(e.describe()));
    return Json.write(out);
  }

  /** {"endpoint", "served", "refused"} of this driver's channel to executors; {} if none started. */
  public String channelStats() {
    DriverChannel.Server server = channel;
    ObjectNode node = Json.object();
    if (server != null) {
      node.put("endpoint", server.endpoint);
      node.put("served", server.served.get());
      node.put("refused", server.refused.get());
    }
    return Json.write(node);
  }

  public long generation(String handle) {
    return entry(handle).generation();
  }

  /**
   * Refreshes a table unless it was refreshed since {@code seenGeneration} (the scheduler's
   * single-flight guard). Returns true if this call fetched; throws with the source's message.
   */
  public boolean refresh(String handle, long seenGeneration) throws Exception {
    return entry(handle).refreshIfGeneration(seenGeneration);
  }

  public void forget(String handle) {
    entries.remove(handle);
  }

  /**
   * Drops entries whose credentials expired and that nobody used for {@code maxIdleMs}: each table
   * load creates an entry, and an abandoned one must not be refreshed or kept forever.
   */
  public int evictIdle(long maxIdleMs) {
    long now = clock.nowMs();
    int before = entries.size();
    entries.values().removeIf(
        e ->
            now - e.lastActiveAtMs() > maxIdleMs
                && e.slots().values().stream()
                    .allMatch(s -> s.current == null || s.current.expiresAtMs <= now));
    return before - entries.size();
  }

  // ---- called from the shim ----

  boolean wantsTable(String catalog, boolean vended) {
    return vended || customSourceCatalogs.contains(catalog);
  }

  RefreshPolicy policy() {
    return policy;
  }

  /** Creates the driver-side entry for a table the catalog just handed out; returns its handle. */
  String registerDriverTable(TableContext context, Map<String, String> tableConfig, List<Credential> credentials) {
    String handle = newId(12);
    TableCredentials entry =
        new TableCredentials(handle, context, policy, this::fetchForTable, clock);
    entry.seed("", tableConfig);
    for (Credential credential : credentials) {
      entry.seed(credential.prefix(), credential.config());
    }
    entries.put(handle, entry);
    LOG.info("catalog-ext: tracking storage credentials for {}", context);
    return handle;
  }

  void markCommitted(String catalog, List<String> namespace, String table) {
    for (TableCredentials entry : entries.values()) {
      TableContext c = entry.context;
      if (c.staged && c.catalog.equals(catalog) && c.namespace.equals(namespace) && c.table.equals(table)) {
        c.staged = false;
      }
    }
  }

  /** The entry a FileIO's S3 client should use: the driver's own, or one fed by the driver. */
  TableCredentials forClient(Map<String, String> props) {
    String handle = props.get(ShimKeys.TABLE_HANDLE);
    TableCredentials local = entries.get(handle);
    if (local != null) {
      return local;
    }
    TableContext context = TableContext.fromIdentity(props.get(ShimKeys.TABLE_IDENTITY));
    DriverChannel.Server server = channel;
    if (server != null && server.endpoint.equals(props.get(ShimKeys.DRIVER_ENDPOINT))) {
      // This is the driver and the entry was evicted (idle for long): track the table again,
      // refreshed like any committed table. Asking our own channel would only wait on ourselves.
      LOG.warn("catalog-ext: re-tracking {} after its entry was evicted", context);
      return entries.computeIfAbsent(
          handle, h -> new TableCredentials(h, context, policy, this::fetchForTable, clock));
    }
    return entries.computeIfAbsent(
        handle,
        h -> {
          DriverChannel.Client client =
              new DriverChannel.Client(props.get(ShimKeys.DRIVER_ENDPOINT), props.get(ShimKeys.DRIVER_SECRET));
          return new TableCredentials(h, context, RefreshPolicy.fromProperties(props), client::fetch, clock);
        });
  }

  TableCredentials lookup(String handle) {
    return entries.get(handle);
  }

  private TableCredentials entry(String handle) {
    TableCredentials e = entries.get(handle);
    if (e == null) {
      throw new IllegalArgumentException("unknown table handle " + handle);
    }
    return e;
  }

  synchronized DriverChannel.Server channel() {
    if (channel == null) {
      channel = DriverChannel.Server.start(this, newId(32));
    }
    return channel;
  }

  /**
   * Refresh source of driver entries. A table handed out several times (a CTAS, then loads) has
   * several entries; they take turns, and one whose sibling already holds credentials that are not
   * yet due takes those instead of asking the catalog: one request per table per refresh.
   */
  private RefreshResult fetchForTable(TableCredentials entry) {
    synchronized (tableLocks.computeIfAbsent(entry.context.tableKey(), k -> new Object())) {
      long now = clock.nowMs();
      for (TableCredentials sibling : entries.values()) {
        if (sibling != entry && sibling.context.tableKey().equals(entry.context.tableKey())) {
          RefreshResult shared = sibling.freshResult(now);
          if (shared != null) {
            return shared;
          }
        }
      }
      return fetchFromPython(entry);
    }
  }

  private RefreshResult fetchFromPython(TableCredentials entry) {
    PythonCredentialBridge b = bridge;
    if (b == null) {
      throw new IllegalStateException(
          "no Python credential source is attached to this Spark driver"
              + " (call pyspark_catalog_ext.attach(spark) after creating the session)");
    }
    String response = b.fetchCredentials(Json.write(requestFor(entry)));
    JsonNode node = Json.read(response);
    if (node.hasNonNull("error")) {
      throw new IllegalStateException(node.get("error").asText());
    }
    return RefreshResult.fromJson(node);
  }

  /** What Python needs to refresh a table. Includes refresh tokens: goes only over Py4J. */
  static ObjectNode requestFor(TableCredentials entry) {
    ObjectNode node = entry.describe();
    TableContext c = entry.context;
    if (c.stageCreateRequestJson != null) {
      node.set("stage_create_request", Json.read(c.stageCreateRequestJson));
    }
    node.put("refresh_endpoint", c.refreshEndpoint);
    node.set("storage_refresh_tokens", Json.fromMap(entry.refreshTokens()));
    return node;
  }

  static String newId(int bytes) {
    byte[] b = new byte[bytes];
    RANDOM.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }
}
