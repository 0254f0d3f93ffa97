package io.catalogext.shim.commit;

import io.catalogext.shim.config.Knobs;

import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.iceberg.exceptions.CommitStateUnknownException;

/**
 * How a catalog's commits are retried and whether they carry an Idempotency-Key: the catalog
 * properties {@code catalog-ext.commit.*}, with the defaults and ranges of the knob spec PyIceberg
 * reads too. The JVM twin of Python's {@code pyspark_catalog_ext.commit.policy.CommitPolicy} (same names, same
 * one-line errors, same key rule).
 *
 * <p>Python twin: {@code pyspark_catalog_ext.commit.policy}.
 */
public final class CommitPolicy {
  static final String PREFIX = "catalog-ext.commit.";

  /** {@code catalog-ext.commit.idempotency}: when to send Idempotency-Key headers. */
  enum Idempotency {
    AUTO, // only to servers that advertise idempotency-key-lifetime
    ALWAYS, // to every server (de-duplication is still only assumed where advertised)
    NEVER
  }

  final int maxAttempts;
  final long baseDelayMs;
  final long maxDelayMs;
  final long totalTimeoutMs;
  final Idempotency idempotency;
  /** What the catalog replays under a key (the profile's, else the narrowest known set). */
  final Set<String> deduplicated;

  private CommitPolicy(int maxAttempts, long baseDelayMs, long maxDelayMs, long totalTimeoutMs, Idempotency idempotency,
      Set<String> deduplicated) {
    this.maxAttempts = maxAttempts;
    this.baseDelayMs = baseDelayMs;
    this.maxDelayMs = maxDelayMs;
    this.totalTimeoutMs = totalTimeoutMs;
    this.idempotency = idempotency;
    this.deduplicated = deduplicated;
  }

  /** The spec's defaults. */
  public static CommitPolicy defaults() {
    return fromProperties(Map.of());
  }

  /**
   * From {@code catalog-ext.commit.*}; other properties are ignored.
   *
   * @throws IllegalArgumentException one line, word for word what Python says: an unknown name, or
   *     a bad value and what the setting accepts
   */
  public static CommitPolicy fromProperties(Map<String, String> props) {
    Set<String> known = Knobs.names("commit");
    for (String name : props.keySet()) {
      if (name.startsWith(PREFIX) && !known.contains(name)) {
        throw new IllegalArgumentException("Unknown catalog property " + name + "; known: " + String.join(", ", known));
      }
    }
    return new CommitPolicy(
        (int) Knobs.longValue(props, PREFIX + "max-attempts"),
        Knobs.longValue(props, PREFIX + "base-delay-ms"),
        Knobs.longValue(props, PREFIX + "max-delay-ms"),
        Knobs.longValue(props, PREFIX + "total-timeout-ms"),
        Idempotency.valueOf(Knobs.choice(props, PREFIX + "idempotency").toUpperCase(Locale.ROOT)),
        DeduplicatedOperations.parse(props.get(DeduplicatedOperations.KNOB)));
  }

  /**
   * Whether the catalog is trusted to replay this operation (a name from the decision table, or
   * null for one it has no name for) under its key, once it advertises a lifetime.
   */
  boolean deduplicates(String operation) {
    return operation != null && deduplicated.contains(operation);
  }

  /** Whether requests carry an Idempotency-Key, given whether the server advertises a key lifetime. */
  public boolean sendsKeys(boolean advertised) {
    switch (idempotency) {
      case ALWAYS:
        return true;
      case NEVER:
        return false;
      default:
        return advertised;
    }
  }

  /** The wait before attempt {@code attempt + 1}: exponential, capped, full jitter. */
  long backoffMs(int attempt) {
    long ceiling = Math.min(maxDelayMs, baseDelayMs * (1L << Math.min(20, attempt - 1)));
    return ceiling <= 0 ? 0 : ThreadLocalRandom.current().nextLong(ceiling + 1);
  }

  /** Whether attempt {@code attempt} may be followed by one more after waiting {@code delayMs}. */
  boolean allowsAnother(int attempt, long elapsedMs, long delayMs) {
    return attempt < maxAttempts && elapsedMs + delayMs <= totalTimeoutMs;
  }

  /** Waits {@code ms}; an interrupt ends the commit as unknown (it may have landed: files kept). */
  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CommitStateUnknownException(new RuntimeException("interrupted while retrying a commit"));
    }
  }

  @Override
  public String toString() {
    return "CommitPolicy{maxAttempts=" + maxAttempts + ", delayMs=" + baseDelayMs + ".." + maxDelayMs
        + ", totalTimeoutMs=" + totalTimeoutMs + ", idempotency=" + idempotency.name().toLowerCase(Locale.ROOT)
        + ", deduplicated=" + String.join(",", deduplicated) + "}";
  }
}
