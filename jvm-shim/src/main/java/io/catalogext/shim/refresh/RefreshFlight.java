package io.catalogext.shim.refresh;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.util.DaemonThreads;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One table's refreshes, single-flight: any number of readers, clients and tasks that find its
 * keys due cause one request to its source, and a failed attempt backs off before the next. Each
 * refresh is counted and reported ({@code credential_refresh.started/finished}).
 *
 * <p>The generation counts the source's answers put in place (new keys, or its word that the held
 * ones are current): a caller reads it before it looks at the keys, and a refresh starts only if
 * none landed since (else the catalog would get a second, early request).
 */
final class RefreshFlight {
  private static final Logger LOG = LoggerFactory.getLogger(RefreshFlight.class);
  // Process-wide: background refreshes of every entry, on daemon threads (each holds its entry's lock).
  private static final ExecutorService ASYNC = Executors.newCachedThreadPool(DaemonThreads.named("catalog-ext-refresh"));

  private final RefreshSubject subject;
  private final EntryRefresher source;
  private final CredentialSlots slots;
  private final CredentialSlots.Snapshots snapshots;
  private final RefreshPolicy policy;
  private final Clock clock;
  /** Where background refreshes run: the shared daemon pool (a test's fake clock: the caller's thread). */
  private final Executor async;

  private final Object lock = new Object();
  private final AtomicLong generation = new AtomicLong();
  private final AtomicBoolean asyncInFlight = new AtomicBoolean();
  private final AtomicLong refreshCount = new AtomicLong();
  private final AtomicLong failureCount = new AtomicLong();
  /** Answers with the keys already held (a catalog's credential cache), which are no refresh. */
  private final AtomicLong cachedAnswers = new AtomicLong();
  private final Map<String, AtomicLong> strategyCounts = new ConcurrentHashMap<>();
  private volatile int consecutiveFailures;
  private volatile long nextAttemptAtMs;
  /** Until then the catalog's last answer confirmed the held keys as its current ones (its cache). */
  private volatile long confirmedUntilMs;
  private volatile long lastRefreshAtMs;
  private volatile String lastStrategy = "initial";
  private volatile String lastError;
  /**
   * What status shows of the last failure: its type alone. Its message can carry a server's or a
   * source's text (a token echoed in an error body), and status is read by every SQL client of a
   * shared driver; the message goes to the driver log and to the caller waiting on the refresh.
   */
  private volatile String lastErrorType;

  RefreshFlight(RefreshSubject subject, EntryRefresher source, CredentialSlots slots, CredentialSlots.Snapshots snapshots,
      RefreshPolicy policy, Clock clock) {
    this(subject, source, slots, snapshots, policy, clock, ASYNC);
  }

  RefreshFlight(RefreshSubject subject, EntryRefresher source, CredentialSlots slots, CredentialSlots.Snapshots snapshots,
      RefreshPolicy policy, Clock clock, Executor async) {
    this.async = async;
    this.subject = subject;
    this.source = source;
    this.slots = slots;
    this.snapshots = snapshots;
    this.policy = policy;
    this.clock = clock;
  }

  long generation() {
    return generation.get();
  }

  boolean inFlight() {
    return asyncInFlight.get();
  }

  String lastError() {
    return lastError;
  }

  String lastStrategy() {
    return lastStrategy;
  }

  long lastRefreshAtMs() {
    return lastRefreshAtMs;
  }

  /**
   * Whether the catalog's last answer (inside its cache window) confirmed the held keys as its
   * current ones: executors asking the driver then take them as the freshest there are.
   */
  boolean confirmedCurrent(long now) {
    return now < confirmedUntilMs;
  }

  /**
   * Starts a background refresh unless one is running or a failure backoff is pending, and unless
   * a refresh landed since {@code seen}: the generation the caller read before it looked at the
   * keys it found due.
   */
  void refreshAsync(long seen) {
    if (clock.nowMs() < nextAttemptAtMs || !asyncInFlight.compareAndSet(false, true)) {
      return;
    }
    async.execute(() -> {
      try {
        refreshIfGeneration(seen, -1);
      } catch (Exception e) {
        // Already counted and logged; the old credentials stay in use while valid.
      } finally {
        asyncInFlight.set(false);
      }
    });
  }

  /**
   * Waits until a refresh lands after generation {@code seen}, starting one if none did: failed
   * attempts are retried after their backoff until {@code deadline}; callers queued behind an
   * attempt that fails wait for the next one instead of trying at once (no stampede).
   *
   * @return true if this call fetched the new credentials
   */
  boolean await(long seen, long deadline) throws Exception {
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

  /**
   * Refreshes unless someone else already did since {@code seenGeneration}: concurrent callers
   * queue on the lock and then find the new generation, so the catalog sees one request. With
   * {@code seenFailures} >= 0, also fails when an attempt failed since then.
   *
   * @return true if this call fetched new credentials
   */
  boolean refreshIfGeneration(long seenGeneration, long seenFailures) throws Exception {
    synchronized (lock) {
      if (generation.get() != seenGeneration) {
        return false;
      }
      if (seenFailures >= 0 && failureCount.get() != seenFailures) {
        throw new FailedMeanwhile();
      }
      TableContext context = subject.context();
      ObjectNode event = EventLog.fields();
      event.put("table", context.qualifiedName());
      event.put("staged", context.staged);
      EventLog.emit("credential_refresh.started", event.deepCopy());
      long startedNanos = System.nanoTime();
      RefreshResult result;
      try {
        result = source.fetch(subject);
        if (result.degradedError == null && slots.holds(result) && slots.allStatedExpiry()) {
          sameKeys(result.strategy); // throws when the keys handed back have expired
          event.put("outcome", "cached");
          event.put("strategy", result.strategy);
          event.put("duration_s", (System.nanoTime() - startedNanos) / 1e9);
          EventLog.emit("credential_refresh.finished", event);
          return false;
        }
      } catch (Exception e) {
        failed(e);
        event.put("outcome", "failed");
        event.put("error_class", e.getClass().getSimpleName()); // the class only: messages may name hosts
        event.put("duration_s", (System.nanoTime() - startedNanos) / 1e9);
        EventLog.emit("credential_refresh.finished", event);
        throw e;
      }
      install(result);
      if (result.degradedError != null) { // the driver's still-valid old keys: no refresh
        event.put("outcome", "failed");
        event.put("error_class", IllegalStateException.class.getSimpleName()); // as failed() records it
      } else {
        event.put("outcome", "refreshed");
      }
      event.put("strategy", result.strategy);
      event.put("duration_s", (System.nanoTime() - startedNanos) / 1e9);
      slots.soonest().ifPresent(snap -> {
        event.put("expires_at", snap.expiresAtMs / 1000.0);
        event.put("next_refresh", snap.refreshAtMs / 1000.0);
      });
      EventLog.emit("credential_refresh.finished", event);
      return true;
    }
  }

  /** How many refreshes the source answered with the keys the table held (its credential cache). */
  long cachedAnswerCount() {
    return cachedAnswers.get();
  }

  /** An attempt by another caller failed since this one looked. */
  private static final class FailedMeanwhile extends Exception {
    private static final long serialVersionUID = 1L;

    FailedMeanwhile() {
      super(null, null, false, false);
    }
  }

  /**
   * The source answered with the keys the table holds (a catalog's credential cache): no renewal,
   * not counted as one. The catalog is asked again once its cache window has passed
   * ({@link CredentialRules#cacheWindowEndMs}), and the generation moves on, so callers queued
   * behind this request take the held keys instead of asking the catalog one after another.
   *
   * @throws IllegalStateException one line, when the keys handed back have expired
   */
  private void sameKeys(String strategy) {
    long now = clock.nowMs();
    cachedAnswers.incrementAndGet();
    CredentialSnapshot soonest = slots.soonest().orElse(null);
    String table = subject.context().qualifiedName();
    String how = strategy.split(" ")[0];
    if (soonest != null && now >= soonest.statedExpiresAtMs) {
      throw new IllegalStateException("the catalog answered the refresh of " + table + " (" + how + ") with the same keys,"
          + " which expired " + (now - soonest.statedExpiresAtMs) / 1000.0 + " s ago: its credential cache outlives the keys it"
          + " vends; check the catalog's credential cache setting against its credential lifetime");
    }
    lastError = null;
    consecutiveFailures = 0;
    nextAttemptAtMs = soonest == null
        ? now + policy.maxBackoffMs
        : CredentialRules.cacheWindowEndMs(soonest.fetchedAtMs, soonest.expiresAtMs,
            soonest.expiresAtMs - soonest.hardMarginMs(), now, policy.initialBackoffMs, policy.maxBackoffMs);
    confirmedUntilMs = nextAttemptAtMs;
    generation.incrementAndGet();
    LOG.info("catalog-ext: the catalog answered the refresh of {} ({}) with the keys it vended before (its credential"
        + " cache): not renewed; asking again in {} ms", table, how, nextAttemptAtMs - now);
  }

  /** Installs a result; fresh keys count as a refresh, a source's old keys as a failure. */
  private void install(RefreshResult result) {
    long now = clock.nowMs();
    slots.install(result, now, snapshots);
    if (result.degradedError != null) {
      // Old (still valid) keys: installed for waiting readers, but the refresh failed and backs off.
      generation.incrementAndGet();
      failed(new IllegalStateException(result.degradedError));
      return;
    }
    lastStrategy = result.strategy;
    confirmedUntilMs = 0;
    strategyCounts.computeIfAbsent(result.strategy.split(" ")[0], k -> new AtomicLong()).incrementAndGet();
    lastRefreshAtMs = now;
    lastError = null;
    lastErrorType = null;
    consecutiveFailures = 0;
    nextAttemptAtMs = 0;
    refreshCount.incrementAndGet();
    generation.incrementAndGet();
    CredentialSnapshot any = slots.soonest().orElse(null);
    boolean timed = any != null && any.expiresAtMs != Long.MAX_VALUE;
    LOG.info(
        "catalog-ext: refreshed storage credentials for {} via {} (refresh #{}, {} failures so far);"
            + " valid for {} s, next refresh in {} s",
        subject.context().qualifiedName(),
        result.strategy,
        refreshCount.get(),
        failureCount.get(),
        timed ? (any.expiresAtMs - now) / 1000 : "?",
        timed ? (any.refreshAtMs - now) / 1000 : "?");
  }

  private void failed(Exception e) {
    failureCount.incrementAndGet();
    int failures = ++consecutiveFailures;
    long backoff = policy.backoffMs(failures);
    nextAttemptAtMs = clock.nowMs() + backoff;
    lastError = e.getMessage();
    lastErrorType = e.getClass().getSimpleName();
    LOG.warn("catalog-ext: credential refresh for {} failed ({} in a row), retrying in {} ms: {}",
        subject.context().qualifiedName(), failures, backoff, e.getMessage());
  }

  /** The refresh's status (no secrets). */
  void describeInto(ObjectNode node) {
    node.put("generation", generation.get());
    node.put("refresh_count", refreshCount.get());
    node.put("failure_count", failureCount.get());
    node.put("cached_answers", cachedAnswers.get());
    node.put("last_strategy", lastStrategy);
    var counts = node.putObject("strategy_counts");
    strategyCounts.forEach((k, v) -> counts.put(k, v.get()));
    node.put("last_refresh_at_ms", lastRefreshAtMs);
    node.put("last_error", lastErrorType == null ? null : lastErrorType + " (the driver log has its message)");
  }
}
