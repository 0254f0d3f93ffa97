package io.catalogext.shim.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;
import org.junit.jupiter.api.Test;

/** The shim's metrics: counted from events, a fixed set of names, the expiry gauge, ask timing. */
public class ShimMetricsTest {
  private long now = 1_000_000L;
  private long earliest = Long.MAX_VALUE;
  private final ShimMetrics metrics = new ShimMetrics(() -> now, () -> earliest);

  private long count(String name) {
    return ((Counter) metrics.metrics().get(name)).getCount();
  }

  private double expiry() {
    return (Double) ((Gauge<?>) metrics.metrics().get(ShimMetrics.EXPIRY_GAUGE)).getValue();
  }

  @Test
  void testRefreshesAreCountedByStrategyAndOutcome() {
    metrics.onEvent("credential_refresh.finished", EventLog.fields().put("outcome", "refreshed").put("strategy", "re-stage"));
    metrics.onEvent(
        "credential_refresh.finished",
        EventLog.fields().put("outcome", "refreshed").put("strategy", "reload (after credentials-endpoint failed: 404)"));
    metrics.onEvent("credential_refresh.finished", EventLog.fields().put("outcome", "failed"));
    metrics.onEvent("credential_refresh.started", EventLog.fields().put("strategy", "reload"));
    assertEquals(1L, count("refresh.re_stage.refreshed"), "re-stage");
    assertEquals(1L, count("refresh.reload.refreshed"), "the strategy that answered, not the ones that failed first");
    assertEquals(1L, count("refresh.none.failed"), "a failure before any strategy answered");
    assertEquals(0L, count("refresh.reload.failed"), "started events are not outcomes");
  }

  @Test
  void testUnknownStrategiesAndOutcomesAddNoMetric() {
    int before = metrics.metrics().size();
    for (int i = 0; i < 100; i++) {
      metrics.onEvent("credential_refresh.finished", EventLog.fields().put("outcome", "refreshed").put("strategy", "s" + i));
      metrics.onEvent("commit.finished", EventLog.fields().put("outcome", "o" + i));
    }
    assertEquals(before, metrics.metrics().size(), "a fixed set of names");
    assertEquals(100L, count("refresh.other.refreshed"), "unknown strategies count as other");
    assertEquals(100L, count("commits.other"), "unknown commit outcomes count as other");
  }

  @Test
  void testCommitsAreCountedByOutcome() {
    for (String outcome : new String[] {"committed", "committed", "rejected", "unknown", "failed"}) {
      metrics.onEvent("commit.finished", EventLog.fields().put("outcome", outcome));
    }
    metrics.onEvent("stage_create.finished", EventLog.fields().put("outcome", "staged"));
    assertEquals(2L, count("commits.committed"), "committed");
    assertEquals(1L, count("commits.rejected"), "rejected");
    assertEquals(1L, count("commits.unknown"), "unknown");
    assertEquals(1L, count("commits.failed"), "failed");
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
