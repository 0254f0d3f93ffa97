package io.catalogext.shim.commit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Bad {@code catalog-ext.commit.*} values fail catalog initialisation with one line. */
public class CommitGuardSettingsTest {
  private static IllegalArgumentException bad(String name, String value) {
    return assertThrows(IllegalArgumentException.class,
        () -> new CommitGuard().configure(Map.of("catalog-ext.commit." + name, value)));
  }

  @Test
  void testBadNumbersAreRefused() {
    for (String[] c : new String[][] {{"max-attempts", "0"}, {"max-attempts", "five"}, {"base-delay-ms", "-1"},
        {"max-delay-ms", "1.5"}, {"total-timeout-ms", "86400001"}}) {
      IllegalArgumentException e = bad(c[0], c[1]);
      assertTrue(e.getMessage().contains("catalog-ext.commit." + c[0]) && !e.getMessage().contains("\n"), e.getMessage());
    }
  }

  @Test
  void testBadModeAndUnknownNamesAreRefused() {
    assertTrue(bad("idempotency", "sometimes").getMessage().contains("auto, always or never"), "mode");
    assertTrue(bad("max-atempts", "3").getMessage().contains("Unknown catalog property"), "typo");
  }

  @Test
  void testGoodValuesAreAccepted() {
    CommitGuard g = new CommitGuard();
    g.configure(Map.of("catalog-ext.commit.max-attempts", "3",
        "catalog-ext.commit.idempotency", "Always", "other.property", "x"));
    assertTrue(g.idempotencyEnabled(), "always sends keys");
  }

  @Test
  void testAlwaysDoesNotAssumeDeduplicationWithoutAdvertisement() {
    CommitGuard g = new CommitGuard();
    g.configure(Map.of("catalog-ext.commit.idempotency", "always"));
    assertTrue(g.idempotencyEnabled() && !g.deduplicating(), "not advertised");
    g.setIdempotencyKeyLifetime("PT30M");
    assertTrue(g.deduplicating(), "advertised");
  }

  @Test
  void testUnparseableLifetimeIsNotTrustedToDeduplicate() {
    CommitGuard g = new CommitGuard();
    g.setIdempotencyKeyLifetime("thirty minutes");
    assertTrue(g.idempotencyEnabled(), "keys are still sent (auto: advertised)");
    assertTrue(!g.deduplicating(), "but retries are bounded as without idempotency");
  }

  @Test
  void testHugeLifetimesAreClampedWithoutOverflow() {
    for (String huge : new String[] {"P999999999D", "PT9223372036854775807S"}) {
      CommitGuard g = new CommitGuard();
      g.setIdempotencyKeyLifetime(huge);
      assertTrue(g.deduplicating(), huge + " still de-duplicates");
      assertEquals(IdempotencyKeys.MAX_LIFETIME, g.lifetime(), huge + " clamped");
      assertTrue(g.canRetry(CommitPolicy.defaults(), 1, System.nanoTime(), 10, true), huge + ": canRetry does not overflow");
    }
    CommitGuard g = new CommitGuard();
    g.setIdempotencyKeyLifetime("PT30M");
    assertEquals(java.time.Duration.ofMinutes(30), g.lifetime(), "a sane lifetime is kept");
  }
}
