package io.catalogext.shim.refresh;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A catalog's credential cache (Polaris keeps a table location's keys for the shorter of its cache
 * setting and half their remaining lifetime) answers a refresh with the keys the table already has:
 * that is no renewal. It is not counted as one, the catalog is asked again only after the cache
 * window, and keys that expired while the catalog still hands them back are a one-line error.
 * A fake clock; the catalog mints new keys once its cache entry (half the keys' life) is over.
 */
public class CredentialCacheTest {
  private static final long LIFETIME_MS = 20_000;
  private final FakeClock clock = new FakeClock();
  private final long mintedAt = clock.nowMs();
  private final List<Long> askedAt = new ArrayList<>();
  private final AtomicInteger minted = new AtomicInteger(1);
  /** The catalog's cache entry: key set number and when it was minted; renewed once half the life has passed. */
  private volatile long cacheMintedAt = mintedAt;

  private Map<String, String> keys(int n, long fetchedAt) {
    return Map.of(ShimKeys.ACCESS_KEY_ID, "K" + n, ShimKeys.SECRET_ACCESS_KEY, "S" + n, ShimKeys.SESSION_TOKEN, "T" + n,
        ShimKeys.EXPIRES_AT_MS, String.valueOf(fetchedAt + LIFETIME_MS));
  }

  private TableEntry entry(RefreshPolicy policy) {
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    EntryRefresher polaris = e -> {
      long now = clock.nowMs();
      askedAt.add(now - mintedAt);
      if (now >= cacheMintedAt + LIFETIME_MS / 2) {
        cacheMintedAt = now;
        minted.incrementAndGet();
      }
      return new RefreshResult(Map.of("", keys(minted.get(), cacheMintedAt)), Map.of(), "credentials-endpoint");
    };
    return new TableEntry("h", context, policy, polaris, clock);
  }

  /** Renew with 75 % of the life left (5 s after the fetch), as the emulated-catalog test does. */
  private static RefreshPolicy early() {
    return new RefreshPolicy(0, 0.75, 200, 1_000, 30_000, 10_000);
  }

  @Test
  void testTheSameKeysBackAreNoRenewalAndAreAskedForAgainAfterTheCacheWindow() throws Exception {
    TableEntry entry = entry(early());
    CredentialSlot slot = entry.seed("", keys(1, mintedAt));
    clock.advance(5_000); // due: inside the catalog's cache window
    long seen = entry.generation();
    assertTrue(!entry.refreshIfGeneration(seen), "the cached keys were counted as a renewal");
    assertEquals("K1", slot.current.credentials.accessKeyId());
    assertEquals(0, entry.describe().get("refresh_count").asLong(), "renewals counted");
    assertEquals(1, entry.describe().get("cached_answers").asLong());
    assertTrue(entry.describe().get("last_error").isNull(), "a cached answer is no failure");

    // Before the window ends (half-way from the fetch to expiry, plus 2 % of the life): not asked.
    for (int i = 0; i < 25; i++) {
      clock.advance(200);
      entry.scheduleIfDue(clock.nowMs());
      entry.refreshAsync(entry.generation());
    }
    Thread.sleep(200); // a background refresh, had one started, runs on its own thread
    assertEquals(List.of(5_000L), askedAt, "asked inside the cache window");

    clock.advance(10_400 - 10_000); // the window's end: 10 s + 2 % of 20 s
    entry.refreshAsync(entry.generation());
    for (int i = 0; i < 100 && !"K2".equals(slot.current.credentials.accessKeyId()); i++) {
      Thread.sleep(20);
    }
    assertEquals(List.of(5_000L, 10_400L), askedAt, "asked again once the window ended");
    assertEquals("K2", slot.current.credentials.accessKeyId(), "new keys after the window are a renewal");
    assertEquals(1, entry.describe().get("refresh_count").asLong());
  }

  @Test
  void testCallersQueuedBehindACachedAnswerDoNotAskAgain() throws Exception {
    TableEntry entry = entry(early());
    entry.seed("", keys(1, mintedAt));
    clock.advance(5_000);
    long seenByAll = entry.generation(); // every caller looked before the first one asked
    assertTrue(!entry.refreshIfGeneration(seenByAll));
    assertTrue(!entry.refreshIfGeneration(seenByAll));
    assertTrue(!entry.refreshIfGeneration(seenByAll));
    assertEquals(1, askedAt.size(), "catalog requests for one cached answer: " + askedAt);
  }

  @Test
  void testExecutorsTakeKeysTheCatalogConfirmedInsteadOfWaitingOnTheDriver() throws Exception {
    TableEntry driver = entry(early());
    driver.seed("", keys(1, mintedAt));
    clock.advance(5_000);
    long before = driver.generation();
    assertTrue(!driver.executorReply().fresh, "due keys, not yet asked for: not fresh"); // starts the driver's refresh
    for (int i = 0; i < 250 && driver.generation() == before; i++) {
      Thread.sleep(20); // the background refresh: the catalog's cache answers
    }
    assertEquals(0, driver.describe().get("refresh_count").asLong());
    PluginMessages.Reply reply = driver.executorReply();
    assertTrue(reply.fresh, "keys the catalog just confirmed are the freshest there are");
    assertEquals("K1", reply.configByPrefix.get("").get(ShimKeys.ACCESS_KEY_ID));

    // An executor whose copy of the keys is due asks the driver, gets the same keys: no renewal, no failure.
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    TableEntry executor = new TableEntry("h", context, early(),
        new DriverPluginSource(message -> driver.executorReplyBytes(), clock, 2_000), clock);
    executor.seed("", reply.configByPrefix.get(""));
    assertTrue(!executor.refreshIfGeneration(executor.generation()));
    assertEquals(0, executor.describe().get("failure_count").asLong(), executor.describe().toString());
    assertEquals(1, executor.describe().get("cached_answers").asLong());
    assertEquals(List.of(5_000L), askedAt, "the catalog was asked once, by the driver");
  }

  @Test
  void testKeysThatExpiredWhileTheCatalogStillHandsThemBackAreAnError() {
    // A catalog whose cache outlives its keys: always the first key set.
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    TableEntry entry = new TableEntry("h", context, early(),
        e -> new RefreshResult(Map.of("", keys(1, mintedAt)), Map.of(), "reload"), clock);
    entry.seed("", keys(1, mintedAt));
    clock.advance(LIFETIME_MS + 1_000);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> entry.refreshIfGeneration(entry.generation()));
    assertTrue(e.getMessage().contains("same keys") && e.getMessage().contains("credential cache") && !e.getMessage().contains("\n"),
        e.getMessage());
    assertTrue(!e.getMessage().contains("S1") && !e.getMessage().contains("T1"), "no secret in the message");
    assertEquals(1, entry.describe().get("failure_count").asLong());
  }

  @Test
  void testTheSameKeysWithALaterExpiryAreARenewal() throws Exception {
    // A user's source handing out the same static keys, each time with an expiry 20 s on: not a cache.
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    TableEntry entry = new TableEntry("h", context, early(),
        e -> new RefreshResult(Map.of("", keys(1, clock.nowMs())), Map.of(), "user-source:FunctionSource"), clock);
    CredentialSlot slot = entry.seed("", keys(1, mintedAt));
    clock.advance(5_000);
    assertTrue(entry.refreshIfGeneration(entry.generation()), "a later expiry is a renewal of the keys' lease");
    assertEquals(mintedAt + 5_000 + LIFETIME_MS, slot.current.expiresAtMs);
    assertEquals(1, entry.describe().get("refresh_count").asLong());
    assertEquals(0, entry.describe().get("cached_answers").asLong());
  }

  @Test
  void testStaticKeysWithoutAStatedExpiryAreTakenAgainAsARenewal() throws Exception {
    // Keys without an expiry, scheduled by an assumed 20 s lifetime: a catalog handing them out again
    // vends static keys (no cache to wait out), and they stay usable past the assumed lifetime.
    Map<String, String> staticKeys = Map.of(ShimKeys.ACCESS_KEY_ID, "STATIC", ShimKeys.SECRET_ACCESS_KEY, "S");
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    TableEntry entry = new TableEntry("h", context, new RefreshPolicy(0, 0.75, 200, 1_000, 30_000, 10_000, LIFETIME_MS),
        e -> new RefreshResult(Map.of("", staticKeys), Map.of(), "reload"), clock);
    CredentialSlot slot = entry.seed("", staticKeys);
    clock.advance(LIFETIME_MS + 1_000);
    assertTrue(entry.refreshIfGeneration(entry.generation()), "taken again");
    assertEquals(clock.nowMs() + LIFETIME_MS, slot.current.expiresAtMs, "with a new assumed lifetime");
    assertEquals(0, entry.describe().get("failure_count").asLong());
  }

  @Test
  void testTheCacheWindowRule() {
    long t0 = 1_000_000;
    long life = 20_000;
    long waitAt = t0 + life - CredentialRules.hardMarginMs(life);
    // half-way from the fetch to expiry, plus 2 % of the life
    assertEquals(t0 + 10_400, CredentialRules.cacheWindowEndMs(t0, t0 + life, waitAt, t0 + 5_000, 1_000, 30_000));
    // past half-way: half of what is left, plus the slack (100 s keys: a 10 s hard margin)
    assertEquals(t0 + 60_000 + 20_000 + 2_000,
        CredentialRules.cacheWindowEndMs(t0, t0 + 100_000, t0 + 90_000, t0 + 60_000, 1_000, 30_000));
    // never past the hard margin, never sooner than the first backoff (or half the life left)
    assertEquals(waitAt, CredentialRules.cacheWindowEndMs(t0, t0 + life, waitAt, t0 + 14_000, 1_000, 30_000));
    assertEquals(t0 + 19_500, CredentialRules.cacheWindowEndMs(t0, t0 + life, waitAt, t0 + 19_000, 1_000, 30_000));
    // keys without an expiry: the longest backoff
    assertEquals(t0 + 30_000, CredentialRules.cacheWindowEndMs(t0, Long.MAX_VALUE, Long.MAX_VALUE, t0, 1_000, 30_000));
  }
}
