package io.catalogext.shim.refresh;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.session.ServerClocks;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Executors whose keys a store refuses from the start, each hearing only of its own rejections:
 * the driver judges their reports for all of them (credential-rules.json `executor-reports`). The
 * driver, its plugin's answers and the executors' sources are the real ones; the asks go through
 * the plugin's encoding, on a fake clock, the driver's refreshes inline.
 */
public class ExecutorReportsTest {
  private final FakeClock clock = new FakeClock();
  private final AtomicInteger fetches = new AtomicInteger();
  private final TableContext context =
      TableContext.fromIdentity("{\"catalog\":\"lake\",\"namespace\":[\"db\"],\"table\":\"t\"}");
  private final RefreshPolicy policy = new RefreshPolicy(0, 0.4, 1000, 100, 1000, 5000, 3_600_000L, 6, 5000);
  private TableEntry driver;
  private ExecutorAnswers answers;

  @BeforeEach
  void start() {
    EntryRefresher catalog = subject -> new RefreshResult(Map.of("", keys("K" + (fetches.incrementAndGet() + 1))),
        Map.of(), "reload");
    driver = new TableEntry("h", context, policy, catalog, clock, new ServerClocks("lake"), Runnable::run);
    driver.seed("", keys("K1"));
    answers = new ExecutorAnswers(handle -> driver, (handle, named) -> null);
  }

  private Map<String, String> keys(String id) {
    return Map.of(ShimKeys.ACCESS_KEY_ID, id, ShimKeys.SECRET_ACCESS_KEY, "S",
        ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 10_000));
  }

  /** An executor JVM whose task's FileIO carried keys {@code id}; it asks the driver as the plugin RPC does. */
  private TableEntry executor() {
    DriverChannel asker = message -> answers.answerBytes(PluginMessages.Request.decode(message));
    return new TableEntry("h", context, policy, new DriverPluginSource(asker, clock, 5_000), clock);
  }

  /** The store refuses {@code slot}'s current keys of {@code executor}, {@code ageMs} after the driver fetched them. */
  private boolean refuse(TableEntry executor, CredentialSlot slot, long ageMs) {
    clock.advance(ageMs - (clock.nowMs() - driver.snapshot("").fetchedAtMs));
    return executor.onRejected(slot, slot.current, "InvalidAccessKeyId", null);
  }

  /** The first executor's K1 is refused: the driver renews once, and the wave starts. */
  private TableEntry firstWave() {
    TableEntry first = executor();
    CredentialSlot slot = first.seed("", keys("K1"));
    assertTrue(refuse(first, slot, 300), "the first rejection is renewed");
    assertEquals("K2", slot.current.accessKeyId());
    assertEquals(1, fetches.get());
    return first;
  }

  @Test
  void testNewerKeysRevokedInAnotherExecutorEndInOneLineWithoutAnotherCatalogRequest() {
    firstWave();
    // A straggler reports K1 (older than the wave) accepted: that answers nothing.
    answers.answer(new PluginMessages.Request("h", null, null, null, "K1"));
    TableEntry second = executor(); // never saw K1 refused: it starts with K2
    CredentialSlot slot = second.seed("", keys("K2"));
    CredentialsRejectedException e = assertThrows(CredentialsRejectedException.class, () -> refuse(second, slot, 400));
    assertTrue(e.getMessage().startsWith("S3 rejected the storage credentials of table lake.db.t again 400 ms after a refresh"),
        e.getMessage());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    assertEquals(1, fetches.get(), "catalog requests");
    assertEquals(1, driver.describe().get("rejection_count").asLong(), "rejection waves");
  }

  @Test
  void testKeysAStoreAcceptedInAnExecutorAnswerTheWave() throws Exception {
    TableEntry first = firstWave();
    CredentialSlot firstSlot = first.slots().get("");
    first.accepted(firstSlot.current); // a store took K2 there
    first.refreshIfGeneration(first.generation()); // its next ask (the driver's K2 again) reports K2 accepted
    TableEntry second = executor();
    CredentialSlot slot = second.seed("", keys("K2"));
    assertTrue(refuse(second, slot, 400), "renewed: keys of the wave's answer worked");
    assertEquals("K3", slot.current.accessKeyId());
    assertEquals(2, fetches.get(), "catalog requests");
  }

  @Test
  void testKeysRefusedALearnableLifetimeAfterTheirFetchAreRenewed() {
    firstWave();
    TableEntry second = executor();
    CredentialSlot slot = second.seed("", keys("K2"));
    assertTrue(refuse(second, slot, 1_500), "renewed: keys that lived a second or more may just have expired");
    assertEquals(2, fetches.get(), "catalog requests");
  }
}
