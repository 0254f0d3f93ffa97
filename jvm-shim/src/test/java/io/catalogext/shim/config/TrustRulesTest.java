package io.catalogext.shim.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.catalogext.shim.wire.Origin;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * The shared trust spec ({@code trust-rules.json}) replayed in the JVM, as
 * {@code tests/unit/catalog/test_server_settings.py} replays it in Python: every origin vector, and the
 * allow-list of what a server may set.
 */
public class TrustRulesTest {
  @Test
  void testEveryOriginVector() {
    JsonNode cases = TrustRules.spec().path("origin-vectors").path("cases");
    assertTrue(cases.size() >= 20, "the vectors are there");
    for (JsonNode c : cases) {
      String url = c.path("url").asText();
      if (c.has("origin")) {
        assertEquals(c.path("origin").asText(), Origin.of(url).toString(), url);
      } else {
        assertThrows(IllegalArgumentException.class, () -> Origin.of(url), url + " is refused");
      }
    }
  }

  @Test
  void testServersMaySetStorageKeysOnly() {
    for (String key : new String[] {"s3.access-key-id", "s3.endpoint", "client.region", "s3.path-style-access",
        "gcs.oauth2.token", "adls.sas-token.acct.dfs.core.windows.net", "client.refresh-credentials-endpoint"}) {
      assertTrue(TrustRules.serverMaySet(key, false), key);
    }
    for (String key : new String[] {"io-impl", "py-io-impl", "client.factory", "s3.client-factory-impl",
        "client.credentials-provider", "s3.signer.impl", "rest.client.proxy.hostname", "catalog-ext.trusted-origins",
        "catalog-ext.refresh.min-ahead-ms", "header.Authorization", "credential", "prefix", "s3.proxy-uri",
        "http-client.urlconnection.proxy-endpoint", "write.location-provider.impl", "metrics-reporter-impl"}) {
      assertFalse(TrustRules.serverMaySet(key, false), key);
    }
    assertTrue(TrustRules.serverMaySet("prefix", true), "/v1/config may name the prefix");
    assertFalse(TrustRules.serverMaySet("io-impl", true), "... never a class");
    assertTrue(TrustRules.serverMaySet("token", false), "a table answer may give the table's own auth token");
    assertFalse(TrustRules.serverMaySet("token", true), "... /v1/config may not replace the user's");
    assertTrue(TrustRules.USER_URL_KEYS.contains("signer.uri"), "a signer URL the user sets is theirs");
  }
}
