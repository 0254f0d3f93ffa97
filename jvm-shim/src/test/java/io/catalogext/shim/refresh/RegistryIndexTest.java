package io.catalogext.shim.refresh;

import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.config.ShimKeys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The driver registry finds a table's entry by its identity without scanning every entry: a load
 * at 10,000 tracked tables costs what it costs at 10, and identity, eviction and re-tracking behave
 * as with the scan.
 */
public class RegistryIndexTest {
  private final FakeClock clock = new FakeClock();
  private final CredentialRegistry registry = new CredentialRegistry(clock);
  private final CatalogSession state = new CatalogSession("c", Map.of());

  public RegistryIndexTest() {
    registry.catalogs().register(state);
  }

  private static TableContext context(String table, String location) {
    return new TableContext("c", List.of("db"), table, location, null, false, null, null);
  }

  private String load(String table, String location) {
    Map<String, String> config = new HashMap<>();
    config.put(ShimKeys.ACCESS_KEY_ID, "K");
    config.put(ShimKeys.SECRET_ACCESS_KEY, "S");
    config.put(ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 60_000));
    return registry.registerDriverTable(context(table, location), state, config, List.of());
  }

  @Test
  public void aLoadAtTenThousandEntriesCostsNoMoreThanAtFew() {
    int n = CredentialRegistry.MAX_ENTRIES;
    int batch = 1_000;
    // The cost of a load compared in one run, at few entries and at nearly n (a loaded machine slows
    // both alike): a scan of every entry per load makes the second batch ~18x dearer (9,500 entries
    // against 500 on average); by index they cost the same.
    long few = loads(0, batch);
    loads(batch, n - batch);
    long many = loads(n - batch, n);
    assertEquals(n, registry.size());
    assertTrue(many < 5 * few + 200, "1,000 loads at " + (n - batch) + "+ entries took " + many + " ms, at under "
        + batch + " entries " + few + " ms: a load scans the registry");
    long reloads = loads(n - batch, n); // loads of known tables: each finds its one entry
    assertTrue(reloads < 5 * few + 200, "reloading 1,000 known tables took " + reloads + " ms, loading 1,000 new ones "
        + few + " ms");
    assertEquals(n, registry.size());
  }

  /** Milliseconds to load tables t{from} .. t{to - 1}. */
  private long loads(int from, int to) {
    long t0 = System.nanoTime();
    for (int i = from; i < to; i++) {
      load("t" + i, "s3://b/t" + i);
    }
    return (System.nanoTime() - t0) / 1_000_000;
  }

  @Test
  public void oneEntryPerIdentityAcrossEvictionAndNewLocations() {
    String first = load("t", "s3://b/t");
    assertEquals(first, load("t", "s3://b/t"));
    String moved = load("t", "s3://b/t-2"); // dropped and created again elsewhere: another identity
    assertNotEquals(first, moved);
    registry.forget(first);
    String again = load("t", "s3://b/t"); // the index forgot it with the registry
    assertNotEquals(first, again);
    assertEquals(again, load("t", "s3://b/t"));
    assertEquals(2, registry.size());

    clock.advance(2 * CredentialRegistry.IDLE_EVICTION_MS); // keys expired, unused: both evicted
    assertEquals(2, registry.evictIdle(CredentialRegistry.IDLE_EVICTION_MS));
    String afterEviction = load("t", "s3://b/t");
    assertNotEquals(again, afterEviction);
    assertEquals(1, registry.size());
  }

  @Test
  public void aFreshReplyIsEncodedOnceAndRenewedWithTheKeys() throws Exception {
    java.util.concurrent.atomic.AtomicInteger fetches = new java.util.concurrent.atomic.AtomicInteger();
    registry.sources().enableCustomSource("c");
    registry.sources().registerBridge(request -> "{\"strategy\":\"user-source:test\",\"config\":{\"s3.access-key-id\":\"K"
        + fetches.incrementAndGet() + "\",\"s3.secret-access-key\":\"S\",\"s3.session-token-expires-at-ms\":\""
        + (clock.nowMs() + 60_000) + "\"}}");
    String handle = load("t", "s3://b/t");
    PluginMessages.Request ask = new PluginMessages.Request(handle, null);
    byte[] first = registry.executorAnswers().answerBytes(ask);
    assertSame(first, registry.executorAnswers().answerBytes(ask), "a fresh reply is reused, not encoded per ask");
    PluginMessages.Reply reply = PluginMessages.Reply.decode(first);
    assertTrue(reply.fresh);
    assertEquals("K", reply.configByPrefix.get("").get(ShimKeys.ACCESS_KEY_ID));

    long used = registry.lookup(handle).lastUsedAtMs();
    clock.advance(1_000);
    registry.executorAnswers().answerBytes(ask);
    assertTrue(registry.lookup(handle).lastUsedAtMs() > used, "a reused reply still marks the table used");

    clock.advance(55_000); // due (fraction 0.2 of a minute): not fresh, a refresh starts
    PluginMessages.Reply due = PluginMessages.Reply.decode(registry.executorAnswers().answerBytes(ask));
    assertTrue(!due.fresh);
    long deadline = System.currentTimeMillis() + 5_000;
    PluginMessages.Reply renewed = due;
    byte[] bytes = null;
    while (!renewed.fresh && System.currentTimeMillis() < deadline) {
      Thread.sleep(20);
      bytes = registry.executorAnswers().answerBytes(ask);
      renewed = PluginMessages.Reply.decode(bytes);
    }
    assertTrue(renewed.fresh, "refreshed");
    assertEquals("K1", renewed.configByPrefix.get("").get(ShimKeys.ACCESS_KEY_ID), "the renewed keys, not the cached ones");
    assertNotSame(first, bytes);
    assertSame(bytes, registry.executorAnswers().answerBytes(ask));
  }
}
