package io.catalogext.shim.refresh;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import org.junit.jupiter.api.Test;

/** The renewal rule shared with Python: max(minAhead, fraction x lifetime) before expiry. */
public class RefreshPolicyTest {
  private final RefreshPolicy policy = new RefreshPolicy(300_000, 0.2);

  @Test
  void testLongLifetimeRenewsAFractionAhead() {
    // 1 h lifetime: 20 % = 12 min ahead beats the 5 min floor.
    assertEquals(3_600_000L - 720_000L, policy.refreshAt(0, 3_600_000), "refresh time");
  }

  @Test
  void testShortLifetimeUsesTheFloor() {
    // 15 min lifetime: 20 % = 3 min < 5 min floor.
    assertEquals(900_000L - 300_000L, policy.refreshAt(0, 900_000), "refresh time");
  }

  @Test
  void testLifetimeShorterThanTheMarginRenewsAtHalfLife() {
    assertEquals(5_000L, policy.refreshAt(0, 10_000), "refresh time");
  }

  @Test
  void testCredentialsThatNeverExpireAreNeverRenewed() {
    assertEquals(Long.MAX_VALUE, policy.refreshAt(0, Long.MAX_VALUE), "refresh time");
  }

  @Test
  void testCatalogPropertiesSetEveryKnob() {
    RefreshPolicy p =
        RefreshPolicy.fromProperties(
            java.util.Map.of(
                "catalog-ext.refresh.check-interval-ms", "1000",
                "catalog-ext.refresh.min-ahead-ms", "0",
                "catalog-ext.refresh.lifetime-fraction", "0.4",
                "catalog-ext.refresh.initial-backoff-ms", "500",
                "catalog-ext.refresh.max-backoff-ms", "4000",
                "catalog-ext.refresh.timeout-ms", "9000"));
    assertEquals(1000L, p.checkIntervalMs, "check interval");
    assertEquals(6_000L, p.refreshAt(0, 10_000), "refresh time");
    assertEquals(500L, p.backoffMs(1), "first backoff");
    assertEquals(4000L, p.backoffMs(10), "capped backoff");
    assertEquals(9000L, p.timeoutMs, "timeout");
    assertEquals(RefreshPolicy.DEFAULT_CHECK_INTERVAL_MS, RefreshPolicy.fromProperties(java.util.Map.of()).checkIntervalMs,
        "default check interval");
  }

  @Test
  void testBadKnobIsAOneLineError() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class,
            () -> RefreshPolicy.fromProperties(java.util.Map.of("catalog-ext.refresh.timeout-ms", "soon")));
    assertEquals("Bad catalog property catalog-ext.refresh.timeout-ms='soon': use a whole number from 1 to 3600000", e.getMessage(),
        "message");
  }

  @Test
  void testKeysWithoutExpiryGetTheAssumedLifetime() {
    java.util.Map<String, String> keys = java.util.Map.of(ShimKeys.ACCESS_KEY_ID, "AKIA", ShimKeys.SECRET_ACCESS_KEY, "s");
    RefreshPolicy assumed = new RefreshPolicy(0, 0.2, 60_000, 1_000, 60_000, 30_000, 600_000);
    CredentialSnapshot snap = CredentialSnapshot.fromConfig(keys, 1_000_000L, assumed);
    assertEquals(600_000L, snap.lifetimeMs(), "no expiry given: the assumed lifetime from the fetch (unitycatalog#1885)");
    assertEquals(String.valueOf(1_600_000L), snap.toConfig().get(ShimKeys.EXPIRES_AT_MS), "executors get the same expiry");
    RefreshPolicy trusting = new RefreshPolicy(0, 0.2, 60_000, 1_000, 60_000, 30_000, 0);
    assertEquals(-1L, CredentialSnapshot.fromConfig(keys, 1_000_000L, trusting).lifetimeMs(), "0: trusted forever");
    java.util.Map<String, String> given = new java.util.HashMap<>(keys);
    given.put(ShimKeys.EXPIRES_AT_MS, "1060000");
    assertEquals(60_000L, CredentialSnapshot.fromConfig(given, 1_000_000L, assumed).lifetimeMs(), "a given expiry wins");
    assertEquals(3_600_000L, RefreshPolicy.fromProperties(java.util.Map.of()).assumedLifetimeMs, "default: one hour");
  }
}
