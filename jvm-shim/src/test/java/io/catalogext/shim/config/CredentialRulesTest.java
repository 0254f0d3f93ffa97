package io.catalogext.shim.config;

import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.util.HashSet;
import java.util.Set;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * The shim applies the credential rules of the spec both runtimes share, read from the copy in its
 * jar (tests/unit/refresh/test_credential_rules.py holds PyIceberg to the same file).
 */
public class CredentialRulesTest {
  private static JsonNode spec() throws Exception {
    try (InputStream in = CredentialRules.class.getResourceAsStream(CredentialRules.RESOURCE)) {
      assertTrue(in != null, CredentialRules.RESOURCE + " is missing from the shim jar");
      return Json.MAPPER.readTree(in);
    }
  }

  @Test
  void testTheHardMarginIsAQuarterOfTheLifetimeBetweenOneAndTenSeconds() {
    assertEquals(10_000L, CredentialRules.hardMarginMs(-1), "unknown lifetime");
    assertEquals(1_000L, CredentialRules.hardMarginMs(800), "never under 1 s, even for keys that live less");
    assertEquals(1_000L, CredentialRules.hardMarginMs(3_000), "3 s keys: the floor");
    assertEquals(2_500L, CredentialRules.hardMarginMs(10_000), "a quarter");
    assertEquals(10_000L, CredentialRules.hardMarginMs(900_000), "15 min keys: the ceiling");
  }

  @Test
  void testTheRulesAreTheSpecs() throws Exception {
    JsonNode spec = spec();
    assertEquals(spec.path("hard-margin").path("min-ms").asLong(), CredentialRules.HARD_MARGIN_MIN_MS, "min");
    assertEquals(spec.path("hard-margin").path("max-ms").asLong(), CredentialRules.HARD_MARGIN_MAX_MS, "max");
    Set<String> codes = new HashSet<>();
    spec.path("s3-expiry").path("codes").forEach(c -> codes.add(c.asText()));
    assertEquals(codes, CredentialRules.EXPIRY_CODES, "S3 expiry codes");
    assertTrue(codes.contains("ExpiredToken") && !codes.contains("AccessDenied"), codes.toString());
    assertEquals(spec.path("missing-endpoint").path("forget-after-ms").asLong(),
        io.catalogext.shim.session.MissingEndpoints.FORGET_AFTER_MS, "missing endpoints forgotten after");
    assertEquals(spec.path("sends-per-call").path("max").asInt(), CredentialRules.SENDS_PER_CALL, "sends per call");
  }
}
