package io.catalogext.shim.commit;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * A catalog's Idempotency-Keys: the key lifetime it advertised (captured from {@code /v1/config}),
 * as far as it is believed, and the keys themselves (RFC 9562 UUIDv7).
 *
 * <p>Python twin: {@code pyspark_catalog_ext.commit.idempotency}.
 */
final class IdempotencyKeys {
  static final String HEADER = "Idempotency-Key";
  /**
   * The longest key lifetime believed. The lifetime only bounds how long we may repeat under one
   * key, and no retry loop runs past total-timeout-ms (at most one day), so any clamp above
   * 1 day / 0.9 changes no decision; 7 days leaves room and keeps the millisecond arithmetic of
   * {@link #alive} far from overflow (P999999999D, PT9223372036854775807S).
   */
  static final Duration MAX_LIFETIME = Duration.ofDays(7);

  private static final SecureRandom RANDOM = new SecureRandom();
  // Process-wide: RFC 9562's monotonic UUIDv7 counter belongs to the JVM's clock, not to a catalog.
  private static final Object UUID_LOCK = new Object();
  private static long lastUuidMs = 0;
  private static long lastUuidSeq = 0;

  private volatile String advertisedText;
  private volatile Duration lifetime;

  /**
   * The lifetime the server advertised ({@code null}: none). An unparseable or non-positive one is
   * not believed; one over {@link #MAX_LIFETIME} is clamped.
   *
   * @return a line of evidence about it, or null when there is nothing to say
   */
  String advertise(String text) {
    String note = null;
    Duration parsed = null;
    if (text != null) {
      try {
        parsed = Duration.parse(text.trim().toUpperCase(Locale.ROOT));
      } catch (RuntimeException e) {
        parsed = null; // keys may be sent, but the server is not trusted to de-duplicate
        note = "unparseable idempotency-key-lifetime '" + text + "': reconciling as without idempotency";
      }
      if (parsed != null && (parsed.isNegative() || parsed.isZero())) {
        parsed = null;
      }
      if (parsed != null && parsed.compareTo(MAX_LIFETIME) > 0) {
        note = "idempotency-key-lifetime '" + text + "' clamped to " + MAX_LIFETIME;
        parsed = MAX_LIFETIME;
      }
    }
    this.advertisedText = text;
    this.lifetime = parsed;
    return note;
  }

  /** Whether the server advertised a lifetime (believed or not). */
  boolean advertised() {
    return advertisedText != null;
  }

  /** The advertised text, as the server wrote it, or null. */
  String advertisedText() {
    return advertisedText;
  }

  /** The lifetime believed (clamped), or null. */
  Duration lifetime() {
    return lifetime;
  }

  /** Whether a key sent {@code elapsedMs} ago may be repeated after {@code delayMs} (0.9 of its lifetime). */
  boolean alive(long elapsedMs, long delayMs) {
    Duration l = lifetime;
    return l != null && elapsedMs + delayMs < 0.9 * l.toMillis();
  }

  /** Removes every Idempotency-Key header, whatever its case; returns the (last) value, or null. */
  static String removeFrom(Map<String, String> headers) {
    String value = null;
    for (Iterator<Map.Entry<String, String>> it = headers.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<String, String> h = it.next();
      if (HEADER.equalsIgnoreCase(h.getKey())) {
        value = h.getValue();
        it.remove();
      }
    }
    return value;
  }

  /** RFC 9562 UUIDv7: 48-bit Unix ms, version 7, variant 10, random bits; monotonic per JVM. */
  static UUID uuid7() {
    long ms;
    long seq;
    synchronized (UUID_LOCK) {
      ms = System.currentTimeMillis();
      if (ms <= lastUuidMs) {
        ms = lastUuidMs;
        seq = lastUuidSeq + 1;
        if (seq > 0xFFF) {
          ms++;
          seq = RANDOM.nextInt(0x800);
        }
      } else {
        seq = RANDOM.nextInt(0x800);
      }
      lastUuidMs = ms;
      lastUuidSeq = seq;
    }
    long msb = ((ms & 0xFFFFFFFFFFFFL) << 16) | (0x7L << 12) | (seq & 0xFFF);
    long lsb = (RANDOM.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
    return new UUID(msb, lsb);
  }
}
