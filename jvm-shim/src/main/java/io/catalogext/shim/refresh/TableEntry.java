package io.catalogext.shim.refresh;

import io.catalogext.shim.CredentialsExpiredException;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.plugin.PluginMessages;
import io.catalogext.shim.util.DaemonThreads;
import io.catalogext.shim.util.Json;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.auth.credentials.AwsCredentials;

/**
 * The registry's entry for one table identity (catalog, identifier, location) in one JVM, however
 * often the catalog hands the table out: a credential slot per storage prefix, read lock-free on
 * the hot path, and a single-flight refresh so that any number of clients and tasks cause one
 * request.
 */
public final class TableEntry {
  private static final Logger LOG = LoggerFactory.getLogger(TableEntry.class);
  /** Below this much validity (or a quarter of the lifetime) a reader waits for a refresh. */
  static final long HARD_MARGIN_MS = 10_000L;

  private static final ExecutorService ASYNC =
      Executors.newCachedThreadPool(
          DaemonThreads.named("catalog-ext-refresh"));

  public interface Clock {
    long nowMs();

    /** Waits (a fake clock in tests just moves on). */
    default void sleepMs(long ms) throws InterruptedException {
      Thread.sleep(ms);
    }
  }

  public final String handle;
  /** The table as the catalog last handed it out (a later hand-out of the same table replaces it). */
  public volatile TableContext context;
  final RefreshPolicy policy;
  private final EntryRefresher source;
  private final Clock clock;

  private final Map<String, CredentialSlot> slots = new ConcurrentHashMap<>();
  /** Driver only: prefix -> storage-refresh-token. Secret; never logged or described. */
  private final Map<String, String> refreshTokens = new ConcurrentHashMap<>();

  private final Object refreshLock = new Object();
  private final AtomicLong generation = new AtomicLong();
  private final AtomicBoolean asyncInFlight = new AtomicBoolean();
  private final AtomicLong refreshCount = new AtomicLong();
  private final AtomicLong failureCount = new AtomicLong();
  private volatile int consecutiveFailures;
  private volatile long nextAttemptAtMs;
  private volatile long lastRefreshAtMs;
  private volatile long lastUsedAtMs;
  private final long createdAtMs;
  private final Map<String, AtomicLong> strategyCounts = new ConcurrentHashMap<>();
  private volatile String lastStrategy = "initial";
  private volatile String lastError;
  private volatile long lastCheckAtMs = Long.MIN_VALUE / 2;
  /** Set while evicted: how a use brings this entry back into the registry. */
  private volatile java.util.function.Consumer<TableEntry> onReuse;

  public TableEntry(
      String handle, TableContext context, RefreshPolicy policy, EntryRefresher source, Clock clock) {
    this.handle = handle;
    this.context = context;
    this.policy = policy;
    this.source = source;
    this.clock = clock;
    this.createdAtMs = clock.nowMs();
  }

  /** When this entry last mattered: created, used or refreshed. Idle eviction counts from here. */
  long lastActiveAtMs() {
    return Math.max(createdAtMs, Math.max(lastUsedAtMs, lastRefreshAtMs));
  }

  /** Records credentials a client starts with (kept if the slot already has some). */
  public CredentialSlot seed(String prefix, Map<String, String> config) {
    CredentialSnapshot snapshot = CredentialSnapshot.fromConfig(config, clock.nowMs(), policy);
    CredentialSlot slot = slots.computeIfAbsent(prefix, p -> new CredentialSlot(snapshot));
    if (slot.current == null && snapshot != null) {
      slot.current = snapshot;
    }
    String token = config.get(ShimKeys.CAPTURED_REFRESH_TOKEN);
    if (token != null) {
      refreshTokens.put(prefix, token);
    }
    return slot;
  }

  public CredentialSnapshot snapshot(String prefix) {
    CredentialSlot slot = slots.get(prefix);
    if (slot == null || slot.current == null) {
      slot = slots.get("");
    }
    return slot == null ? null : slot.current;
  }

  Map<String, CredentialSlot> slots() {
    return slots;
  }

  Map<String, String> refreshTokens() {
    return refreshTokens;
  }

  public long generation() {
    return generation.get();
  }

  long lastRefreshAtMs() {
    return lastRefreshAtMs;
  }

  public long lastUsedAtMs() {
    return lastUsedAtMs;
  }

  void markUsed() {
    lastUsedAtMs = clock.nowMs();
  }

  /**
   * The driver's scheduling rule, at most once per check interval: refresh ahead of time when a
   * credential is due and the table was used since it was fetched (an idle table is renewed on its
   * next use instead), unless a failure backoff is pending.
   */
  void scheduleIfDue(long now) {
    if (now - lastCheckAtMs < policy.checkIntervalMs) {
      return;
    }
    lastCheckAtMs = now;
    long seen = generation.get(); // before reading the keys: see refreshAsync(long)
    CredentialSnapshot soonest = null;
    for (CredentialSlot slot : slots.values()) {
      CredentialSnapshot s = slot.current;
      if (s != null && s.expiresAtMs != Long.MAX_VALUE && (soonest == null || s.expiresAtMs < soonest.expiresAtMs)) {
        soonest = s;
      }
    }
    if (soonest != null && now >= soonest.refreshAtMs && lastUsedAtMs >= soonest.fetchedAtMs) {
      refreshAsync(seen);
    }
  }

  /**
   * Dropped from the registry (idle, expired): flag every snapshot due so that a provider still
   * holding this entry leaves the hot path, and bring the entry back through {@code onReuse}.
   */
  void evicted(java.util.function.Consumer<TableEntry> onReuse) {
    this.onReuse = onReuse;
    for (CredentialSlot slot : slots.values()) {
      CredentialSnapshot s = slot.current;
      if (s != null) {
        s.due = true;
      }
    }
  }

  /** Called by the JVM-wide ticker about once a second: usage, and which snapshots are due. */
  public void tick(long now) {
    for (CredentialSlot slot : slots.values()) {
      if (slot.used) {
        slot.used = false;
        lastUsedAtMs = now;
      }
      CredentialSnapshot s = slot.current;
      if (s != null && !s.due && now >= s.refreshAtMs) {
        s.due = true;
      }
    }
  }

  /** The slow path of TableCredentialsProvider: the snapshot is due, missing or expiring. */
  AwsCredentials resolveSlow(CredentialSlot slot) {
    long now = clock.nowMs();
    lastUsedAtMs = now;
    java.util.function.Consumer<TableEntry> reuse = onReuse;
    if (reuse != null) {
      onReuse = null;
      reuse.accept(this); // evicted while idle: tracked (and scheduled) again
    }
    long seen = generation.get(); // before reading the keys: see refreshAsync(long)
    CredentialSnapshot current = slot.current;
    if (current != null && now < current.refreshAtMs) {
      return current.credentials; // a refresh landed since the caller looked
    }
    if (current != null && now < current.expiresAtMs - hardMarginMs(current)) {
      refreshAsync(seen);
      return current.credentials;
    }
    // Expired or about to: wait for fresh credentials rather than send a doomed request. Failed
    // attempts are retried after their backoff until timeout-ms has passed; callers queued behind
    // an attempt that fails wait for the next one instead of trying at once (no stampede).
    try {
      long deadline = now + policy.timeoutMs;
      while (true) {
        long seenGeneration = generation.get();
        long seenFailures = failureCount.get();
        long wait = nextAttemptAtMs - clock.nowMs();
        if (wait > 0 && lastError != null) {
          if (clock.nowMs() + wait > deadline) {
            throw new IllegalStateException(lastError + " (next attempt in " + wait + " ms)");
          }
          clock.sleepMs(wait);
        }
        try {
          refreshIfGeneration(seenGeneration, seenFailures);
          break;
        } catch (FailedMeanwhile e) {
          // another caller's attempt failed while this one waited: wait for the next attempt
        } catch (Exception e) {
          if (clock.nowMs() >= deadline) {
            throw e;
          }
          // this caller's own attempt failed: try again after the backoff, until the deadline
        }
      }
    } catch (Exception e) {
      CredentialSnapshot latest = slot.current;
      if (latest != null && clock.nowMs() < latest.expiresAtMs) {
        return latest.credentials;
      }
      throw new CredentialsExpiredException(
          "Storage credentials for table "
              + context.qualifiedName()
              + " expired and refresh via "
              + strategyHint()
              + " failed: "
              + e.getMessage()
              + ". The write was stopped before anything was committed.",
          e);
    }
    CredentialSnapshot fresh = slot.current != null ? slot.current : snapshot("");
    if (fresh == null) {
      throw new CredentialsExpiredException(
          "No storage credentials for table " + context.qualifiedName() + " after refresh", null);
    }
    return fresh.credentials;
  }

  private static long hardMarginMs(CredentialSnapshot s) {
    long lifetime = s.lifetimeMs();
    return lifetime < 0 ? HARD_MARGIN_MS : Math.min(HARD_MARGIN_MS, lifetime / 4);
  }

  private String strategyHint() {
    if (!refreshTokens.isEmpty()) {
      return CatalogRefresher.Strategy.REFRESH_TOKEN.label;
    }
    if (context.staged) {
      return CatalogRefresher.Strategy.RESTAGE.label;
    }
    return "initial".equals(lastStrategy) ? "the table's refresh source" : lastStrategy;
  }

  /**
   * The catalog handed this table out again (a load after its CTAS, say): take what it said about
   * the table, and its credentials where they outlive the ones held.
   */
  void adopt(TableContext newer, Map<String, String> tableConfig, java.util.List<org.apache.iceberg.rest.credentials.Credential> credentials) {
    context = newer;
    long now = clock.nowMs();
    Map<String, Map<String, String>> byPrefix = new java.util.LinkedHashMap<>();
    byPrefix.put("", tableConfig);
    credentials.forEach(c -> byPrefix.put(c.prefix(), c.config()));
    byPrefix.forEach(
        (prefix, config) -> {
          CredentialSnapshot snap = CredentialSnapshot.fromConfig(config, now, policy);
          CredentialSlot slot = slots.computeIfAbsent(prefix, p -> new CredentialSlot(snap));
          CredentialSnapshot held = slot.current;
          if (snap != null && (held == null || snap.expiresAtMs > held.expiresAtMs)) {
            slot.current = snap;
          }
          String token = config.get(ShimKeys.CAPTURED_REFRESH_TOKEN);
          if (token != null) {
            refreshTokens.put(prefix, token);
          }
        });
  }

  /**
   * What the driver tells an executor about this entry: its credentials if none is due, else
   * (after starting a background refresh) whether one is running, the last error, and the keys it
   * still holds while none of them has expired: a failing refresh must not cost executors keys
   * that are still good (the error only counts once none is left).
   */
  /**
   * The last fresh reply to executors, encoded: executors ask for the same table many times per
   * credential lifetime, and encoding the reply (JSON with an STS-sized session token) on every ask
   * was most of the driver plugin's CPU at scale (JFR of bench_plugin_scale, docs/benchmarks.md).
   * Reused while every slot still holds the very snapshot it was built from and none is due.
   */
  private volatile EncodedReply encodedReply;

  private static final class EncodedReply {
    final String[] prefixes;
    final CredentialSnapshot[] snapshots;
    final long dueAtMs;
    final byte[] bytes;

    EncodedReply(String[] prefixes, CredentialSnapshot[] snapshots, byte[] bytes) {
      this.prefixes = prefixes;
      this.snapshots = snapshots;
      this.bytes = bytes;
      long due = Long.MAX_VALUE;
      for (CredentialSnapshot snap : snapshots) {
        due = snap == null ? Long.MIN_VALUE : Math.min(due, Math.min(snap.refreshAtMs, snap.expiresAtMs));
      }
      this.dueAtMs = due;
    }

    /** {@code slots} hold exactly the snapshots this reply was built from (by identity). */
    boolean current(Map<String, CredentialSlot> slots) {
      if (slots.size() != prefixes.length) {
        return false;
      }
      for (int i = 0; i < prefixes.length; i++) {
        CredentialSlot slot = slots.get(prefixes[i]);
        if (slot == null || slot.current != snapshots[i]) {
          return false;
        }
      }
      return true;
    }
  }

  /** {@link #executorReply()} encoded for the plugin RPC; a fresh one is reused while it stays fresh. */
  byte[] executorReplyBytes() {
    long now = clock.nowMs();
    EncodedReply cached = encodedReply;
    if (cached != null && now < cached.dueAtMs && cached.current(slots)) {
      lastUsedAtMs = now; // markUsed(), without reading the clock again
      return cached.bytes;
    }
    String[] prefixes = slots.keySet().toArray(new String[0]);
    CredentialSnapshot[] held = new CredentialSnapshot[prefixes.length];
    for (int i = 0; i < prefixes.length; i++) {
      CredentialSlot slot = slots.get(prefixes[i]);
      held[i] = slot == null ? null : slot.current;
    }
    PluginMessages.Reply reply = executorReply();
    byte[] bytes = reply.encode();
    if (reply.fresh) {
      EncodedReply built = new EncodedReply(prefixes, held, bytes);
      if (built.current(slots)) { // nothing changed while the reply was built: it is the one for these snapshots
        encodedReply = built;
      }
    }
    return bytes;
  }

  PluginMessages.Reply executorReply() {
    long now = clock.nowMs();
    long seen = generation.get(); // before reading the keys: see refreshAsync(long)
    Map<String, Map<String, String>> configs = new java.util.LinkedHashMap<>();
    boolean fresh = !slots.isEmpty();
    boolean valid = !slots.isEmpty();
    for (Map.Entry<String, CredentialSlot> e : slots.entrySet()) {
      CredentialSnapshot snap = e.getValue().current;
      if (snap == null || now >= snap.expiresAtMs) {
        fresh = false;
        valid = false;
        break;
      }
      fresh &= now < snap.refreshAtMs;
      configs.put(e.getKey(), snap.toConfig());
    }
    markUsed(); // an executor uses the table: keep it scheduled
    if (fresh) {
      return new PluginMessages.Reply(configs, true, false, null, lastStrategy);
    }
    refreshAsync(seen);
    return new PluginMessages.Reply(valid ? configs : Map.of(), false, asyncInFlight.get(), lastError, lastStrategy);
  }

  /**
   * Starts a background refresh unless one is running or a failure backoff is pending, and unless
   * a refresh landed since {@code seen}: the generation the caller read before it looked at the
   * keys it found due. (Read here instead, a refresh landing between the caller's look and this
   * call would pass the single-flight guard, and the catalog would get a second, early request.)
   */
  void refreshAsync(long seen) {
    if (clock.nowMs() < nextAttemptAtMs || !asyncInFlight.compareAndSet(false, true)) {
      return;
    }
    ASYNC.execute(
        () -> {
          try {
            refreshIfGeneration(seen);
          } catch (Exception e) {
            // Already counted and logged; the old credentials stay in use while valid.
          } finally {
            asyncInFlight.set(false);
          }
        });
  }

  /**
   * Refreshes unless someone else already did since {@code seenGeneration}: concurrent callers
   * queue on the lock and then find the new generation, so the catalog sees one request.
   *
   * @return true if this call fetched new credentials
   */
  boolean refreshIfGeneration(long seenGeneration) throws Exception {
    return refreshIfGeneration(seenGeneration, -1);
  }

  /** As above; also fails with the last error if an attempt failed since {@code seenFailures}. */
  boolean refreshIfGeneration(long seenGeneration, long seenFailures) throws Exception {
    synchronized (refreshLock) {
      if (generation.get() != seenGeneration) {
        return false;
      }
      if (seenFailures >= 0 && failureCount.get() != seenFailures) {
        throw new FailedMeanwhile();
      }
      ObjectNode event = EventLog.fields();
      event.put("table", context.qualifiedName());
      event.put("staged", context.staged);
      EventLog.emit("credential_refresh.started", event.deepCopy());
      long startedNanos = System.nanoTime();
      RefreshResult result;
      try {
        result = source.fetch(this);
      } catch (Exception e) {
        onFailure(e);
        event.put("outcome", "failed");
        event.put("error_class", e.getClass().getSimpleName()); // the class only: messages may name hosts
        event.put("duration_s", (System.nanoTime() - startedNanos) / 1e9);
        EventLog.emit("credential_refresh.finished", event);
        throw e;
      }
      apply(result);
      if (result.degradedError != null) { // the driver's still-valid old keys: no refresh
        event.put("outcome", "failed");
        event.put("error_class", IllegalStateException.class.getSimpleName()); // as onFailure records it
      } else {
        event.put("outcome", "refreshed");
      }
      event.put("strategy", result.strategy);
      event.put("duration_s", (System.nanoTime() - startedNanos) / 1e9);
      soonest().ifPresent(snap -> {
        event.put("expires_at", snap.expiresAtMs / 1000.0);
        event.put("next_refresh", snap.refreshAtMs / 1000.0);
      });
      EventLog.emit("credential_refresh.finished", event);
      return true;
    }
  }

  /** An attempt by another caller failed since this one looked. */
  private static final class FailedMeanwhile extends Exception {
    private static final long serialVersionUID = 1L;
    FailedMeanwhile() {
      super(null, null, false, false);
    }
  }

  /** Installs fresh credentials for every prefix this JVM has a client for. */
  void apply(RefreshResult result) {
    long now = clock.nowMs();
    if (slots.isEmpty()) {
      result.configByPrefix.keySet().forEach(prefix -> slots.putIfAbsent(prefix, new CredentialSlot(null)));
    }
    for (Map.Entry<String, CredentialSlot> e : slots.entrySet()) {
      Map<String, String> config = result.configFor(e.getKey());
      CredentialSnapshot snap = config == null ? null : CredentialSnapshot.fromConfig(config, now, policy);
      CredentialSnapshot held = e.getValue().current;
      // Old keys never replace ones that last longer; fresh ones always replace.
      if (snap != null && (result.degradedError == null || held == null || snap.expiresAtMs > held.expiresAtMs)) {
        e.getValue().current = snap;
      }
    }
    refreshTokens.putAll(result.refreshTokens);
    if (result.degradedError != null) {
      // Old (still valid) keys: installed for waiting readers, but the refresh failed and backs off.
      generation.incrementAndGet();
      onFailure(new IllegalStateException(result.degradedError));
      return;
    }
    lastStrategy = result.strategy;
    strategyCounts.computeIfAbsent(result.strategy.split(" ")[0], k -> new AtomicLong()).incrementAndGet();
    lastRefreshAtMs = now;
    lastError = null;
    consecutiveFailures = 0;
    nextAttemptAtMs = 0;
    refreshCount.incrementAndGet();
    generation.incrementAndGet();
    CredentialSnapshot any = soonest().orElse(null);
    boolean timed = any != null && any.expiresAtMs != Long.MAX_VALUE;
    LOG.info(
        "catalog-ext: refreshed storage credentials for {} via {} (refresh #{}, {} failures so far);"
            + " valid for {} s, next refresh in {} s",
        context.qualifiedName(),
        result.strategy,
        refreshCount.get(),
        failureCount.get(),
        timed ? (any.expiresAtMs - now) / 1000 : "?",
        timed ? (any.refreshAtMs - now) / 1000 : "?");
  }

  /** The credentials that expire first (they decide when the table needs its next refresh). */
  private Optional<CredentialSnapshot> soonest() {
    return slots.values().stream()
        .map(slot -> slot.current)
        .filter(snap -> snap != null && snap.expiresAtMs != Long.MAX_VALUE)
        .min((a, b) -> Long.compare(a.expiresAtMs, b.expiresAtMs));
  }

  private void onFailure(Exception e) {
    failureCount.incrementAndGet();
    int failures = ++consecutiveFailures;
    long backoff = policy.backoffMs(failures);
    nextAttemptAtMs = clock.nowMs() + backoff;
    lastError = e.getMessage();
    LOG.warn(
        "catalog-ext: credential refresh for {} failed ({} in a row), retrying in {} ms: {}",
        context.qualifiedName(),
        failures,
        backoff,
        e.getMessage());
  }

  /** Non-secret status for Python and logs. */
  public ObjectNode describe() {
    ObjectNode node = Json.object();
    node.put("handle", handle);
    node.put("catalog", context.catalog);
    var ns = node.putArray("namespace");
    context.namespace.forEach(ns::add);
    node.put("table", context.table);
    node.put("location", context.location);
    node.put("staged", context.staged);
    node.put("table_uuid", context.tableUuid);
    node.put("has_refresh_endpoint", context.refreshEndpoint != null);
    node.put("has_storage_refresh_token", !refreshTokens.isEmpty());
    node.put("generation", generation.get());
    node.put("refresh_count", refreshCount.get());
    node.put("failure_count", failureCount.get());
    node.put("last_strategy", lastStrategy);
    var counts = node.putObject("strategy_counts");
    strategyCounts.forEach((k, v) -> counts.put(k, v.get()));
    node.put("created_at_ms", createdAtMs);
    node.put("last_refresh_at_ms", lastRefreshAtMs);
    node.put("last_used_at_ms", lastUsedAtMs);
    node.put("last_error", lastError);
    var prefixes = node.putArray("prefixes");
    slots.forEach(
        (prefix, slot) -> {
          CredentialSnapshot snap = slot.current;
          if (snap == null) {
            return;
          }
          var p = prefixes.addObject();
          p.put("prefix", prefix);
          p.put("fetched_at_ms", snap.fetchedAtMs);
          p.put("expires_at_ms", snap.expiresAtMs == Long.MAX_VALUE ? -1 : snap.expiresAtMs);
          p.put("refresh_at_ms", snap.refreshAtMs == Long.MAX_VALUE ? -1 : snap.refreshAtMs);
        });
    return node;
  }
}
