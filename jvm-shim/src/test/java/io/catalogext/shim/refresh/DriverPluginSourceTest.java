package io.catalogext.shim.refresh;
import io.catalogext.shim.config.RefreshPolicy;

import io.catalogext.shim.errors.CredentialsExpiredException;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.config.ShimKeys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Executors in other JVMs: the driver's answers, including its errors, are honoured. */
public class DriverPluginSourceTest {
  private final FakeClock clock = new FakeClock();
  private final AtomicInteger asks = new AtomicInteger();

  private TableEntry executorEntry(DriverChannel asker) {
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    return new TableEntry("h", context, RefreshPolicy.defaults(), new DriverPluginSource(asker, clock, 5_000), clock);
  }

  @Test
  void testFreshReplyIsInstalled() throws Exception {
    long expires = clock.nowMs() + 600_000;
    TableEntry entry =
        executorEntry(
            request -> {
              asks.incrementAndGet();
              Map<String, String> config =
                  Map.of(ShimKeys.ACCESS_KEY_ID, "NEW", ShimKeys.SECRET_ACCESS_KEY, "S", ShimKeys.EXPIRES_AT_MS,
                      String.valueOf(expires));
              return new PluginMessages.Reply(Map.of("", config), true, false, null, "re-stage").encode();
            });
    CredentialSlot slot = entry.seed("", Map.of());
    assertTrue(entry.refreshIfGeneration(entry.generation()), "fetched");
    assertEquals("NEW", slot.current.credentials.accessKeyId(), "installed keys");
    assertEquals(1, asks.get(), "asks");
  }

  @Test
  void testDriverErrorIsAnErrorNotStaleKeys() {
    TableEntry entry =
        executorEntry(
            request -> {
              asks.incrementAndGet();
              return PluginMessages.Reply.failed("cannot refresh storage credentials for table c.db.t: 503").encode();
            });
    CredentialSlot slot =
        entry.seed("", Map.of(ShimKeys.ACCESS_KEY_ID, "OLD", ShimKeys.SECRET_ACCESS_KEY, "S",
            ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 5_000)));
    clock.advance(6_000);
    entry.tick(clock.nowMs()); // what the JVM's ticker does every second
    TableCredentialsProvider provider = new TableCredentialsProvider(entry, slot);
    long started = clock.nowMs();
    CredentialsExpiredException e = assertThrows(CredentialsExpiredException.class, provider::resolveCredentials);
    assertTrue(e.getMessage().contains("the driver's refresh failed: cannot refresh"), e.getMessage());
    // Asked again only after backoffs (1 s, 2 s, 4 s, 8 s: 15 s in all), then the 30 s timeout ends it.
    assertEquals(5, asks.get(), "asks");
    assertEquals(15_000L, clock.nowMs() - started, "time spent backing off");
    assertEquals("OLD", slot.current.credentials.accessKeyId(), "stale keys were not installed as new");
  }

  @Test
  void testMessagesCarryNoSecretInToString() {
    Map<String, String> config = Map.of(ShimKeys.ACCESS_KEY_ID, "AKIASECRET", ShimKeys.SECRET_ACCESS_KEY, "SHH");
    PluginMessages.Reply reply = new PluginMessages.Reply(Map.of("", config), true, false, null, "reload");
    PluginMessages.Reply back = PluginMessages.Reply.decode(reply.encode());
    assertEquals("AKIASECRET", back.configByPrefix.get("").get(ShimKeys.ACCESS_KEY_ID), "round trip");
    assertTrue(!back.toString().contains("AKIASECRET") && !back.toString().contains("SHH"), back.toString());
    assertThrows(IllegalArgumentException.class, () -> PluginMessages.Request.decode("not bytes"));
    assertEquals(List.of("h"), List.of(PluginMessages.Request.decode(new PluginMessages.Request("h", null).encode()).handle),
        "request round trip");
  }

  private TableEntry lateEntry;

  /** An executor entry fed by {@code asker}, seeded with keys that expired before it started. */
  private TableCredentialsProvider executorStartedLate(DriverChannel asker, RefreshPolicy policy, long timeoutMs) {
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    TableEntry entry = new TableEntry("h", context, policy, new DriverPluginSource(asker, clock, timeoutMs), clock);
    lateEntry = entry;
    CredentialSlot slot =
        entry.seed("", Map.of(ShimKeys.ACCESS_KEY_ID, "EXPIRED", ShimKeys.SECRET_ACCESS_KEY, "S",
            ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() - 1)));
    entry.tick(clock.nowMs());
    return new TableCredentialsProvider(entry, slot);
  }

  @Test
  void testDriverHandsOutItsStillValidKeysDuringAnOutage() {
    // The driver: a table whose keys K0 last 60 min, and a catalog that is down from then on.
    CredentialRegistry driver = new CredentialRegistry(clock);
    CatalogSession state = new CatalogSession("c", Map.of());
    driver.catalogs().register(state);
    driver.sources().enableCustomSource("c");
    driver.sources().registerBridge(request -> "{\"error\": \"503 from the catalog\"}");
    TableContext context = new TableContext("c", List.of("db"), "t", "s3://b/t", null, false, null, null);
    Map<String, String> vended = Map.of(ShimKeys.ACCESS_KEY_ID, "K0", ShimKeys.SECRET_ACCESS_KEY, "S",
        ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 60 * 60_000));
    String handle = driver.registerDriverTable(context, state, vended, List.of());
    clock.advance(55 * 60_000); // late in the lifetime: K0 is due, its refresh fails, 5 min remain
    driver.tick();

    // An executor starting now, through the plugin's receive path (request bytes in, reply bytes out).
    DriverChannel plugin =
        message -> {
          asks.incrementAndGet();
          PluginMessages.Request request = PluginMessages.Request.decode(message);
          return driver.executorAnswers().answer(new PluginMessages.Request(handle, request.identityJson)).encode();
        };
    TableCredentialsProvider executor = executorStartedLate(plugin, RefreshPolicy.defaults(), 5_000);
    assertEquals("K0", executor.resolveCredentials().accessKeyId(), "the driver's still-valid keys");
    String status = lateEntry.describe().toString();
    assertTrue(status.contains("\"failure_count\":1"), "still counted as a failed refresh: " + status);

    clock.advance(6 * 60_000); // K0 expired too: now the driver's error is the executor's
    CredentialsExpiredException e = assertThrows(CredentialsExpiredException.class, executor::resolveCredentials);
    assertTrue(e.getMessage().contains("the driver"), e.getMessage());
  }

  @Test
  void testExecutorAskIsBoundedByTimeoutMs() {
    // A driver that never answers: PluginContext.ask alone would wait spark.rpc.askTimeout (120 s;
    // 5 s here), after which Spark throws.
    DriverChannel silent =
        message -> {
          asks.incrementAndGet();
          Thread.sleep(5_000);
          throw new IllegalStateException("Futures timed out after [120 seconds] (spark.rpc.askTimeout)");
        };
    RefreshPolicy policy = new RefreshPolicy(0, 0.2, 60_000, 1_000, 60_000, 300); // timeout-ms = 300
    TableCredentialsProvider executor = executorStartedLate(silent, policy, 300);
    long started = System.nanoTime();
    CredentialsExpiredException e = assertThrows(CredentialsExpiredException.class, executor::resolveCredentials);
    long waitedMs = (System.nanoTime() - started) / 1_000_000;
    assertTrue(waitedMs < 2_000, "waited " + waitedMs + " ms for a silent driver");
    assertTrue(e.getMessage().contains("the ask to the driver timed out after 300 ms (catalog-ext.refresh.timeout-ms)"),
        e.getMessage());
  }
}
