package io.catalogext.shim;

/** The renewal rule shared with Python: max(minAhead, fraction x lifetime) before expiry. */
public class RefreshPolicyTest {
  private final RefreshPolicy policy = new RefreshPolicy(300_000, 0.2);

  public void testLongLifetimeRenewsAFractionAhead() {
    // 1 h lifetime: 20 % = 12 min ahead beats the 5 min floor.
    Check.equal(3_600_000L - 720_000L, policy.refreshAt(0, 3_600_000), "refresh time");
  }

  public void testShortLifetimeUsesTheFloor() {
    // 15 min lifetime: 20 % = 3 min < 5 min floor.
    Check.equal(900_000L - 300_000L, policy.refreshAt(0, 900_000), "refresh time");
  }

  public void testLifetimeShorterThanTheMarginRenewsAtHalfLife() {
    Check.equal(5_000L, policy.refreshAt(0, 10_000), "refresh time");
  }

  public void testCredentialsThatNeverExpireAreNeverRenewed() {
    Check.equal(Long.MAX_VALUE, policy.refreshAt(0, Long.MAX_VALUE), "refresh time");
  }
}
