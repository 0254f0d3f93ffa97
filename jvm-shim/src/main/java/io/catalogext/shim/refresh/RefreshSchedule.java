package io.catalogext.shim.refresh;

import io.catalogext.shim.config.RefreshPolicy;

/**
 * When a table's keys are renewed ahead of time, on the driver: at most once per check interval,
 * when a credential is due and the table was used since it was fetched (an idle table is renewed on
 * its next use instead). Keeps the table's activity, which idle eviction goes by.
 *
 * <p>Python twin: {@code pyspark_catalog_ext.refresh.scheduler}.
 */
final class RefreshSchedule {
  private final RefreshPolicy policy;
  private final long createdAtMs;
  private volatile long lastUsedAtMs;
  private volatile long lastCheckAtMs = Long.MIN_VALUE / 2;

  RefreshSchedule(RefreshPolicy policy, long createdAtMs) {
    this.policy = policy;
    this.createdAtMs = createdAtMs;
  }

  void used(long now) {
    lastUsedAtMs = now;
  }

  long lastUsedAtMs() {
    return lastUsedAtMs;
  }

  long createdAtMs() {
    return createdAtMs;
  }

  /** When the table last mattered: created, used or refreshed ({@code lastRefreshAtMs}). */
  long lastActiveAtMs(long lastRefreshAtMs) {
    return Math.max(createdAtMs, Math.max(lastUsedAtMs, lastRefreshAtMs));
  }

  /** Whether a check interval has passed since the last check (and counts this one). */
  boolean checkNow(long now) {
    if (now - lastCheckAtMs < policy.checkIntervalMs) {
      return false;
    }
    lastCheckAtMs = now;
    return true;
  }

  /** Whether the soonest-expiring keys are due and were used since their fetch. */
  boolean refreshDue(long now, CredentialSlots slots) {
    CredentialSnapshot soonest = slots.soonest().orElse(null);
    return soonest != null && now >= soonest.refreshAtMs && lastUsedAtMs >= soonest.fetchedAtMs;
  }
}
