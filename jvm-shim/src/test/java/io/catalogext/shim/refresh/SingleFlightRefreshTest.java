package io.catalogext.shim.refresh;
import io.catalogext.shim.config.RefreshPolicy;

import io.catalogext.shim.config.ShimKeys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * One catalog request per renewal: a caller that found the keys due and asks for a background
 * refresh after another refresh already landed must not cause a second, early request. Found by
 * benchmarks/bench_plugin_scale.py (6 early requests in 9,849 renewals under 256 askers).
 */
public class SingleFlightRefreshTest {
  private final FakeClock clock = new FakeClock();
  private final AtomicInteger fetches = new AtomicInteger();
  private final CountDownLatch second = new CountDownLatch(2);

  private TableEntry entry() {
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    EntryRefresher catalog =
        e -> {
          int n = fetches.incrementAndGet();
          second.countDown();
          return new RefreshResult(
              Map.of("", Map.of(ShimKeys.ACCESS_KEY_ID, "K" + n, ShimKeys.SECRET_ACCESS_KEY, "S",
                  ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 600_000))),
              Map.of(), "reload");
        };
    return new TableEntry("h", context, RefreshPolicy.defaults(), catalog, clock);
  }

  @Test
  void testADueLookThatLostTheRaceToARefreshDoesNotFetchAgain() throws Exception {
    TableEntry entry = entry();
    CredentialSlot slot =
        entry.seed("", Map.of(ShimKeys.ACCESS_KEY_ID, "OLD", ShimKeys.SECRET_ACCESS_KEY, "S",
            ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 60_000)));
    clock.advance(55_000); // due: an executor's ask reads the generation, then finds the keys due
    long seenBeforeLooking = entry.generation();
    assertTrue(entry.refreshIfGeneration(seenBeforeLooking), "meanwhile the scheduler's refresh lands");
    entry.refreshAsync(seenBeforeLooking); // the ask, built from the keys it found due
    assertTrue(!second.await(500, TimeUnit.MILLISECONDS), "a second catalog request was made");
    assertEquals(1, fetches.get(), "catalog requests for one renewal");
    assertEquals("K1", slot.current.credentials.accessKeyId(), "the landed keys stay");
  }
}
