package io.catalogext.shim.config;

import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Rules about storage credentials that both runtimes apply, from the spec they share
 * ({@code pyspark_catalog_ext/resources/credential-rules.json}, copied into this jar beside the knob
 * spec): the hard margin, the S3 and Azure storage codes that mean expired keys, when to ask again
 * after a catalog's credential cache answered, how long a missing refresh endpoint is remembered.
 * (GCS's 401 is read by google-auth's own HTTP adapter, which calls the shim's credentials back.)
 * PyIceberg reads the same file ({@code pyspark_catalog_ext.refresh.rules}).
 */
public final class CredentialRules {
  static final String RESOURCE = "/io/catalogext/shim/credential-rules.json";
  private static final JsonNode SPEC = load();

  /** Hard margin: a quarter (the divisor) of the lifetime, within [min, max]; max when unknown. */
  public static final long HARD_MARGIN_MIN_MS = SPEC.path("hard-margin").path("min-ms").asLong();
  public static final long HARD_MARGIN_MAX_MS = SPEC.path("hard-margin").path("max-ms").asLong();
  public static final long HARD_MARGIN_DIVISOR = SPEC.path("hard-margin").path("lifetime-divisor").asLong();
  /** S3 error codes that mean the keys themselves are no longer valid. */
  public static final Set<String> EXPIRY_CODES = strings(SPEC.path("s3-expiry").path("codes"));
  /** The statuses those codes come with (403, and 400 from some S3 implementations). */
  public static final Set<Integer> EXPIRY_STATUSES = ints(SPEC.path("s3-expiry").path("statuses"));
  /** The cache window: where between our fetch and the keys' expiry a catalog's cache ends, and the clock slack. */
  public static final double CACHE_WINDOW_SHARE = SPEC.path("cache-window").path("share-of-life").asDouble();
  public static final double CACHE_WINDOW_CLOCK_SLACK = SPEC.path("cache-window").path("clock-slack").asDouble();
  /** Azure storage: the statuses and x-ms-error-code values of a SAS that is no longer valid. */
  public static final Set<Integer> ADLS_EXPIRY_STATUSES = ints(SPEC.path("adls-expiry").path("statuses"));
  public static final Set<String> ADLS_EXPIRY_CODES = strings(SPEC.path("adls-expiry").path("codes"));
  /** Codes that mean "expired" only for a SAS past its own signed expiry (Azurite's answer to one), else scope errors. */
  public static final Set<String> ADLS_CODES_ONCE_EXPIRED = strings(SPEC.path("adls-expiry").path("codes-once-expired"));
  /** How long a catalog's missing refresh endpoint is not asked again. */
  public static final long MISSING_ENDPOINT_FORGET_MS = SPEC.path("missing-endpoint").path("forget-after-ms").asLong();
  /** How many times one store request is sent at most with a table's keys; a rejection of the last is the caller's error. */
  public static final int SENDS_PER_CALL = SPEC.path("sends-per-call").path("max").asInt();
  /** Keys rejected younger than this (revoked, not short-lived) teach no lifetime. */
  public static final long LEARN_MIN_AGE_MS = SPEC.path("learn-lifetime").path("min-age-ms").asLong();

  private CredentialRules() {}

  private static JsonNode load() {
    return SharedSpecs.read(RESOURCE);
  }

  private static Set<String> strings(JsonNode list) {
    Set<String> out = new LinkedHashSet<>();
    list.forEach(n -> out.add(n.asText()));
    return Set.copyOf(out);
  }

  private static Set<Integer> ints(JsonNode list) {
    Set<Integer> out = new LinkedHashSet<>();
    list.forEach(n -> out.add(n.asInt()));
    return Set.copyOf(out);
  }

  /**
   * When to ask again ({@code nowMs}) after a refresh answered with the keys fetched at
   * {@code fetchedAtMs} that expire at {@code expiresAtMs} (Long.MAX_VALUE: no expiry) and that
   * readers stop using at {@code waitAtMs}: the shared spec's cache window, bounded by the policy's
   * first and longest backoffs.
   */
  public static long cacheWindowEndMs(long fetchedAtMs, long expiresAtMs, long waitAtMs, long nowMs,
      long initialBackoffMs, long maxBackoffMs) {
    if (expiresAtMs == Long.MAX_VALUE) {
      return nowMs + maxBackoffMs;
    }
    double end = fetchedAtMs + (expiresAtMs - fetchedAtMs) * CACHE_WINDOW_SHARE;
    if (end <= nowMs) {
      end = nowMs + (expiresAtMs - nowMs) * CACHE_WINDOW_SHARE;
    }
    end += CACHE_WINDOW_CLOCK_SLACK * Math.max(0, expiresAtMs - fetchedAtMs);
    long soonest = nowMs + Math.min(initialBackoffMs, Math.max(0, expiresAtMs - nowMs) / 2);
    return Math.max(soonest, Math.min((long) end, waitAtMs));
  }

  /** How close to their expiry a reader stops using keys of lifetime {@code lifetimeMs} (-1: unknown). */
  public static long hardMarginMs(long lifetimeMs) {
    if (lifetimeMs < 0) {
      return HARD_MARGIN_MAX_MS;
    }
    return Math.max(HARD_MARGIN_MIN_MS, Math.min(HARD_MARGIN_MAX_MS, lifetimeMs / HARD_MARGIN_DIVISOR));
  }
}
