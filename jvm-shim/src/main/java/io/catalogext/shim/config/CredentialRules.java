package io.catalogext.shim.config;

import io.catalogext.shim.util.Json;

import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Rules about storage credentials that both runtimes apply, from the spec they share
 * ({@code pyspark_catalog_ext/resources/credential-rules.json}, copied into this jar beside the knob
 * spec): the hard margin, the S3 codes that mean expired keys, how long a missing refresh endpoint
 * is remembered. PyIceberg reads the same file ({@code pyspark_catalog_ext.credentials.rules}).
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
  /** How long a catalog's missing refresh endpoint is not asked again. */
  public static final long MISSING_ENDPOINT_FORGET_MS = SPEC.path("missing-endpoint").path("forget-after-ms").asLong();

  private CredentialRules() {}

  private static JsonNode load() {
    try (InputStream in = CredentialRules.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is missing from the shim jar: rebuild it with pyspark_catalog_ext.spark.shim_build");
      }
      return Json.MAPPER.readTree(in);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + RESOURCE + " from the shim jar: " + e.getMessage(), e);
    }
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

  /** How close to their expiry a reader stops using keys of lifetime {@code lifetimeMs} (-1: unknown). */
  public static long hardMarginMs(long lifetimeMs) {
    if (lifetimeMs < 0) {
      return HARD_MARGIN_MAX_MS;
    }
    return Math.max(HARD_MARGIN_MIN_MS, Math.min(HARD_MARGIN_MAX_MS, lifetimeMs / HARD_MARGIN_DIVISOR));
  }
}
