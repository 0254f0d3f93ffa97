package io.catalogext.shim.refresh;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.errors.CredentialsExpiredException;
import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.events.ShimMetrics;
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
public final class TableEntry implements RefreshSubject {
  private static final Logger LOG = LoggerFactory.getLogger(TableEntry.class);
  /** Below this much validity (or a quarter of the lifetime) a reader waits for a refresh. */
  static final long HARD_MARGIN_MS = 10_000L;
  /** Keys rejected younger than this (revoked, not expired) do not shorten the learned lifetime. */
  static final long MIN_LEARNED_LIFETIME_MS = 1_000L;

  private static final ExecutorService ASYNC =
      Executors.newCachedThreadPool(
          DaemonThreads.named("catalog-ext-refresh"));

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
  /** Epoch ms of this table's reactive refreshes within the last minute (the rate limit's window). */
  private final java.util.ArrayDeque<Long> reactiveRefreshes = new java.util.ArrayDeque<>();
  /** Executors: the rejected key id the next ask of the driver reports (the driver checks it is current). */
  volatile String staleKeyId;
  volatile String staleCode;
  /** Driver: the key id of the last rejection wave counted (guarded by reactiveRefreshes). */
  private String countedKeyId;
  /** How long the last keys S3 rejected early had lived (-1: none yet); for the one-line error. */
  private volatile long lastObservedLifetimeMs = -1;
  private final java.util.concurrent.atomic.AtomicLong rejectionCount = new java.util.concurrent.atomic.AtomicLong();
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
    CredentialSnapshot snapshot = scheduled(CredentialSnapshot.fromConfig(config, clock.nowMs(), policy));
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

  @Override
  public String handle() {
    return handle;
  }

  @Override
  public TableContext context() {
    return context;
  }

  @Override
  public RefreshPolicy policy() {
    return policy;
  }

  @Override
  public String staleKeyId() {
    return staleKeyId;
  }

  @Override
  public String staleCode() {
    return staleCode;
  }

  @Override
  public Map<String, String> refreshTokens() {
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
    if (current != null && now < current.refreshAtMs && !current.rejected) {
      return current.credentials; // a refresh landed since the caller looked
    }
    if (current != null && now < current.expiresAtMs - hardMarginMs(current) && !current.rejected) {
      refreshAsync(seen);
      return current.credentials;
    }
    // Expired or about to: wait for fresh credentials rather than send a doomed request. Failed
    // attempts are retried after their backoff until timeout-ms has passed; callers queued behind
    // an attempt that fails wait for the next one instead of trying at once (no stampede).
    try {
      boolean fetched = awaitRefresh(generation.get(), now + policy.timeoutMs);
      if (fetched && current != null && current.rejected) {
        markReactive(); // a new task attempt renewing keys S3 rejected: a reactive refresh too
      }
    } catch (CredentialsRejectedException e) {
      throw e;
    } catch (Exception e) {
      CredentialSnapshot latest = slot.current;
      if (latest != null && clock.nowMs() < latest.expiresAtMs && !latest.rejected) {
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

  /**
   * Waits until a refresh lands after generation {@code seen}, starting one if none did: failed
   * attempts are retried after their backoff until {@code deadline}; callers queued behind an
   * attempt that fails wait for the next one instead of trying at once (no stampede).
   *
   * @return true if this call fetched the new credentials
   */
  private boolean awaitRefresh(long seen, long deadline) throws Exception {
    long seenGeneration = seen;
    while (true) {
      long seenFailures = failureCount.get();
      long wait = nextAttemptAtMs - clock.nowMs();
      if (wait > 0 && lastError != null) {
        if (clock.nowMs() + wait > deadline) {
          throw new IllegalStateException(lastError + " (next attempt in " + wait + " ms)");
        }
        clock.sleepMs(wait);
      }
      try {
        return refreshIfGeneration(seenGeneration, seenFailures);
      } catch (FailedMeanwhile e) {
        // another caller's attempt failed while this one waited: wait for the next attempt
      } catch (CredentialsRejectedException e) {
        throw e; // the driver's rate limit: waiting cannot help
      } catch (Exception e) {
        if (clock.nowMs() >= deadline) {
          throw e;
        }
        // this caller's own attempt failed: try again after the backoff, until the deadline
      }
      seenGeneration = generation.get();
    }
  }

  /** This JVM asks the catalog (or a Python source) itself; executors ask the driver. */
  boolean drivesRefresh() {
    return source.drivesRefresh();
  }

  /** Driver: fresh keys as this JVM should schedule them (a learned lifetime, the server's clock). */
  private CredentialSnapshot scheduled(CredentialSnapshot snap) {
    if (snap == null || !drivesRefresh()) {
      return snap;
    }
    long now = clock.nowMs();
    CredentialSnapshot out = snap.onLocalClock(ServerClocks.GLOBAL.skewMs(context.catalog), policy, now);
    return out.withLearnedLifetime(ServerClocks.GLOBAL.learnedLifetimeMs(context.catalog), policy, now);
  }

  /**
   * S3 answered {@code code} (the keys are no longer valid) to a request signed with {@code used}
   * of {@code slot}. Marks them stale, has them refreshed (single-flight: on the driver only while
   * they are still the table's current keys, so a rejection wave costs one catalog request) and
   * waits for the new ones, bounded by timeout-ms.
   *
   * @return true: send the request again (with the slot's current keys); false: the reactive
   *     refresh is off, fail as S3 answered
   * @throws CredentialsRejectedException when keys a reactive refresh just handed out are rejected
   *     before S3 ever accepted them, or the table's reactive refreshes hit their rate limit
   */
  boolean onRejected(CredentialSlot slot, CredentialSnapshot used, String code, Throwable rejection) {
    if (policy.reactiveMaxPerMinute == 0 || used == null) {
      return false;
    }
    long seen = generation.get(); // before looking at the keys: see refreshAsync(long)
    CredentialSnapshot current = slot.current;
    if (current != null && current != used && !current.rejected) {
      return true; // replaced since the request was signed: just send it again
    }
    long now = clock.nowMs();
    long age = now - used.fetchedAtMs;
    if (used.reactive && !used.accepted) {
      throw new CredentialsRejectedException(rejectedAgainMessage(used, code, age), rejection);
    }
    lastObservedLifetimeMs = age;
    if (drivesRefresh()) {
      if (!markRejected(used, code, now)) {
        throw new CredentialsRejectedException(rateLimitedMessage(used, code), rejection);
      }
    } else {
      used.rejected = true;
      used.due = true;
      staleCode = code;
      staleKeyId = used.accessKeyId();
    }
    try {
      if (awaitRefresh(seen, now + policy.timeoutMs)) {
        markReactive();
      }
    } catch (CredentialsRejectedException e) {
      throw e;
    } catch (Exception e) {
      throw new CredentialsExpiredException(
          "S3 rejected the storage credentials of table " + context.qualifiedName() + " (" + code
              + ") and refresh via " + strategyHint() + " failed: " + e.getMessage()
              + ". The write was stopped before anything was committed.",
          rejection);
    } finally {
      staleKeyId = null;
    }
    return true;
  }

  private final java.util.concurrent.atomic.AtomicLong retriedCalls = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong maxRetryWaitMs = new java.util.concurrent.atomic.AtomicLong();

  /** A call S3 rejected went through after waiting {@code waitMs} for new keys. */
  void retried(long waitMs) {
    retriedCalls.incrementAndGet();
    maxRetryWaitMs.accumulateAndGet(waitMs, Math::max);
    ShimMetrics.get().rejectedCallRetried(waitMs);
  }

  /** The keys installed now came from a refresh that a rejection started. */
  private void markReactive() {
    for (CredentialSlot slot : slots.values()) {
      CredentialSnapshot s = slot.current;
      if (s != null && !s.rejected) {
        s.reactive = true;
      }
    }
  }

  /**
   * Driver: S3 rejected {@code snap} (here, or in an executor that reported it). Counts it once,
   * within the rate limit, learns the catalog's real lifetime and reports both.
   *
   * @return false when the table's reactive refreshes hit reactive-max-per-minute
   */
  boolean markRejected(CredentialSnapshot snap, String code, long now) {
    synchronized (reactiveRefreshes) {
      if (snap.rejected) {
        return true; // this wave is counted already
      }
      if (snap.accessKeyId().equals(countedKeyId)) {
        snap.rejected = true; // the same keys under another prefix (config and storage-credentials): one wave
        snap.due = true;
        return true;
      }
      while (!reactiveRefreshes.isEmpty() && now - reactiveRefreshes.peekFirst() >= 60_000L) {
        reactiveRefreshes.pollFirst();
      }
      boolean allowed = reactiveRefreshes.size() < policy.reactiveMaxPerMinute;
      long age = now - snap.fetchedAtMs;
      lastObservedLifetimeMs = age;
      ObjectNode event = EventLog.fields();
      event.put("table", context.qualifiedName());
      event.put("catalog", context.catalog);
      event.put("error_code", code);
      event.put("key_age_ms", age);
      long stated = snap.statedLifetimeMs();
      if (stated < 0) {
        event.putNull("stated_lifetime_ms");
      } else {
        event.put("stated_lifetime_ms", stated);
      }
      event.put("reactive_refresh", allowed);
      EventLog.emit("credentials.rejected", event);
      if (!allowed) {
        return false;
      }
      reactiveRefreshes.addLast(now);
      countedKeyId = snap.accessKeyId();
      rejectionCount.incrementAndGet();
      long scheduledLifetime = snap.lifetimeMs();
      // Keys dead within a second were revoked rather than short-lived: they teach no lifetime.
      if (age >= MIN_LEARNED_LIFETIME_MS && (scheduledLifetime < 0 || age < scheduledLifetime)) {
        long learned = ServerClocks.GLOBAL.learnLifetime(context.catalog, age);
        if (learned == age) {
          ObjectNode learnedEvent = EventLog.fields();
          learnedEvent.put("catalog", context.catalog);
          if (stated < 0) {
            learnedEvent.putNull("stated_lifetime_ms");
          } else {
            learnedEvent.put("stated_lifetime_ms", stated);
          }
          learnedEvent.put("observed_lifetime_ms", age);
          EventLog.emit("credentials.lifetime-learned", learnedEvent);
          LOG.warn("catalog-ext: S3 rejected keys of {} after {} ms ({}); catalog {} states {}: renewing by the"
              + " observed lifetime from now on", context.qualifiedName(), age, code, context.catalog,
              stated < 0 ? "no lifetime" : stated + " ms");
        }
      }
      // Only now due: a thread that sees it refreshes at once, and must schedule the new keys by
      // the lifetime just learned, not by the stated one.
      snap.rejected = true;
      snap.due = true;
      return true;
    }
  }

  /**
   * Driver: an executor reports that S3 rejected key {@code keyId} of this table. Only keys that
   * are still current count (later reports of one wave find them replaced or marked already).
   *
   * @return null, or the one-line error when the table's reactive refreshes hit their rate limit
   */
  String onExecutorRejection(String keyId, String code) {
    long now = clock.nowMs();
    for (CredentialSlot slot : slots.values()) {
      CredentialSnapshot s = slot.current;
      if (s != null && s.accessKeyId().equals(keyId) && !markRejected(s, code, now)) {
        return rateLimitedMessage(s, code);
      }
    }
    return null;
  }

  private String lifetimes(CredentialSnapshot keys) {
    long stated = keys.statedLifetimeMs();
    return "stated lifetime " + (stated < 0 ? "none" : stated + " ms")
        + (stated < 0 && policy.assumedLifetimeMs > 0 ? " (assumed " + policy.assumedLifetimeMs + " ms)" : "")
        + ", observed " + (lastObservedLifetimeMs < 0 ? "?" : lastObservedLifetimeMs + " ms");
  }

  // Short enough for PySpark's one-line error (400 characters) with a long table name.
  private String rejectedAgainMessage(CredentialSnapshot keys, String code, long ageMs) {
    String knob = keys.statedLifetimeMs() < 0
        ? "set " + ShimKeys.REFRESH_ASSUMED_LIFETIME_MS + " below the observed lifetime"
        : "if clocks disagree, " + ShimKeys.REFRESH_MAX_CLOCK_SKEW_MS;
    return "S3 rejected the storage credentials of table " + context.qualifiedName() + " again " + ageMs
        + " ms after a refresh (" + code + "): " + lifetimes(keys)
        + "; refreshing cannot help: check the catalog's credential vending (role session duration, clock); " + knob;
  }

  private String rateLimitedMessage(CredentialSnapshot keys, String code) {
    return "S3 rejected the storage credentials of table " + context.qualifiedName() + " (" + code + ") more than "
        + policy.reactiveMaxPerMinute + " times in a minute: " + lifetimes(keys) + "; raise "
        + ShimKeys.REFRESH_REACTIVE_MAX_PER_MINUTE + " (now " + policy.reactiveMaxPerMinute
        + ") or check the catalog's credential vending";
  }

  private static long hardMarginMs(CredentialSnapshot s) {
    long lifetime = s.lifetimeMs();
    return lifetime < 0 ? HARD_MARGIN_MS : Math.min(HARD_MARGIN_MS, lifetime / 4);
  }

  private String strategyHint() {
    if (!refreshTokens.isEmpty()) {
      return RefreshStrategy.REFRESH_TOKEN.label;
    }
    if (context.staged) {
      return RefreshStrategy.RESTAGE.label;
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
          CredentialSnapshot snap = scheduled(CredentialSnapshot.fromConfig(config, now, policy));
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
        if (slot == null || slot.current != snapshots[i] || snapshots[i].rejected) {
          return false; // replaced, or S3 rejected these keys since the reply was encoded
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
      if (snap == null || now >= snap.expiresAtMs || snap.rejected) {
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
      CredentialSnapshot snap = config == null ? null : scheduled(CredentialSnapshot.fromConfig(config, now, policy));
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
  @Override
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
    node.put("rejection_count", rejectionCount.get());
    node.put("observed_lifetime_ms", lastObservedLifetimeMs);
    node.put("retried_calls", retriedCalls.get());
    node.put("max_retry_wait_ms", maxRetryWaitMs.get());
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
