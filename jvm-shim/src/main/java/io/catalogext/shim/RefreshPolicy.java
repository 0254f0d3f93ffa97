package io.catalogext.shim;

import java.io.Serializable;
import java.util.Map;

/**
 * When to renew: once less than max(minAhead, fraction x lifetime) remains (Delta Sharing's driver
 * cache uses a fixed 15 min; a fraction keeps short lifetimes workable). Python's scheduler uses the
 * same rule; this copy lets the JVM act alone when Python is late or absent.
 */
final class RefreshPolicy implements Serializable {
  static final long DEFAULT_MIN_AHEAD_MS = 5 * 60 * 1000L;
  static final double DEFAULT_FRACTION = 0.2;

  final long minAheadMs;
  final double fraction;

  RefreshPolicy(long minAheadMs, double fraction) {
    this.minAheadMs = minAheadMs;
    this.fraction = fraction;
  }

  static RefreshPolicy fromProperties(Map<String, String> props) {
    long minAhead = DEFAULT_MIN_AHEAD_MS;
    double fraction = DEFAULT_FRACTION;
    String a = props.get(ShimKeys.REFRESH_MIN_AHEAD_MS);
    String f = props.get(ShimKeys.REFRESH_LIFETIME_FRACTION);
    if (a != null) {
      minAhead = Long.parseLong(a.trim());
    }
    if (f != null) {
      fraction = Double.parseDouble(f.trim());
    }
    return new RefreshPolicy(minAhead, fraction);
  }

  long aheadMs(long fetchedAtMs, long expiresAtMs) {
    long lifetime = Math.max(0, expiresAtMs - fetchedAtMs);
    return Math.max(minAheadMs, (long) (lifetime * fraction));
  }

  long refreshAt(long fetchedAtMs, long expiresAtMs) {
    if (expiresAtMs == Long.MAX_VALUE) {
      return Long.MAX_VALUE;
    }
    long ahead = aheadMs(fetchedAtMs, expiresAtMs);
    // Never schedule before the fetch itself: a lifetime shorter than the margin refreshes at half-life.
    long at = expiresAtMs - ahead;
    return at > fetchedAtMs ? at : fetchedAtMs + Math.max(0, (expiresAtMs - fetchedAtMs) / 2);
  }
}
