package io.catalogext.shim.refresh;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.events.ShimMetrics;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.DaemonThreads;
import io.catalogext.shim.util.Json;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.rest.credentials.Credential;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The credential entries of this JVM. On the driver, entries are created when the catalog hands
 * out a table and are refreshed through the Python bridge; in an executor JVM, entries are created
 * from the FileIO properties and refreshed from the driver.
 *
 * <p>Python twin: {@code pyspark_catalog_ext.refresh.refresher}.
 */
public final class CredentialRegistry {
  private static final Logger LOG = LoggerFactory.getLogger(CredentialRegistry.class);
  // Process-wide: Iceberg builds RefreshingS3ClientFactory and Spark CatalogExtPlugin by class name,
  // with no way to hand them an object, and both must find the entries the catalogs registered.
  private static final CredentialRegistry INSTANCE = new CredentialRegistry();
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Map<String, TableEntry> entries = new ConcurrentHashMap<>();
  /** Issues and checks the driver's handles: each bound to one table and one catalog session. */
  private final TableHandles handles = new TableHandles();
  /**
   * The driver's entries by catalog session and table identity ({@link #indexKey}): a table load
   * finds its entry in O(1) instead of scanning every entry (3 ms per load at 10,000 entries).
   * Written under this registry's lock with {@link #entries}; a mapping to an entry no longer
   * tracked is ignored.
   */
  private final Map<String, TableEntry> byTableKey = new ConcurrentHashMap<>();
  private final CatalogSessions catalogs = new CatalogSessions();
  private final RefreshSources sources = new RefreshSources();
  private final ExecutorAnswers executorAnswers = new ExecutorAnswers(this::lookup, this::retrackIssued);
  /** Set by the driver plugin (or found from SparkEnv): this JVM runs the Spark driver. */
  private volatile boolean driver;
  /** Executors: the plugin's RPC to the driver, once the executor plugin started. */
  private volatile DriverChannel driverChannel;
  private final Clock clock;
  /** Bound on tracked entries: past it, the least recently active idle entries go first. */
  public static final int MAX_ENTRIES = 10_000;

  private CredentialRegistry() {
    this(System::currentTimeMillis);
    ShimMetrics.get().watchExpiry(this::earliestExpiryMs);
    // The one scheduler of this JVM: once a second it flags due snapshots (so the providers' hot
    // path never reads the clock) and, on the driver, starts the refreshes that are due.
    java.util.concurrent.ScheduledExecutorService ticker =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
            DaemonThreads.named("catalog-ext-ticker"));
    ticker.scheduleWithFixedDelay(this::tickSafely, 1, 1, java.util.concurrent.TimeUnit.SECONDS);
  }

  /** A registry on {@code clock} with no ticker thread: unit tests call {@link #tick()} themselves. */
  public CredentialRegistry(Clock clock) {
    this.clock = clock;
  }

  /** One scheduler pass; never throws, or scheduleWithFixedDelay would stop for good. */
  void tickSafely() {
    try {
      tick();
    } catch (Throwable t) {
      LOG.warn("catalog-ext: scheduler pass failed: {}", t.toString());
    }
  }

  public void tick() {
    long now = clock.nowMs();
    boolean onDriver = isDriver();
    for (TableEntry e : entries.values()) {
      try {
        e.tick(now);
        if (onDriver) {
          e.scheduleIfDue(now);
        }
      } catch (Throwable t) { // one broken entry must not starve the others
        LOG.warn("catalog-ext: scheduling {} failed: {}", e.context.qualifiedName(), t.toString());
      }
    }
    if (now - lastEvictionMs >= EVICTION_INTERVAL_MS) { // executors evict too
      lastEvictionMs = now;
      evictIdle(IDLE_EVICTION_MS);
    }
  }

  /** Entries with expired credentials unused for this long are dropped (see {@link #evictIdle}). */
  static final long IDLE_EVICTION_MS = 3_600_000L;
  private static final long EVICTION_INTERVAL_MS = 60_000L;
  private volatile long lastEvictionMs;

  public static CredentialRegistry get() {
    return INSTANCE;
  }

  /** The catalog sessions of this JVM, by name and by id. */
  public CatalogSessions catalogs() {
    return catalogs;
  }

  /** Where fresh credentials come from (the user's Python source or the catalog) and the policies. */
  public RefreshSources sources() {
    return sources;
  }

  /** The driver plugin's answers to executors. */
  public ExecutorAnswers executorAnswers() {
    return executorAnswers;
  }

  /** JSON array describing every table entry; no secrets. */
  public String describe() {
    ArrayNode out = Json.MAPPER.createArrayNode();
    entries.values().forEach(e -> out.add(e.describe()));
    return Json.write(out);
  }

  /** The same for the entries of catalog sessions {@code sessions} only (a shared driver's status). */
  public String describe(Collection<CatalogSession> sessions) {
    Set<String> ids = new HashSet<>();
    sessions.forEach(session -> ids.add(session.id));
    ArrayNode out = Json.MAPPER.createArrayNode();
    entries.values().stream().filter(e -> ids.contains(TableHandles.sessionOf(e.handle))).forEach(e -> out.add(e.describe()));
    return Json.write(out);
  }

  /**
   * Epoch ms of the earliest expiry among the credentials tracked here that have not expired yet
   * (Long.MAX_VALUE if none): how close this JVM's tables are to needing a refresh that works.
   */
  public long earliestExpiryMs() {
    long now = clock.nowMs();
    long earliest = Long.MAX_VALUE;
    for (TableEntry e : entries.values()) {
      earliest = Math.min(earliest, e.earliestExpiryAfter(now));
    }
    return earliest;
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
    TableEntry e = entries.remove(handle);
    if (e != null) {
      unindex(e);
    }
  }

  /** The tracked entry of a table identity, or null. Callers hold this registry's lock. */
  private TableEntry trackedByKey(String key) {
    TableEntry e = byTableKey.get(key);
    if (e != null && entries.get(e.handle) != e) { // evicted since: not the table's entry any more
      byTableKey.remove(key, e);
      return null;
    }
    return e;
  }

  private void unindex(TableEntry e) {
    byTableKey.remove(indexKey(e), e);
  }

  /** An entry's place in {@link #byTableKey}: its catalog session and table identity. */
  private static String indexKey(TableEntry e) {
    return indexKey(TableHandles.sessionOf(e.handle), e.context);
  }

  private static String indexKey(String sessionId, TableContext context) {
    return sessionId + "|" + context.tableKey();
  }

  /**
   * Drops entries whose credentials expired and that nobody used for {@code maxIdleMs}: each table
   * load creates an entry, and an abandoned one must not be refreshed or kept forever.
   */
  public int evictIdle(long maxIdleMs) {
    long now = clock.nowMs();
    int evicted = 0;
    for (TableEntry e : entries.values()) {
      if (now - e.lastActiveAtMs() > maxIdleMs && e.allExpired(now) && entries.remove(e.handle, e)) {
        unindex(e);
        e.evicted(this::reinstate); // a provider still holding it takes the slow path, which brings it back
        evicted++;
      }
    }
    return evicted;
  }

  /** Keeps the registry bounded: beyond MAX_ENTRIES, the least recently active entries go. */
  private void enforceBound() {
    int excess = entries.size() - MAX_ENTRIES;
    if (excess <= 0) {
      return;
    }
    entries.values().stream()
        .sorted(java.util.Comparator.comparingLong(TableEntry::lastActiveAtMs))
        .limit(excess)
        .forEach(
            e -> {
              if (entries.remove(e.handle, e)) {
                unindex(e);
                e.evicted(this::reinstate);
              }
            });
  }

  /** An evicted entry that is used again (a DataFrame kept in a notebook) is tracked again. */
  void reinstate(TableEntry entry) {
    if (entries.putIfAbsent(entry.handle, entry) == null) {
      byTableKey.putIfAbsent(indexKey(entry), entry);
      LOG.info("catalog-ext: tracking {} again after an idle period", entry.context.qualifiedName());
    }
  }

  public int size() {
    return entries.size();
  }

  /**
   * Creates the driver-side entry for a table the catalog just handed out, or updates the one the
   * table already has; returns its handle. Synchronized so two concurrent loads of one table make
   * one entry (loads are rare next to resolves, which never take this lock).
   */
  public synchronized String registerDriverTable(
      TableContext context,
      CatalogSession session,
      Map<String, String> tableConfig,
      List<Credential> credentials) {
    // One entry per table identity (catalog, identifier, location) of one catalog session, not per
    // hand-out: a CTAS and the loads after it share one entry, one schedule and one catalog request
    // per refresh. Another session's load of the same table gets its own entry, keys and handle.
    String key = indexKey(session.id, context);
    TableEntry existing = trackedByKey(key);
    if (existing != null) {
      existing.adopt(context, tableConfig, credentials);
      return existing.handle;
    }
    String handle = handles.issue(session.id, context.tableKey());
    TableEntry entry =
        new TableEntry(handle, context, sources.policyFor(session), subject -> sources.fetch(subject, session), clock,
            session.clocks);
    entry.seed("", tableConfig);
    for (Credential credential : credentials) {
      entry.seed(credential.prefix(), credential.config());
    }
    entries.put(handle, entry);
    byTableKey.put(key, entry);
    enforceBound();
    LOG.info("catalog-ext: tracking storage credentials for {}", context);
    return handle;
  }

  /** A create commit of catalog session {@code session} landed: its entry of the table is no longer staged. */
  public void markCommitted(CatalogSession session, List<String> namespace, String table) {
    for (TableEntry entry : entries.values()) {
      TableContext c = entry.context;
      if (c.staged && TableHandles.sessionOf(entry.handle).equals(session.id) && c.namespace.equals(namespace)
          && c.table.equals(table)) {
        c.staged = false;
      }
    }
  }

  /**
   * The entry a FileIO's S3 client should use: the driver's own, or one fed by the driver. On the
   * driver the handle must be one this registry issued for the table the properties name.
   *
   * @throws IllegalArgumentException one line, when the driver did not issue the handle for that
   *     table and a live catalog session
   */
  public TableEntry forClient(Map<String, String> props) {
    String handle = props.getOrDefault(ShimKeys.TABLE_HANDLE, "");
    if (!TableHandles.sessionOf(handle).equals(props.get(ShimKeys.CATALOG_SESSION))) {
      // A handle under a catalog session it was not issued to: another session's FileIO properties.
      throw new IllegalArgumentException("the " + ShimKeys.TABLE_HANDLE + " in these FileIO properties belongs to"
          + " another catalog session than the one that built them; load the table through its own catalog in this session");
    }
    TableEntry local = entries.get(handle);
    if (local != null) {
      return local;
    }
    TableContext context = TableContext.fromIdentity(props.get(ShimKeys.TABLE_IDENTITY));
    if (isDriver()) {
      TableEntry entry = retrackIssued(handle, context);
      if (entry == null) {
        throw new IllegalArgumentException("the storage credentials of table " + context.shownName()
            + " were not handed to this FileIO: its " + ShimKeys.TABLE_HANDLE + " is not one this driver issued"
            + " for that table in a live catalog session; load the table through its own catalog in this session");
      }
      return entry;
    }
    RefreshPolicy tablePolicy = RefreshPolicy.fromProperties(props);
    long timeoutMs = tablePolicy.timeoutMs;
    TableEntry entry =
        entries.computeIfAbsent(
            handle,
            h -> new TableEntry(h, context, tablePolicy, DriverPluginSource.forExecutor(() -> driverChannel, clock, timeoutMs),
                clock));
    enforceBound();
    return entry;
  }

  /**
   * This is the driver and the handle's entry was evicted (idle for long): track the table again,
   * refreshed like any committed table through the catalog session that loaded it, when this
   * registry issued {@code handle} for {@code context}'s table and that session still lives; else null.
   */
  synchronized TableEntry retrackIssued(String handle, TableContext context) {
    if (!handles.issuedFor(handle, context.tableKey())) {
      return null;
    }
    CatalogSession session = catalogs.live(TableHandles.sessionOf(handle));
    if (session == null) {
      return null;
    }
    String key = indexKey(session.id, context);
    TableEntry existing = trackedByKey(key);
    if (existing != null) {
      return existing; // loaded again since: one entry per table identity and session
    }
    TableEntry entry = entries.computeIfAbsent(
        handle,
        h -> {
          LOG.warn("catalog-ext: re-tracking {} after its entry was evicted", context);
          return new TableEntry(h, context, sources.policyFor(session), subject -> sources.fetch(subject, session), clock,
              session.clocks);
        });
    byTableKey.putIfAbsent(key, entry);
    return entry;
  }

  public void markDriver() {
    driver = true;
  }

  /** Executors: how this JVM's entries ask the driver (the executor plugin's RPC); null disconnects. */
  public void connectToDriver(DriverChannel channel) {
    this.driverChannel = channel;
  }

  /** Executors: the channel to the driver, or null before the executor plugin started. */
  public DriverChannel driverChannel() {
    return driverChannel;
  }

  private boolean isDriver() {
    if (driver) {
      return true;
    }
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    return env != null && "driver".equals(env.executorId());
  }

  public TableEntry lookup(String handle) {
    return entries.get(handle);
  }

  private TableEntry entry(String handle) {
    TableEntry e = entries.get(handle);
    if (e == null) {
      throw new IllegalArgumentException("unknown table handle " + handle);
    }
    return e;
  }

  public static String newId(int bytes) {
    byte[] b = new byte[bytes];
    RANDOM.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }
}
