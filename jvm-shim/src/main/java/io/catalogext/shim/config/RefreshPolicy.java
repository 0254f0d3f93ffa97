package io.catalogext.shim.config;

import java.io.Serializable;
import java.util.Map;

/**
 * When and how hard to renew, from a catalog's {@code catalog-ext.refresh.*} properties: renew once
 * less than max(min-ahead, fraction x lifetime) remains (Delta Sharing's driver cache uses a fixed
 * 15 min; a fraction keeps short lifetimes workable), look every check interval, back off
 * exponentially after failures, and give up on one refresh attempt after the timeout.
 *
 * <p>Python twin: {@code pyspark_catalog_ext.refresh.policy}.
 */
public final class RefreshPolicy implements Serializable {
  private static final long serialVersionUID = 1L;
  public static final long DEFAULT_MIN_AHEAD_MS = Knobs.longValue(Map.of(), ShimKeys.REFRESH_MIN_AHEAD_MS);
  public static final double DEFAULT_FRACTION = Knobs.fractionValue(Map.of(), ShimKeys.REFRESH_LIFETIME_FRACTION);
  public static final long DEFAULT_CHECK_INTERVAL_MS = Knobs.longValue(Map.of(), ShimKeys.REFRESH_CHECK_INTERVAL_MS);
  public static final long DEFAULT_INITIAL_BACKOFF_MS = Knobs.longValue(Map.of(), ShimKeys.REFRESH_INITIAL_BACKOFF_MS);
  public static final long DEFAULT_MAX_BACKOFF_MS = Knobs.longValue(Map.of(), ShimKeys.REFRESH_MAX_BACKOFF_MS);
  public static final long DEFAULT_TIMEOUT_MS = Knobs.longValue(Map.of(), ShimKeys.REFRESH_TIMEOUT_MS);
  public static final long DEFAULT_ASSUMED_LIFETIME_MS = Knobs.longValue(Map.of(), ShimKeys.REFRESH_ASSUMED_LIFETIME_MS);
  public static final long DEFAULT_REACTIVE_MAX_PER_MINUTE = Knobs.longValue(Map.of(), ShimKeys.REFRESH_REACTIVE_MAX_PER_MINUTE);
  public static final long DEFAULT_MAX_CLOCK_SKEW_MS = Knobs.longValue(Map.of(), ShimKeys.REFRESH_MAX_CLOCK_SKEW_MS);

  public final long minAheadMs;
  public final double fraction;
  public final long checkIntervalMs;
  public final long initialBackoffMs;
  public final long maxBackoffMs;
  public final long timeoutMs;
  /** Keys vended without an expiry count as expiring this long after their fetch; 0: never. */
  public final long assumedLifetimeMs;
  /** Refreshes of one table per minute started by S3 rejecting its keys early; 0: never. */
  public final long reactiveMaxPerMinute;
  /** Past this skew between the local clock and a server's Date header, expiries use the server's clock. */
  public final long maxClockSkewMs;

  public RefreshPolicy(long minAheadMs, double fraction) {
    this(minAheadMs, fraction, DEFAULT_CHECK_INTERVAL_MS, DEFAULT_INITIAL_BACKOFF_MS, DEFAULT_MAX_BACKOFF_MS,
        DEFAULT_TIMEOUT_MS);
  }

  public RefreshPolicy(
      long minAheadMs, double fraction, long checkIntervalMs, long initialBackoffMs, long maxBackoffMs, long timeoutMs) {
    this(minAheadMs, fraction, checkIntervalMs, initialBackoffMs, maxBackoffMs, timeoutMs, DEFAULT_ASSUMED_LIFETIME_MS);
  }

  public RefreshPolicy(long minAheadMs, double fraction, long checkIntervalMs, long initialBackoffMs, long maxBackoffMs,
      long timeoutMs, long assumedLifetimeMs) {
    this(minAheadMs, fraction, checkIntervalMs, initialBackoffMs, maxBackoffMs, timeoutMs, assumedLifetimeMs,
        DEFAULT_REACTIVE_MAX_PER_MINUTE, DEFAULT_MAX_CLOCK_SKEW_MS);
  }

  public RefreshPolicy(long minAheadMs, double fraction, long checkIntervalMs, long initialBackoffMs, long maxBackoffMs,
      long timeoutMs, long assumedLifetimeMs, long reactiveMaxPerMinute, long maxClockSkewMs) {
    if (reactiveMaxPerMinute < 0 || maxClockSkewMs < 0) {
      throw new IllegalArgumentException(ShimKeys.REFRESH_REACTIVE_MAX_PER_MINUTE + " and "
          + ShimKeys.REFRESH_MAX_CLOCK_SKEW_MS + " must be >= 0");
    }
    this.reactiveMaxPerMinute = reactiveMaxPerMinute;
    this.maxClockSkewMs = maxClockSkewMs;
    if (assumedLifetimeMs < 0) {
      throw new IllegalArgumentException(ShimKeys.REFRESH_ASSUMED_LIFETIME_MS + " must be >= 0 (0: trust keys without expiry)");
    }
    this.assumedLifetimeMs = assumedLifetimeMs;
    if (minAheadMs < 0 || !(fraction >= 0 && fraction < 1) || checkIntervalMs <= 0 || initialBackoffMs <= 0
        || maxBackoffMs < initialBackoffMs || timeoutMs <= 0) {
      throw new IllegalArgumentException(
          "catalog-ext.refresh.*: need min-ahead-ms >= 0, 0 <= lifetime-fraction < 1, check-interval-ms > 0,"
              + " 0 < initial-backoff-ms <= max-backoff-ms and timeout-ms > 0");
    }
    this.minAheadMs = minAheadMs;
    this.fraction = fraction;
    this.checkIntervalMs = checkIntervalMs;
    this.initialBackoffMs = initialBackoffMs;
    this.maxBackoffMs = maxBackoffMs;
    this.timeoutMs = timeoutMs;
  }

  public static RefreshPolicy defaults() {
    return new RefreshPolicy(DEFAULT_MIN_AHEAD_MS, DEFAULT_FRACTION);
  }

  /** From catalog (or FileIO) properties; absent keys take the defaults. */
  public static RefreshPolicy fromProperties(Map<String, String> props) {
    return new RefreshPolicy(
        longProp(props, ShimKeys.REFRESH_MIN_AHEAD_MS, DEFAULT_MIN_AHEAD_MS),
        doubleProp(props, ShimKeys.REFRESH_LIFETIME_FRACTION, DEFAULT_FRACTION),
        longProp(props, ShimKeys.REFRESH_CHECK_INTERVAL_MS, DEFAULT_CHECK_INTERVAL_MS),
        longProp(props, ShimKeys.REFRESH_INITIAL_BACKOFF_MS, DEFAULT_INITIAL_BACKOFF_MS),
        longProp(props, ShimKeys.REFRESH_MAX_BACKOFF_MS, DEFAULT_MAX_BACKOFF_MS),
        longProp(props, ShimKeys.REFRESH_TIMEOUT_MS, DEFAULT_TIMEOUT_MS),
        longProp(props, ShimKeys.REFRESH_ASSUMED_LIFETIME_MS, DEFAULT_ASSUMED_LIFETIME_MS),
        longProp(props, ShimKeys.REFRESH_REACTIVE_MAX_PER_MINUTE, DEFAULT_REACTIVE_MAX_PER_MINUTE),
        longProp(props, ShimKeys.REFRESH_MAX_CLOCK_SKEW_MS, DEFAULT_MAX_CLOCK_SKEW_MS));
  }

  private static long longProp(Map<String, String> props, String key, long fallback) {
    return props.containsKey(key) ? Knobs.longValue(props, key) : fallback;
  }

  private static double doubleProp(Map<String, String> props, String key, double fallback) {
    return props.containsKey(key) ? Knobs.fractionValue(props, key) : fallback;
  }

  /**
   * Wait before the next attempt after {@code failures} consecutive failures: the first backoff doubled
   * per failure, capped, without jitter (credential-rules.json {@code refresh-backoff}; PyIceberg's
   * {@code RefreshPolicy.backoff} is the same).
   */
  public long backoffMs(int failures) {
    long backoff = initialBackoffMs << Math.min(Math.max(failures - 1, 0), 20);
    return Math.min(maxBackoffMs, backoff);
  }

  public long aheadMs(long fetchedAtMs, long expiresAtMs) {
    long lifetime = Math.max(0, expiresAtMs - fetchedAtMs);
    return Math.max(minAheadMs, (long) (lifetime * fraction));
  }

  public long refreshAt(long fetchedAtMs, long expiresAtMs) {
    if (expiresAtMs == Long.MAX_VALUE) {
      return Long.MAX_VALUE;
    }
    long ahead = aheadMs(fetchedAtMs, expiresAtMs);
    // Never schedule before the fetch itself: a lifetime shorter than the margin refreshes at half-life.
    long at = expiresAtMs - ahead;
    return at > fetchedAtMs ? at : fetchedAtMs + Math.max(0, (expiresAtMs - fetchedAtMs) / 2);
  }

  @Override
  public String toString() {
    return "RefreshPolicy{minAheadMs=" + minAheadMs + ", fraction=" + fraction + ", checkIntervalMs="
        + checkIntervalMs + ", backoffMs=" + initialBackoffMs + ".." + maxBackoffMs + ", timeoutMs=" + timeoutMs + "}";
  }
}
