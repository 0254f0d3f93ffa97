package io.catalogext.shim;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;

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

  public void testRefreshesAreCountedByStrategyAndOutcome() {
    metrics.onEvent("credential_refresh.finished", EventLog.fields().put("outcome", "refreshed").put("strategy", "re-stage"));
    metrics.onEvent(
        "credential_refresh.finished",
        EventLog.fields().put("outcome", "refreshed").put("strategy", "reload (after credentials-endpoint failed: 404)"));
    metrics.onEvent("credential_refresh.finished", EventLog.fields().put("outcome", "failed"));
    metrics.onEvent("credential_refresh.started", EventLog.fields().put("strategy", "reload"));
    Check.equal(1L, count("refresh.re_stage.refreshed"), "re-stage");
    Check.equal(1L, count("refresh.reload.refreshed"), "the strategy that answered, not the ones that failed first");
    Check.equal(1L, count("refresh.none.failed"), "a failure before any strategy answered");
    Check.equal(0L, count("refresh.reload.failed"), "started events are not outcomes");
  }

  public void testUnknownStrategiesAndOutcomesAddNoMetric() {
    int before = metrics.metrics().size();
    for (int i = 0; i < 100; i++) {
      metrics.onEvent("credential_refresh.finished", EventLog.fields().put("outcome", "refreshed").put("strategy", "s" + i));
      metrics.onEvent("commit.finished", EventLog.fields().put("outcome", "o" + i));
    }
    Check.equal(before, metrics.metrics().size(), "a fixed set of names");
    Check.equal(100L, count("refresh.other.refreshed"), "unknown strategies count as other");
    Check.equal(100L, count("commits.other"), "unknown commit outcomes count as other");
  }

  public void testCommitsAreCountedByOutcome() {
    for (String outcome : new String[] {"committed", "committed", "rejected", "unknown", "failed"}) {
      metrics.onEvent("commit.finished", EventLog.fields().put("outcome", outcome));
    }
    metrics.onEvent("stage_create.finished", EventLog.fields().put("outcome", "staged"));
    Check.equal(2L, count("commits.committed"), "committed");
    Check.equal(1L, count("commits.rejected"), "rejected");
    Check.equal(1L, count("commits.unknown"), "unknown");
    Check.equal(1L, count("commits.failed"), "failed");
  }

  public void testExpiryGaugeIsSecondsToTheEarliestExpiryOrMinusOne() {
    Check.equal(-1.0, expiry(), "nothing tracked");
    earliest = now + 4_500;
    Check.equal(4.5, expiry(), "seconds left");
    now += 10_000;
    Check.equal(0.0, expiry(), "never negative");
  }

  public void testAsksAreCountedAndTimed() throws Exception {
    metrics.askServed(true);
    metrics.askServed(true);
    metrics.askServed(false);
    Check.equal(2L, count(ShimMetrics.ASKS_SERVED), "served");
    Check.equal(1L, count(ShimMetrics.ASKS_REFUSED), "refused");
    Check.equal("answer", metrics.timeAsk(() -> "answer"), "the ask's result");
    Check.raises(IllegalStateException.class, () -> metrics.timeAsk(() -> {
      throw new IllegalStateException("driver gone");
    }));
    Check.equal(2L, ((Timer) metrics.metrics().get(ShimMetrics.ASK_LATENCY)).getCount(), "failed asks are timed too");
  }

  public void testBrokenEventsNeverThrow() {
    metrics.onEvent("commit.finished", null);
    metrics.onEvent(null, EventLog.fields());
  }

  public void testRegisteringTwiceInOneRegistryKeepsOneOfEach() {
    MetricRegistry registry = new MetricRegistry();
    metrics.registerInto(registry);
    metrics.registerInto(registry); // local mode: the driver's and the executor's plugin
    Check.equal(metrics.metrics().keySet(), registry.getMetrics().keySet(), "every metric, once");
    Check.isTrue(registry.getMetrics().containsKey("refresh.re_stage.refreshed"), "a refresh counter");
    Check.isTrue(registry.getMetrics().containsKey(ShimMetrics.EXPIRY_GAUGE), "the gauge");
  }
}
