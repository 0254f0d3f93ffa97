package io.catalogext.shim.refresh;
import io.catalogext.shim.config.RefreshPolicy;

import io.catalogext.shim.errors.CredentialsExpiredException;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.util.DaemonThreads;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import software.amazon.awssdk.auth.credentials.AwsCredentials;

/**
 * Liveness of the driver registry on a fake clock: evicted entries come back, failures back off and
 * end in the documented error, hung sources time out, the registry is bounded, and the scheduler
 * pass never throws.
 */
public class RegistryLivenessTest {
  private static final long MINUTE = 60_000L;

  private final FakeClock clock = new FakeClock();
  private final CredentialRegistry registry = new CredentialRegistry(clock);
  private final CatalogSession state = new CatalogSession("c", Map.of());
  private final AtomicInteger calls = new AtomicInteger();

  public RegistryLivenessTest() {
    registry.catalogs().register(state);
    registry.sources().enableCustomSource("c"); // refreshed from the (here Java) bridge, as a Python source would be
  }

  /** A source answering keys K1, K2, ... valid for {@code lifetimeMs} from the fake now. */
  private void answerKeys(long lifetimeMs) {
    registry.sources().registerBridge(
        request -> {
          int n = calls.incrementAndGet();
          return "{\"strategy\":\"user-source:test\",\"config\":{\"s3.access-key-id\":\"K" + n
              + "\",\"s3.secret-access-key\":\"S\",\"s3.session-token-expires-at-ms\":\""
              + (clock.nowMs() + lifetimeMs) + "\"}}";
        });
  }

  private TableCredentialsProvider track(String table, long lifetimeMs) {
    TableContext context = new TableContext("c", List.of("db"), table, "s3://b/" + table, null, false, null, null);
    Map<String, String> config = new HashMap<>();
    config.put(ShimKeys.ACCESS_KEY_ID, "K0");
    config.put(ShimKeys.SECRET_ACCESS_KEY, "S");
    config.put(ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + lifetimeMs));
    String handle = registry.registerDriverTable(context, state, config, List.of());
    config.put(ShimKeys.TABLE_HANDLE, handle);
    config.put(ShimKeys.CATALOG_SESSION, state.id);
    TableEntry entry = registry.forClient(config);
    return new TableCredentialsProvider(entry, entry.seed("", config));
  }

  private static String key(AwsCredentials credentials) {
    return credentials.accessKeyId();
  }

  @Test
  void testEvictedEntryIsRefreshedAgainWhenUsed() {
    answerKeys(10 * MINUTE);
    TableCredentialsProvider provider = track("kept", 10 * MINUTE);
    assertEquals("K0", key(provider.resolveCredentials()), "initial keys");
    registry.tick(); // the ticker notes the use

    clock.advance(2 * 60 * MINUTE); // a DataFrame kept in a notebook for two hours
    registry.tick(); // its periodic eviction drops the idle entry with expired keys
    assertEquals(0, registry.size(), "tracked entries after eviction");

    assertEquals("K1", key(provider.resolveCredentials()), "keys after the idle period");
    assertEquals(1, registry.size(), "the entry is tracked again");

    clock.advance(11 * MINUTE); // K1 expired: the ticker must see the entry again
    registry.tick();
    assertEquals("K2", key(provider.resolveCredentials()), "keys once K1 expired");
  }

  @Test
  void testFailedRefreshBacksOffAndEndsInTheDocumentedError() {
    registry.sources().setRefreshPolicy("c", new RefreshPolicy(0, 0.2, 60_000, 1_000, 60_000, 5_000, 3_600_000)); // backoff 1 s, 2 s, 4 s...; timeout 5 s
    registry.sources().registerBridge(
        request -> {
          calls.incrementAndGet();
          return "{\"error\": \"the token service said no\"}";
        });
    TableCredentialsProvider provider = track("broken", 10_000);
    clock.advance(11_000);
    registry.tick();
    long started = clock.nowMs();
    CredentialsExpiredException first = assertThrows(CredentialsExpiredException.class, provider::resolveCredentials);
    assertTrue(first.getMessage().startsWith("Storage credentials for table c.db.broken expired and refresh via"),
        first.getMessage());
    assertTrue(first.getMessage().contains("the token service said no"), first.getMessage());
    assertTrue(first.getMessage().endsWith("The write was stopped before anything was committed."), first.getMessage());
    // Attempts at +0, +1 s, +3 s; the next (+7 s) is past the 5 s timeout: the error ends it.
    assertEquals(3, calls.get(), "source calls");
    assertEquals(3_000L, clock.nowMs() - started, "time spent backing off");
  }

  @Test
  void testHungSourceTimesOut() {
    registry.sources().setRefreshPolicy("c", new RefreshPolicy(0, 0.2, 60_000, 1_000, 60_000, 300, 3_600_000)); // timeout-ms = 300
    CountDownLatch never = new CountDownLatch(1);
    registry.sources().registerBridge(
        request -> {
          calls.incrementAndGet();
          try {
            never.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return "{\"error\": \"interrupted\"}";
        });
    TableCredentialsProvider provider = track("hung", 10_000);
    clock.advance(11_000);
    registry.tick();
    long started = System.nanoTime();
    CredentialsExpiredException e = assertThrows(CredentialsExpiredException.class, provider::resolveCredentials);
    long waitedMs = (System.nanoTime() - started) / 1_000_000;
    assertTrue(e.getMessage().contains("timed out after 300 ms"), e.getMessage());
    assertTrue(waitedMs < 5_000, "waited " + waitedMs + " ms for a hung source");
  }

  @Test
  void testOneEntryPerTableIdentityNotPerLoad() {
    answerKeys(10 * MINUTE);
    for (int load = 0; load < 5; load++) { // a CTAS, then loads of the same table
      track("loaded", 10_000 + load);
    }
    track("other", 10_000);
    assertEquals(2, registry.size(), "entries for two tables loaded six times");
  }

  @Test
  void testRegistryIsBounded() {
    answerKeys(10 * MINUTE);
    for (int i = 0; i < CredentialRegistry.MAX_ENTRIES + 25; i++) {
      track("t" + i, 10 * MINUTE);
    }
    assertEquals(CredentialRegistry.MAX_ENTRIES, registry.size(), "tracked entries");
  }

  @Test
  void testSchedulerPassSurvivesExceptions() {
    AtomicInteger ticks = new AtomicInteger();
    CredentialRegistry broken =
        new CredentialRegistry(
            () -> {
              if (ticks.incrementAndGet() == 1) {
                throw new IllegalStateException("clock broke");
              }
              return clock.nowMs();
            });
    broken.tickSafely(); // must not throw, or scheduleWithFixedDelay would stop for good
    broken.tickSafely();
    assertTrue(ticks.get() >= 2, "the second pass ran after the first one failed");
  }

  /** The events of one table in the JVM's event log, as (type, outcome, strategy, error_class, text). */
  private static List<String> refreshEvents(String table) {
    List<String> out = new java.util.ArrayList<>();
    for (org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode e : Json.read(EventLog.drainAfter(0)).get("events")) {
      if (table.equals(e.path("table").asText()) && e.get("type").asText().startsWith("credential_refresh.")) {
        out.add(e.get("type").asText() + " " + e.path("outcome").asText("-") + " " + e.path("strategy").asText("-")
            + " " + e.path("error_class").asText("-") + " " + e.has("duration_s") + " " + e.has("next_refresh"));
      }
    }
    return out;
  }

  @Test
  void testRefreshEventsNameTheStrategyAndOnlyTheErrorClass() {
    answerKeys(10 * MINUTE);
    TableCredentialsProvider provider = track("evented", 10 * MINUTE);
    clock.advance(11 * MINUTE);
    registry.tick(); // the ticker marks the expired keys due
    assertEquals("K1", key(provider.resolveCredentials()), "refreshed keys");
    assertEquals(
        List.of("credential_refresh.started - - - false false",
            "credential_refresh.finished refreshed user-source:test - true true"),
        refreshEvents("c.db.evented"), "events of a refresh");

    registry.sources().registerBridge(request -> "{\"error\": \"503 from https://catalog.internal/x?token=abc\"}");
    clock.advance(11 * MINUTE);
    registry.tick();
    assertThrows(RuntimeException.class, provider::resolveCredentials);
    List<String> events = refreshEvents("c.db.evented");
    String failed = events.stream().filter(e -> e.contains("finished failed")).findFirst().orElse("none");
    assertTrue(failed.matches("credential_refresh.finished failed - [A-Za-z]+(Exception|Error) true false"),
        "a failed refresh carries the error class: " + failed);
    assertTrue(!EventLog.drainAfter(0).contains("catalog.internal"), "never the message");
  }

  @Test
  void testAHungCatalogDoesNotStarveAnotherCatalogsRefreshes() throws Exception {
    registry.sources().setRefreshPolicy("c", new RefreshPolicy(0, 0.2, 60_000, 1_000, 60_000, 300, 3_600_000)); // timeout-ms = 300
    java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();
    registry.sources().registerBridge(
        request -> {
          if (request.contains("\"catalog\":\"hung\"")) {
            while (!released.get()) { // like a socket read: deaf to interrupts
              try {
                Thread.sleep(20);
              } catch (InterruptedException ignored) {
                // a cancelled caller does not end a blocked read either
              }
            }
            return "{\"error\": \"released\"}";
          }
          return "{\"strategy\":\"user-source:test\",\"config\":{\"s3.access-key-id\":\"FRESH\","
              + "\"s3.secret-access-key\":\"S\",\"s3.session-token-expires-at-ms\":\"" + (clock.nowMs() + 10 * MINUTE)
              + "\"}}";
        });
    try {
      CatalogSession hung = new CatalogSession("hung", Map.of());
      CatalogSession healthy = new CatalogSession("healthy", Map.of());
      java.util.List<TableEntry> hungTables = new java.util.ArrayList<>();
      for (int i = 0; i < 20; i++) { // more than any pool: each of its refreshes hangs
        hungTables.add(trackIn(hung, "t" + i));
      }
      TableEntry other = trackIn(healthy, "t");
      java.util.concurrent.ExecutorService callers =
          java.util.concurrent.Executors.newFixedThreadPool(20, DaemonThreads.named("test-caller"));
      java.util.List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
      for (TableEntry e : hungTables) {
        done.add(callers.submit(() -> registry.refresh(e.handle, e.generation())));
      }
      for (java.util.concurrent.Future<?> f : done) {
        assertThrows(java.util.concurrent.ExecutionException.class, f::get); // each times out or finds no permit
      }
      callers.shutdown();
      assertTrue(registry.refresh(other.handle, other.generation()), "the healthy catalog refreshed");
      assertEquals("FRESH", other.snapshot("").credentials.accessKeyId(), "its fresh keys");
    } finally {
      released.set(true);
    }
  }

  private TableEntry trackIn(CatalogSession catalog, String table) {
    registry.catalogs().register(catalog);
    registry.sources().enableCustomSource(catalog.name);
    TableContext context =
        new TableContext(catalog.name, List.of("db"), table, "s3://b/" + table, null, false, null, null);
    Map<String, String> config = new HashMap<>();
    config.put(ShimKeys.ACCESS_KEY_ID, "K0");
    config.put(ShimKeys.SECRET_ACCESS_KEY, "S");
    config.put(ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + MINUTE));
    return registry.lookup(registry.registerDriverTable(context, catalog, config, List.of()));
  }
}
