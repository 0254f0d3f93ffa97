package io.catalogext.shim.events;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.Metric;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.LongSupplier;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * This JVM's numbers for Spark's metrics system: the shim's Spark plugin adds them to its plugin
 * registry, which Spark publishes as {@code plugin.io.catalogext.shim.CatalogExtPlugin.<name>} in
 * every configured sink (JMX, PrometheusServlet, ...). A fixed set of names, created up front:
 * strategies and outcomes come from known sets (anything else counts as "other"), never one metric
 * per table. Counting never throws and never blocks.
 */
public final class ShimMetrics {
  /** Refresh strategies (the refresh's strategy labels, "-" as "_"), plus the fallbacks. */
  static final List<String> STRATEGIES =
      List.of(
          "storage_refresh_token", "refresh_endpoint", "re_stage", "credentials_endpoint", "reload",
          "other", "none");
  static final List<String> REFRESH_OUTCOMES = List.of("refreshed", "failed");
  /** CommitEvents's commit outcomes, plus "other" for one it might add later. */
  static final List<String> COMMIT_OUTCOMES = List.of("committed", "rejected", "unknown", "failed", "other");
  static final String EXPIRY_GAUGE = "expiry.earliest_seconds";
  static final String ASKS_SERVED = "executor_asks.served";
  static final String ASKS_REFUSED = "executor_asks.refused";
  static final String ASK_LATENCY = "executor_asks.latency";
  static final String CATALOG_REQUESTS = "catalog_requests";
  static final String REJECTED = "credentials.rejected";
  static final String REJECTED_RETRY_WAIT = "credentials.rejected_retry_wait";
  static final String STATED_LIFETIME = "credentials.stated_lifetime_ms";
  static final String OBSERVED_LIFETIME = "credentials.observed_lifetime_ms";

  // Process-wide: Spark builds CatalogExtPlugin by class name; its one metric registry per JVM gets these.
  private static final ShimMetrics INSTANCE = new ShimMetrics(System::currentTimeMillis);

  private final Map<String, Metric> metrics = new LinkedHashMap<>();
  private final Counter asksServed = new Counter();
  private final Counter asksRefused = new Counter();
  private final Timer askLatency = new Timer();
  private final Counter catalogRequests = new Counter();
  private final Counter rejected = new Counter();
  private final Timer rejectedRetryWait = new Timer();
  private volatile long statedLifetimeMs = -1;
  private volatile long observedLifetimeMs = -1;
  /** Epoch ms of the earliest unexpired credential expiry, or Long.MAX_VALUE: the credential registry's. */
  private volatile LongSupplier earliestExpiryMs = () -> Long.MAX_VALUE;

  /** @param clockMs now, in epoch milliseconds */
  ShimMetrics(LongSupplier clockMs) {
    for (String strategy : STRATEGIES) {
      for (String outcome : REFRESH_OUTCOMES) {
        metrics.put(refreshName(strategy, outcome), new Counter());
      }
    }
    for (String outcome : COMMIT_OUTCOMES) {
      metrics.put("commits." + outcome, new Counter());
    }
    // Seconds until the first tracked credential expires; -1 while none is tracked (or all are
    // expired: an idle table is only renewed on its next use, and must not pin this at 0).
    Gauge<Double> expiry =
        () -> {
          long at = this.earliestExpiryMs.getAsLong();
          return at == Long.MAX_VALUE ? -1.0 : Math.max(0, at - clockMs.getAsLong()) / 1000.0;
        };
    metrics.put(EXPIRY_GAUGE, expiry);
    metrics.put(ASKS_SERVED, asksServed);
    metrics.put(ASKS_REFUSED, asksRefused);
    metrics.put(ASK_LATENCY, askLatency);
    metrics.put(CATALOG_REQUESTS, catalogRequests);
    metrics.put(REJECTED, rejected);
    metrics.put(REJECTED_RETRY_WAIT, rejectedRetryWait);
    metrics.put(STATED_LIFETIME, (Gauge<Long>) () -> statedLifetimeMs);
    metrics.put(OBSERVED_LIFETIME, (Gauge<Long>) () -> observedLifetimeMs);
  }

  public static ShimMetrics get() {
    return INSTANCE;
  }

  /** Where the expiry gauge reads the earliest tracked expiry (epoch ms, Long.MAX_VALUE when none). */
  public void watchExpiry(LongSupplier earliestExpiryMs) {
    this.earliestExpiryMs = earliestExpiryMs;
  }

  static String refreshName(String strategy, String outcome) {
    return "refresh." + strategy + "." + outcome;
  }

  /** Every metric by name (fixed at construction). */
  Map<String, Metric> metrics() {
    return Collections.unmodifiableMap(metrics);
  }

  /** Adds every metric to a plugin's registry (the same objects: the numbers are this JVM's). */
  public void registerInto(MetricRegistry registry) {
    metrics.forEach(
        (name, metric) -> {
          if (!registry.getMetrics().containsKey(name)) {
            registry.register(name, metric);
          }
        });
  }

  /** Counts what an {@link EventLog} event says: refreshes and commits. Never throws. */
  void onEvent(String type, ObjectNode fields) {
    try {
      if (fields == null) {
        return;
      }
      if ("credential_refresh.finished".equals(type)) {
        String outcome = fields.path("outcome").asText("");
        if (REFRESH_OUTCOMES.contains(outcome)) {
          count(refreshName(strategyKey(fields.path("strategy").asText(null)), outcome));
        }
      } else if ("credentials.rejected".equals(type)) {
        rejected.inc();
      } else if ("credentials.lifetime-learned".equals(type)) {
        statedLifetimeMs = fields.path("stated_lifetime_ms").asLong(-1);
        observedLifetimeMs = fields.path("observed_lifetime_ms").asLong(-1);
      } else if ("commit.finished".equals(type)) {
        String outcome = fields.path("outcome").asText("");
        count("commits." + (COMMIT_OUTCOMES.contains(outcome) ? outcome : "other"));
      }
    } catch (RuntimeException e) {
      // a metric must never fail the operation it counts
    }
  }

  /**
   * The known strategy a result's label names: "reload (after credentials-endpoint failed: ...)"
   * is "reload"; no label (the source failed before any strategy answered) is "none".
   */
  static String strategyKey(String label) {
    if (label == null || label.isEmpty()) {
      return "none";
    }
    int cut = label.indexOf(' ');
    String key = (cut < 0 ? label : label.substring(0, cut)).replace('-', '_');
    return STRATEGIES.contains(key) ? key : "other";
  }

  private void count(String name) {
    Metric m = metrics.get(name);
    if (m instanceof Counter) {
      ((Counter) m).inc();
    }
  }

  /** A call S3 rejected went through after waiting this long for new keys. */
  public void rejectedCallRetried(long waitMs) {
    rejectedRetryWait.update(waitMs, java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  /** Driver: an executor's ask was answered (or, for a malformed one, refused). */
  public void askServed(boolean served) {
    (served ? asksServed : asksRefused).inc();
  }

  /** Executor: times one ask of the driver, whether it answers or fails. */
  public <T> T timeAsk(Callable<T> ask) throws Exception {
    return askLatency.time(ask);
  }

  /**
   * One request of Iceberg's catalog client (CommitEvents: loads, listings, stage-creates,
   * commits). Credential refreshes use the inner client and are counted under refresh.* instead.
   */
  public void catalogRequest() {
    catalogRequests.inc();
  }
}
