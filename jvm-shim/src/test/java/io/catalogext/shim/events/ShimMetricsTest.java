package io.catalogext.shim.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The shim's metrics: counted from events, a fixed set of names, the expiry gauge, ask timing. */
public class ShimMetricsTest {
  private long now = 1_000_000L;
  private long earliest = Long.MAX_VALUE;
  private final ShimMetrics metrics = watching(new ShimMetrics(() -> now));

  private ShimMetrics watching(ShimMetrics m) {
    m.watchExpiry(() -> earliest);
    return m;
  }

  private long count(String name) {
    return ((Counter) metrics.metrics().get(name)).getCount();
  }

  private double expiry() {
    return (Double) ((Gauge<?>) metrics.metrics().get(ShimMetrics.EXPIRY_GAUGE)).getValue();
  }

  private void refreshFinished(String outcome, String strategy) {
    metrics.onEvent("credential_refresh.finished", EventLog.fields().put("outcome", outcome).put("strategy", strategy));
  }

  private void commitFinished(String outcome) {
    metrics.onEvent("commit.finished", EventLog.fields().put("outcome", outcome));
  }

  @ParameterizedTest(name = "{0} = {1}: {2}")
  @CsvSource(delimiter = '|', value = {
    "refresh.re_stage.refreshed | 1 | re-stage",
    "refresh.reload.refreshed   | 1 | the strategy that answered, not the ones that failed first",
    "refresh.none.failed        | 1 | a failure before any strategy answered",
    "refresh.reload.failed      | 0 | started events are not outcomes"})
  void testRefreshesAreCountedByStrategyAndOutcome(String name, long expected, String why) {
    refreshFinished("refreshed", "re-stage");
    refreshFinished("refreshed", "reload (after credentials-endpoint failed: 404)");
    metrics.onEvent("credential_refresh.finished", EventLog.fields().put("outcome", "failed"));
    metrics.onEvent("credential_refresh.started", EventLog.fields().put("strategy", "reload"));
    assertEquals(expected, count(name), why);
  }

  @Test
  void testUnknownStrategiesAndOutcomesAddNoMetric() {
    int before = metrics.metrics().size();
    for (int i = 0; i < 100; i++) {
      refreshFinished("refreshed", "s" + i);
      commitFinished("o" + i);
    }
    assertEquals(before, metrics.metrics().size(), "a fixed set of names");
    assertEquals(100L, count("refresh.other.refreshed"), "unknown strategies count as other");
    assertEquals(100L, count("commits.other"), "unknown commit outcomes count as other");
  }

  @ParameterizedTest(name = "{0} = {1}")
  @CsvSource({"commits.committed, 2", "commits.rejected, 1", "commits.unknown, 1", "commits.failed, 1"})
  void testCommitsAreCountedByOutcome(String name, long expected) {
    for (String outcome : new String[] {"committed", "committed", "rejected", "unknown", "failed"}) {
      commitFinished(outcome);
    }
    metrics.onEvent("stage_create.finished", EventLog.fields().put("outcome", "staged"));
    assertEquals(expected, count(name), name);
  }

  @Test
  void testExpiryGaugeIsSecondsToTheEarliestExpiryOrMinusOne() {
    assertEquals(-1.0, expiry(), "nothing tracked");
    earliest = now + 4_500;
    assertEquals(4.5, expiry(), "seconds left");
    now += 10_000;
    assertEquals(0.0, expiry(), "never negative");
  }

  @Test
  void testAsksAreCountedAndTimed() throws Exception {
    metrics.askServed(true);
    metrics.askServed(true);
    metrics.askServed(false);
    assertEquals(2L, count(ShimMetrics.ASKS_SERVED), "served");
    assertEquals(1L, count(ShimMetrics.ASKS_REFUSED), "refused");
    assertEquals("answer", metrics.timeAsk(() -> "answer"), "the ask's result");
    assertThrows(IllegalStateException.class, () -> metrics.timeAsk(() -> {
      throw new IllegalStateException("driver gone");
    }));
    assertEquals(2L, ((Timer) metrics.metrics().get(ShimMetrics.ASK_LATENCY)).getCount(), "failed asks are timed too");
  }

  @Test
  void testBrokenEventsNeverThrow() {
    metrics.onEvent("commit.finished", null);
    metrics.onEvent(null, EventLog.fields());
  }

  @Test
  void testRegisteringTwiceInOneRegistryKeepsOneOfEach() {
    MetricRegistry registry = new MetricRegistry();
    metrics.registerInto(registry);
    metrics.registerInto(registry); // local mode: the driver's and the executor's plugin
    assertEquals(metrics.metrics().keySet(), registry.getMetrics().keySet(), "every metric, once");
    assertTrue(registry.getMetrics().containsKey("refresh.re_stage.refreshed"), "a refresh counter");
    assertTrue(registry.getMetrics().containsKey(ShimMetrics.EXPIRY_GAUGE), "the gauge");
  }
}
