package io.catalogext.shim.refresh;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.errors.CredentialsExpiredException;
import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.session.ServerClocks;
import io.catalogext.shim.util.Json;

import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.credentials.Credential;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import software.amazon.awssdk.auth.credentials.AwsCredentials;

/**
 * The registry's entry for one table identity (catalog, identifier, location) in one JVM, however
 * often the catalog hands the table out. It puts together the table's keys ({@link CredentialSlots},
 * read lock-free on the hot path), their single-flight refresh ({@link RefreshFlight}), when it
 * runs ahead of time ({@link RefreshSchedule}), the record of S3 rejecting them
 * ({@link RejectionLedger}) and the driver's answers to executors ({@link ExecutorReplies}); its
 * own job is the readers' slow path: keys that are due, missing, expiring or rejected.
 *
 * <p>Python twin: {@code pyspark_catalog_ext.refresh.entry}.
 */
public final class TableEntry implements RefreshSubject {
  public final String handle;
  /** The table as the catalog last handed it out (a later hand-out of the same table replaces it). */
  public volatile TableContext context;
  final RefreshPolicy policy;
  private final EntryRefresher source;
  private final Clock clock;
  /** What the catalog session that loaded the table learned (lifetime, skew); the driver's only. */
  private final ServerClocks clocks;

  private final CredentialSlots slots = new CredentialSlots();
  private final RefreshFlight flight;
  private final RefreshSchedule schedule;
  private final RejectionLedger ledger;
  private final ExecutorReplies replies;

  /** Executors: the rejected key id the next ask of the driver reports (the driver checks it is current). */
  volatile String staleKeyId;
  volatile String staleCode;
  /** The last rejection that started a refresh while no store has accepted newer keys (null: none such). */
  private volatile RejectionWave unansweredWave;
  /** Driver: what executors report of these keys. */
  private final ExecutorReports executorReports = new ExecutorReports();
  /** Executors: the key id a store last accepted first (not secret), which the next ask of the driver reports. */
  private volatile String acceptedKeyId;
  /**
   * Driver: the HTTP client this table's refreshes send through: the one that handed it out, then
   * its own auth session's. Null: none yet (re-tracked after an eviction, an executor's).
   */
  private volatile RESTClient catalogClient;
  /** Set while evicted: how a use brings this entry back into the registry. */
  private volatile Consumer<TableEntry> onReuse;

  /**
   * An entry that learns for itself: an executor's (it schedules by the driver's expiries and learns
   * nothing), or a test's.
   */
  public TableEntry(String handle, TableContext context, RefreshPolicy policy, EntryRefresher source, Clock clock) {
    this(handle, context, policy, source, clock, new ServerClocks(context.catalog));
  }

  /** A driver's entry, scheduled by what its catalog session learned ({@code clocks}). */
  public TableEntry(String handle, TableContext context, RefreshPolicy policy, EntryRefresher source, Clock clock,
      ServerClocks clocks) {
    this(handle, context, policy, source, clock, clocks, null);
  }

  /** As above, background refreshes run by {@code async} (null: the shared pool): a fake clock's test runs them inline. */
  TableEntry(String handle, TableContext context, RefreshPolicy policy, EntryRefresher source, Clock clock,
      ServerClocks clocks, Executor async) {
    this.handle = handle;
    this.context = context;
    this.policy = policy;
    this.source = source;
    this.clock = clock;
    this.clocks = clocks;
    this.schedule = new RefreshSchedule(policy, clock.nowMs());
    this.flight = async == null
        ? new RefreshFlight(this, source, slots, this::snapshotOf, policy, clock)
        : new RefreshFlight(this, source, slots, this::snapshotOf, policy, clock, async);
    this.ledger = new RejectionLedger(this, policy, clocks);
    this.replies = new ExecutorReplies(slots, flight, clock, schedule::used);
  }

  // ---------------------------------------------------------------- what a refresh source is told

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
  public RESTClient catalogClient() {
    return catalogClient;
  }

  /**
   * The client of this table's own login (see {@link #catalogClient}): the catalog's refresh
   * strategies send through it, never through another table's.
   */
  public void useCatalogClient(RESTClient client) {
    this.catalogClient = client;
  }

  @Override
  public Map<String, String> refreshTokens() {
    return slots.refreshTokens();
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
  public String acceptedKeyId() {
    return acceptedKeyId;
  }

  // ---------------------------------------------------------------- keys

  /** Records credentials a client starts with (kept if the slot already has some). */
  public CredentialSlot seed(String prefix, Map<String, String> config) {
    return slots.seed(prefix, config, snapshotOf(config, clock.nowMs()));
  }

  public CredentialSnapshot snapshot(String prefix) {
    return slots.snapshot(prefix);
  }

  Map<String, CredentialSlot> slots() {
    return slots.all();
  }

  /** Whether every slot's keys have expired (or it has none). */
  boolean allExpired(long now) {
    return slots.allExpired(now);
  }

  /** The earliest expiry after {@code now} among this table's keys (Long.MAX_VALUE: none). */
  long earliestExpiryAfter(long now) {
    return slots.earliestExpiryAfter(now);
  }

  /**
   * The catalog handed this table out again (a load after its CTAS, say): take what it said about
   * the table, and its credentials where they outlive the ones held.
   */
  void adopt(TableContext newer, Map<String, String> tableConfig, List<Credential> credentials) {
    context = newer;
    slots.adopt(tableConfig, credentials, clock.nowMs(), this::snapshotOf);
  }

  /** What this entry's catalog session learned: the S3 clients' Date watch reports into it. */
  ServerClocks clocks() {
    return clocks;
  }

  /** This JVM asks the catalog (or a Python source) itself; executors ask the driver. */
  boolean drivesRefresh() {
    return source.drivesRefresh();
  }

  /**
   * Keys from s3.* properties as this JVM should schedule them: on the driver by a learned lifetime
   * and on the server's clock (executors get expiries already on the driver's).
   */
  private CredentialSnapshot snapshotOf(Map<String, String> config, long now) {
    CredentialSnapshot snap = CredentialSnapshot.fromConfig(config, now, policy);
    if (snap == null || !drivesRefresh()) {
      return snap;
    }
    CredentialSnapshot out = snap.onLocalClock(clocks.skewMs(), policy, now)
        .withLearnedLifetime(clocks.learnedLifetimeMs(), policy, now);
    executorReports.handedOut(out);
    return out;
  }

  // ---------------------------------------------------------------- refresh

  public long generation() {
    return flight.generation();
  }

  /** See {@link RefreshFlight#refreshIfGeneration}; true if this call fetched. */
  boolean refreshIfGeneration(long seenGeneration) throws Exception {
    return flight.refreshIfGeneration(seenGeneration, -1);
  }

  /** See {@link RefreshFlight#refreshAsync}. */
  void refreshAsync(long seen) {
    flight.refreshAsync(seen);
  }

  /** The driver's scheduling pass (see {@link RefreshSchedule}). */
  void scheduleIfDue(long now) {
    if (!schedule.checkNow(now)) {
      return;
    }
    long seen = flight.generation(); // before reading the keys
    if (schedule.refreshDue(now, slots)) {
      flight.refreshAsync(seen);
    }
  }

  /** Called by the JVM-wide ticker about once a second: usage, and which snapshots are due. */
  public void tick(long now) {
    if (slots.tick(now)) {
      schedule.used(now);
    }
  }

  public long lastUsedAtMs() {
    return schedule.lastUsedAtMs();
  }

  /** When this entry last mattered: created, used or refreshed. Idle eviction counts from here. */
  long lastActiveAtMs() {
    return schedule.lastActiveAtMs(flight.lastRefreshAtMs());
  }

  /**
   * Dropped from the registry (idle, expired): flag every snapshot due so that a provider still
   * holding this entry leaves the hot path, and bring the entry back through {@code onReuse}.
   */
  void evicted(Consumer<TableEntry> onReuse) {
    this.onReuse = onReuse;
    slots.markAllDue();
  }

  // ---------------------------------------------------------------- the readers' slow path

  /** The slow path of TableCredentialsProvider: the snapshot is due, missing or expiring. */
  AwsCredentials resolveSlow(CredentialSlot slot) {
    return resolveSnapshot(slot).credentials;
  }

  /**
   * The slot's keys to send a request with, when the reader found them due, missing or expiring:
   * the held ones while they outlive the hard margin (a refresh starts in the background), else
   * fresh ones, waited for.
   */
  CredentialSnapshot resolveSnapshot(CredentialSlot slot) {
    long now = clock.nowMs();
    schedule.used(now);
    Consumer<TableEntry> reuse = onReuse;
    if (reuse != null) {
      onReuse = null;
      reuse.accept(this); // evicted while idle: tracked (and scheduled) again
    }
    long seen = flight.generation(); // before reading the keys: see RefreshFlight
    CredentialSnapshot current = slot.current;
    boolean usable = current != null && !current.rejected && !current.inHardMargin(now);
    if (usable && now < current.refreshAtMs) {
      return current; // not yet due (short keys leave the hot path early), or a refresh landed
    }
    if (usable) {
      flight.refreshAsync(seen);
      return current;
    }
    if (current != null && !current.rejected && now < current.expiresAtMs && flight.confirmedCurrent(now)) {
      // In the hard margin, but the catalog's cache confirmed these keys moments ago and has nothing
      // newer before its window ends: go on with them (refresh-scenarios.json
      // `same-keys-reader-in-margin-waits-out-the-window`).
      return current;
    }
    // Expired or about to: wait for fresh credentials rather than send a doomed request. Failed
    // attempts are retried after their backoff until timeout-ms has passed; callers queued behind
    // an attempt that fails wait for the next one instead of trying at once (no stampede).
    try {
      flight.await(flight.generation(), now + policy.timeoutMs);
    } catch (CredentialsRejectedException e) {
      throw e;
    } catch (Exception e) {
      CredentialSnapshot latest = slot.current;
      if (latest != null && clock.nowMs() < latest.expiresAtMs && !latest.rejected) {
        return latest;
      }
      throw new CredentialsExpiredException("Storage credentials for table " + context.qualifiedName()
          + " expired and refresh via " + strategyHint() + " failed: " + e.getMessage()
          + ". The write was stopped before anything was committed.", e);
    }
    CredentialSnapshot fresh = slot.current != null ? slot.current : slots.snapshot("");
    if (fresh == null) {
      throw new CredentialsExpiredException(
          "No storage credentials for table " + context.qualifiedName() + " after refresh", null);
    }
    return fresh;
  }

  /**
   * The store answered {@code code} (the keys are no longer valid) to a request signed with {@code used}
   * of {@code slot}. Marks them stale, has them refreshed (single-flight: on the driver only while
   * they are still the table's current keys, so a rejection wave costs one catalog request) and
   * waits for the new ones, bounded by timeout-ms.
   *
   * @return true: send the request again (with the slot's current keys); false: nothing was sent
   *     with this table's keys, fail as S3 answered
   * @throws CredentialsRejectedException when keys a reactive refresh just handed out are rejected
   *     before S3 ever accepted them, or the table's reactive refreshes hit their rate limit (0: off;
   *     credential-rules.json `reactive-off`)
   */
  boolean onRejected(CredentialSlot slot, CredentialSnapshot used, String code, Throwable rejection) {
    if (used == null) {
      return false;
    }
    long seen = flight.generation(); // before looking at the keys: see RefreshFlight
    CredentialSnapshot current = slot.current;
    if (current != null && current != used && !current.rejected) {
      return true; // replaced since the request was signed: just send it again
    }
    long now = clock.nowMs();
    long age = now - used.fetchedAtMs;
    if (cannotHelp(used, age)) {
      throw rejectedAgain(used, code, rejection);
    }
    ledger.observed(age);
    if (drivesRefresh()) {
      if (!ledger.markRejected(used, code, now)) {
        throw new CredentialsRejectedException(ledger.rateLimitedMessage(used, code), rejection);
      }
    } else {
      used.rejected = true;
      used.due = true;
      staleCode = code;
      staleKeyId = used.accessKeyId();
    }
    long cachedBefore = flight.cachedAnswerCount();
    try {
      if (flight.await(seen, now + policy.timeoutMs)) {
        unansweredWave = new RejectionWave(used, age);
      }
      CredentialSnapshot renewed = slot.current;
      if (drivesRefresh() && flight.cachedAnswerCount() > cachedBefore && renewed != null
          && renewed.accessKeyId().equals(used.accessKeyId())) {
        // The catalog answered with the keys the store just rejected (its credential cache): sending
        // again is sure to be rejected (credential-rules.json `same-keys-after-rejection`).
        throw new CredentialsExpiredException(used.storeName() + " rejected the storage credentials of table "
            + context.qualifiedName() + " (" + code + ") " + age + " ms after their fetch, and the catalog answered the"
            + " refresh with the same keys (its credential cache): the keys die sooner than the catalog says; check its"
            + " credential lifetime and cache setting", rejection);
      }
    } catch (CredentialsRejectedException | CredentialsExpiredException e) {
      throw e;
    } catch (Exception e) {
      throw new CredentialsExpiredException(used.storeName() + " rejected the storage credentials of table " + context.qualifiedName()
          + " (" + code + ") and refresh via " + strategyHint() + " failed: " + e.getMessage()
          + ". The write was stopped before anything was committed.", rejection);
    } finally {
      staleKeyId = null;
    }
    return true;
  }

  /**
   * Whether refreshing cannot help keys {@code used} rejected at {@code age} ms (the caller has
   * checked they are the table's current ones): they are newer than the keys whose rejection last
   * started a refresh, no store has accepted newer keys since, and they lived no longer than those,
   * or less than a learnable lifetime: keys that die that young were revoked, and which of them a
   * busy machine happened to use later says nothing (credential-rules.json `refreshing-cannot-help`;
   * Python twin: {@code pyspark_catalog_ext.refresh.refresher.CredentialRefresher.dead_on_arrival}).
   */
  boolean cannotHelp(CredentialSnapshot used, long age) {
    RejectionWave wave = unansweredWave;
    return wave != null && wave.isOlderThan(used)
        && (age <= wave.keysLivedMs || age < RejectionLedger.MIN_LEARNED_LIFETIME_MS);
  }

  /** A store accepted a request signed with {@code used} for the first time. */
  void accepted(CredentialSnapshot used) {
    RejectionWave wave = unansweredWave;
    if (wave != null && wave.isOlderThan(used)) {
      unansweredWave = null;
    }
    executorReports.onAccepted(used.accessKeyId());
    if (!drivesRefresh()) {
      acceptedKeyId = used.accessKeyId();
    }
  }

  /**
   * The caller's one-line error for keys {@code used} rejected ({@code code}) where refreshing cannot
   * help, or on a call's last send (credential-rules.json `sends-per-call`).
   */
  CredentialsRejectedException rejectedAgain(CredentialSnapshot used, String code, Throwable rejection) {
    long age = clock.nowMs() - used.fetchedAtMs;
    return new CredentialsRejectedException(ledger.rejectedAgainMessage(used, code, age), rejection);
  }

  /** A call S3 rejected went through after waiting {@code waitMs} for new keys. */
  void retried(long waitMs) {
    ledger.retried(waitMs);
  }

  /** Driver: see {@link ExecutorReports#onRejection}. */
  String onExecutorRejection(String keyId, String code, String acceptedKeyId) {
    return executorReports.onRejection(slots, ledger, keyId, code, acceptedKeyId, clock.nowMs());
  }

  /** Driver: an executor's ask says a store last accepted key {@code keyId} there (null: none). */
  void onExecutorAccepted(String keyId) {
    executorReports.onAccepted(keyId);
  }

  private String strategyHint() {
    if (!slots.refreshTokens().isEmpty()) {
      return RefreshStrategy.REFRESH_TOKEN.label;
    }
    if (context.staged) {
      return RefreshStrategy.RESTAGE.label;
    }
    String last = flight.lastStrategy();
    return "initial".equals(last) ? "the table's refresh source" : last;
  }

  // ---------------------------------------------------------------- executors and status

  /** What the driver tells an executor about this table, encoded for the plugin RPC. */
  byte[] executorReplyBytes() {
    return replies.bytes();
  }

  PluginMessages.Reply executorReply() {
    return replies.reply();
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
    node.put("has_storage_refresh_token", !slots.refreshTokens().isEmpty());
    flight.describeInto(node);
    node.put("created_at_ms", schedule.createdAtMs());
    node.put("last_used_at_ms", schedule.lastUsedAtMs());
    ledger.describeInto(node);
    slots.describeInto(node.putArray("prefixes"));
    return node;
  }
}
