package io.catalogext.shim;

import java.util.Map;

/** Bad {@code catalog-ext.commit.*} values fail catalog initialisation with one line. */
public class CommitGuardSettingsTest {
  private static IllegalArgumentException bad(String name, String value) {
    return Check.raises(IllegalArgumentException.class,
        () -> new CommitGuard().configure(Map.of("catalog-ext.commit." + name, value)));
  }

  public void testBadNumbersAreRefused() {
    for (String[] c : new String[][] {{"max-attempts", "0"}, {"max-attempts", "five"}, {"base-delay-ms", "-1"},
        {"max-delay-ms", "1.5"}, {"total-timeout-ms", "86400001"}}) {
      IllegalArgumentException e = bad(c[0], c[1]);
      Check.isTrue(e.getMessage().contains("catalog-ext.commit." + c[0]) && !e.getMessage().contains("\n"), e.getMessage());
    }
  }

  public void testBadModeAndUnknownNamesAreRefused() {
    Check.isTrue(bad("idempotency", "sometimes").getMessage().contains("auto, always or never"), "mode");
    Check.isTrue(bad("max-atempts", "3").getMessage().contains("Unknown catalog property"), "typo");
  }

  public void testGoodValuesAreAccepted() {
    CommitGuard g = new CommitGuard();
    g.configure(Map.of("catalog-ext.commit.max-attempts", "3",
        "catalog-ext.commit.idempotency", "Always", "other.property", "x"));
    Check.isTrue(g.idempotencyEnabled(), "always sends keys");
  }

  public void testAlwaysDoesNotAssumeDeduplicationWithoutAdvertisement() {
    CommitGuard g = new CommitGuard();
    g.configure(Map.of("catalog-ext.commit.idempotency", "always"));
    Check.isTrue(g.idempotencyEnabled() && !g.deduplicating(), "not advertised");
    g.setIdempotencyKeyLifetime("PT30M");
    Check.isTrue(g.deduplicating(), "advertised");
  }

  public void testUnparseableLifetimeIsNotTrustedToDeduplicate() {
    CommitGuard g = new CommitGuard();
    g.setIdempotencyKeyLifetime("thirty minutes");
    Check.isTrue(g.idempotencyEnabled(), "keys are still sent (auto: advertised)");
    Check.isTrue(!g.deduplicating(), "but retries are bounded as without idempotency");
  }

  public void testHugeLifetimesAreClampedWithoutOverflow() {
    for (String huge : new String[] {"P999999999D", "PT9223372036854775807S"}) {
      CommitGuard g = new CommitGuard();
      g.setIdempotencyKeyLifetime(huge);
      Check.isTrue(g.deduplicating(), huge + " still de-duplicates");
      Check.equal(CommitGuard.MAX_KEY_LIFETIME, g.lifetime(), huge + " clamped");
      Check.isTrue(g.canRetry(1, System.nanoTime(), 10, true), huge + ": canRetry does not overflow");
    }
    CommitGuard g = new CommitGuard();
    g.setIdempotencyKeyLifetime("PT30M");
    Check.equal(java.time.Duration.ofMinutes(30), g.lifetime(), "a sane lifetime is kept");
  }
}
