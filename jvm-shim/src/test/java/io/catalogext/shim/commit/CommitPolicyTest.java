package io.catalogext.shim.commit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The commit policy as Python's {@code CommitPolicy} reads the same properties: the spec's
 * defaults, the key rule ({@code sends_keys}), the unknown-name message word for word, and the
 * backoff bounds the guard waits by.
 */
public class CommitPolicyTest {
  @Test
  void testDefaultsAreTheSpecs() {
    CommitPolicy p = CommitPolicy.defaults();
    assertEquals(5, p.maxAttempts, "max-attempts");
    assertEquals(CommitPolicy.Idempotency.AUTO, p.idempotency, "idempotency");
    assertTrue(p.baseDelayMs <= p.maxDelayMs && p.totalTimeoutMs > 0, p.toString());
  }

  @Test
  void testTheKeyRuleIsPythons() {
    for (String[] row : new String[][] {{"auto", "true", "true"}, {"auto", "false", "false"}, {"always", "false", "true"},
        {"always", "true", "true"}, {"never", "true", "false"}, {"never", "false", "false"}}) {
      CommitPolicy p = CommitPolicy.fromProperties(Map.of("catalog-ext.commit.idempotency", row[0]));
      assertEquals(Boolean.parseBoolean(row[2]), p.sendsKeys(Boolean.parseBoolean(row[1])), String.join(" ", row));
    }
  }

  @Test
  void testAnUnknownNameIsPythonsOneLine() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CommitPolicy.fromProperties(Map.of("catalog-ext.commit.max-atempts", "3", "other", "x")));
    assertEquals("Unknown catalog property catalog-ext.commit.max-atempts; known: catalog-ext.commit.base-delay-ms,"
        + " catalog-ext.commit.deduplicated-operations, catalog-ext.commit.idempotency, catalog-ext.commit.max-attempts, catalog-ext.commit.max-delay-ms,"
        + " catalog-ext.commit.total-timeout-ms", e.getMessage());
  }

  @Test
  void testBackoffIsCappedFullJitterAndBoundsTheAttempts() {
    CommitPolicy p = CommitPolicy.fromProperties(Map.of("catalog-ext.commit.base-delay-ms", "100",
        "catalog-ext.commit.max-delay-ms", "1000", "catalog-ext.commit.max-attempts", "3",
        "catalog-ext.commit.total-timeout-ms", "5000"));
    for (int attempt = 1; attempt <= 10; attempt++) {
      long ceiling = Math.min(1000, 100L << (attempt - 1));
      for (int i = 0; i < 50; i++) {
        long wait = p.backoffMs(attempt);
        assertTrue(wait >= 0 && wait <= ceiling, "attempt " + attempt + ": " + wait);
      }
    }
    assertTrue(p.allowsAnother(2, 0, 100), "attempt 2 of 3");
    assertTrue(!p.allowsAnother(3, 0, 100), "attempt 3 of 3 is the last");
    assertTrue(!p.allowsAnother(1, 4950, 100), "past the total time");
  }
}
