package io.catalogext.shim.refresh;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** GCS and ADLS tokens as the registry holds them: parsed from Iceberg's keys, never printed. */
public class StoreTokensTest {
  private static final String SAS = "sv=2021-08-06&sr=c&sp=racwdl&se=2026-11-27T06%3A00%3A00Z&sig=c2VjcmV0";

  @Test
  void testAGcsTokenAndItsExpiry() {
    StoreTokens tokens = StoreTokens.fromConfig(Map.of("gcs.oauth2.token", "ya29.secret", "gcs.oauth2.token-expires-at", "1234"));
    assertEquals(StoreTokens.Store.GCS, tokens.store);
    assertEquals("ya29.secret", tokens.gcsToken());
    assertEquals(1234L, tokens.statedExpiresAtMs);
    assertFalse(tokens.toString().contains("ya29.secret"), tokens.toString());
    assertTrue(CredentialSnapshot.holdsKeys(Map.of("gcs.oauth2.token", "t")));
  }

  @Test
  void testAdlsSasPerAccountWithTheSignedExpiryWhenNoneIsStated() {
    StoreTokens tokens = StoreTokens.fromConfig(Map.of("adls.sas-token.acct1.dfs.core.windows.net", "?" + SAS));
    assertEquals(StoreTokens.Store.ADLS, tokens.store);
    assertEquals(SAS, tokens.sasForAccount("acct1"), "the leading '?' is dropped; .dfs. and .blob. hosts of one account share it");
    assertNull(tokens.sasForAccount("acct2"), "another account never gets this SAS");
    assertEquals(Instant.parse("2026-11-27T06:00:00Z").toEpochMilli(), tokens.statedExpiresAtMs, "se= when no expiry is stated");
    assertFalse(tokens.toString().contains("sig="), tokens.toString());
    Map<String, String> back = tokens.asProperties();
    assertEquals(SAS, back.get("adls.sas-token.acct1.dfs.core.windows.net"));
  }

  @Test
  void testTheStatedExpiryWinsAndTheEarliestOfSeveralHostsCounts() {
    StoreTokens tokens = StoreTokens.fromConfig(Map.of(
        "adls.sas-token.a.dfs.core.windows.net", SAS, "adls.sas-token-expires-at-ms.a.dfs.core.windows.net", "5000",
        "adls.sas-token.b.dfs.core.windows.net", SAS, "adls.sas-token-expires-at-ms.b.dfs.core.windows.net", "3000"));
    assertEquals(3000L, tokens.statedExpiresAtMs);
  }

  @Test
  void testNoTokensNoEntryAndUnreadableExpiriesMeanNone() {
    assertNull(StoreTokens.fromConfig(Map.of("s3.access-key-id", "AK", "gcs.project-id", "p")));
    assertFalse(CredentialSnapshot.holdsKeys(Map.of("gcs.oauth2.token", "")));
    assertEquals(Long.MAX_VALUE, StoreTokens.sasSignedExpiryMs("sv=1&se=not-a-time&sig=x"));
    assertEquals(Long.MAX_VALUE, StoreTokens.sasSignedExpiryMs("sv=1&sig=x"));
    assertTrue(StoreTokens.isTokenKey("adls.sas-token-expires-at-ms.a.dfs.core.windows.net"));
    assertFalse(StoreTokens.isTokenKey("adls.connection-string.a.dfs.core.windows.net"));
  }
}
