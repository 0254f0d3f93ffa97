package io.catalogext.shim.refresh;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.events.ShimMetrics;
import io.catalogext.shim.session.ServerClocks;

import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A table's record of S3 rejecting its keys before their stated expiry: each rejection wave is
 * counted once, within the reactive refreshes allowed per minute; the catalog's real key lifetime
 * is learned from it (keys from then on are renewed by it); and the one-line errors say what was
 * stated and what was observed.
 *
 * <p>Python twin: {@code pyspark_catalog_ext.refresh.rejection}.
 */
final class RejectionLedger {
  private static final Logger LOG = LoggerFactory.getLogger(RejectionLedger.class);
  /** Keys rejected younger than this (revoked, not expired) do not shorten the learned lifetime (the shared spec's). */
  static final long MIN_LEARNED_LIFETIME_MS = CredentialRules.LEARN_MIN_AGE_MS;

  private final RefreshSubject subject;
  private final RefreshPolicy policy;
  /** Where the learned lifetime goes: the table's catalog session's. */
  private final ServerClocks clocks;
  /** Epoch ms of this table's reactive refreshes within the last minute (the rate limit's window). */
  private final ArrayDeque<Long> reactiveRefreshes = new ArrayDeque<>();
  /** Driver: the key id of the last rejection wave counted (guarded by reactiveRefreshes). */
  private String countedKeyId;
  /** How long the last keys S3 rejected early had lived (-1: none yet); for the one-line error. */
  private volatile long lastObservedLifetimeMs = -1;
  private final AtomicLong rejectionCount = new AtomicLong();
  private final AtomicLong retriedCalls = new AtomicLong();
  private final AtomicLong maxRetryWaitMs = new AtomicLong();

  RejectionLedger(RefreshSubject subject, RefreshPolicy policy, ServerClocks clocks) {
    this.subject = subject;
    this.policy = policy;
    this.clocks = clocks;
  }

  /** Keys rejected {@code ageMs} after their fetch (before any counting): for the messages. */
  void observed(long ageMs) {
    lastObservedLifetimeMs = ageMs;
  }

  /**
   * Driver: S3 rejected {@code snap} (here, or in an executor that reported it). Counts it once,
   * within the rate limit, learns the catalog's real lifetime and reports both.
   *
   * @return false when the table's reactive refreshes hit reactive-max-per-minute
   */
  boolean markRejected(CredentialSnapshot snap, String code, long now) {
    TableContext context = subject.context();
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
        learned(context, code, age, stated);
      }
      // Only now due: a thread that sees it refreshes at once, and must schedule the new keys by
      // the lifetime just learned, not by the stated one.
      snap.rejected = true;
      snap.due = true;
      return true;
    }
  }

  private void learned(TableContext context, String code, long age, long stated) {
    long learned = clocks.learnLifetime(age);
    if (learned != age) {
      return;
    }
    ObjectNode event = EventLog.fields();
    event.put("catalog", context.catalog);
    if (stated < 0) {
      event.putNull("stated_lifetime_ms");
    } else {
      event.put("stated_lifetime_ms", stated);
    }
    event.put("observed_lifetime_ms", age);
    EventLog.emit("credentials.lifetime-learned", event);
    LOG.warn("catalog-ext: the store rejected the credentials of {} after {} ms ({}); catalog {}"
        + " states {}: renewing by the observed lifetime from now on", context.qualifiedName(), age, code, context.catalog,
        stated < 0 ? "no lifetime" : stated + " ms");
  }

  /** A call S3 rejected went through after waiting {@code waitMs} for new keys. */
  void retried(long waitMs) {
    retriedCalls.incrementAndGet();
    maxRetryWaitMs.accumulateAndGet(waitMs, Math::max);
    ShimMetrics.get().rejectedCallRetried(waitMs);
  }

  private String lifetimes(CredentialSnapshot keys) {
    long stated = keys.statedLifetimeMs();
    return "stated lifetime " + (stated < 0 ? "none" : stated + " ms")
        + (stated < 0 && policy.assumedLifetimeMs > 0 ? " (assumed " + policy.assumedLifetimeMs + " ms)" : "")
        + ", observed " + (lastObservedLifetimeMs < 0 ? "?" : lastObservedLifetimeMs + " ms");
  }

  // Short enough for PySpark's one-line error (400 characters) with a long table name.
  String rejectedAgainMessage(CredentialSnapshot keys, String code, long ageMs) {
    String knob = keys.statedLifetimeMs() < 0
        ? "set " + ShimKeys.REFRESH_ASSUMED_LIFETIME_MS + " below the observed lifetime"
        : "if clocks disagree, " + ShimKeys.REFRESH_MAX_CLOCK_SKEW_MS;
    return keys.storeName() + " rejected the storage credentials of table " + subject.context().qualifiedName() + " again " + ageMs
        + " ms after a refresh (" + code + "): " + lifetimes(keys)
        + "; refreshing cannot help: check the catalog's credential vending (role session duration, clock); " + knob;
  }

  String rateLimitedMessage(CredentialSnapshot keys, String code) {
    if (policy.reactiveMaxPerMinute == 0) {
      return keys.storeName() + " rejected the storage credentials of table " + subject.context().qualifiedName() + " (" + code
          + ") and " + ShimKeys.REFRESH_REACTIVE_MAX_PER_MINUTE + " is 0 (no refresh on a rejection): " + lifetimes(keys)
          + "; raise it, or renew earlier (" + ShimKeys.REFRESH_MIN_AHEAD_MS + ", " + ShimKeys.REFRESH_LIFETIME_FRACTION + ")";
    }
    return keys.storeName() + " rejected the storage credentials of table " + subject.context().qualifiedName() + " (" + code
        + ") more than " + policy.reactiveMaxPerMinute + " times in a minute: " + lifetimes(keys) + "; raise "
        + ShimKeys.REFRESH_REACTIVE_MAX_PER_MINUTE + " (now " + policy.reactiveMaxPerMinute
        + ") or check the catalog's credential vending";
  }

  /** The ledger's status (no secrets). */
  void describeInto(ObjectNode node) {
    node.put("rejection_count", rejectionCount.get());
    node.put("observed_lifetime_ms", lastObservedLifetimeMs);
    node.put("retried_calls", retriedCalls.get());
    node.put("max_retry_wait_ms", maxRetryWaitMs.get());
  }
}
