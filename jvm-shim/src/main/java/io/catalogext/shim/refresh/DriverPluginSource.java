package io.catalogext.shim.refresh;

import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.events.ShimMetrics;

import java.util.function.Supplier;

/**
 * Refresh source of entries in executor JVMs: ask the driver through Spark's plugin RPC (the
 * {@link DriverChannel} the executor plugin connected). The driver answers from memory at once;
 * while it is refreshing, this asks again until {@code timeoutMs}. A failed driver refresh is an
 * error here too, never success, except that keys the driver still holds and that have not expired
 * are taken (with their expiry) while its refresh fails: an executor started during a catalog
 * outage can still work until then.
 */
public final class DriverPluginSource implements EntryRefresher {
  /** Between two asks while the driver refreshes: short next to any credential lifetime. */
  static final long POLL_MS = 200L;

  private final DriverChannel channel;
  private final Clock clock;
  private final long timeoutMs;

  DriverPluginSource(DriverChannel channel, Clock clock, long timeoutMs) {
    this.channel = channel;
    this.clock = clock;
    this.timeoutMs = timeoutMs;
  }

  /** The source for this executor JVM, asking through whatever channel {@code connected} holds at the time. */
  static DriverPluginSource forExecutor(Supplier<DriverChannel> connected, Clock clock, long timeoutMs) {
    return new DriverPluginSource(
        message -> {
          DriverChannel driver = connected.get();
          if (driver == null) {
            throw new IllegalStateException(
                "the catalog-ext Spark plugin is not running in this executor: set"
                    + " spark.plugins=io.catalogext.shim.CatalogExtPlugin (pyspark-catalog-ext spark-conf does)");
          }
          return driver.ask(message);
        },
        clock,
        timeoutMs);
  }

  @Override
  public boolean drivesRefresh() {
    return false;
  }

  @Override
  public RefreshResult fetch(RefreshSubject entry) throws Exception {
    String stale = entry.staleKeyId(); // S3 rejected these keys here: the driver refreshes if still current
    byte[] request = new PluginMessages.Request(entry.handle(), entry.context().identityJson(), stale,
        stale == null ? null : entry.staleCode(), entry.acceptedKeyId()).encode();
    long deadline = clock.nowMs() + timeoutMs;
    PluginMessages.Reply stillValid = null; // the driver's unexpired keys, the fallback
    while (true) {
      PluginMessages.Reply reply;
      try {
        reply = PluginMessages.Reply.decode(ask(request, deadline));
      } catch (Exception e) {
        if (stillValid != null) {
          return stillValid.toDegradedResult();
        }
        throw e;
      }
      if (reply.fresh) {
        return reply.toResult();
      }
      if (reply.rejected) {
        throw new CredentialsRejectedException(reply.error, null);
      }
      if (reply.hasValidKeys(clock.nowMs())) {
        stillValid = reply;
      }
      boolean failed = reply.error != null && !reply.refreshing;
      if (failed || clock.nowMs() >= deadline) {
        if (stillValid != null) {
          return stillValid.toDegradedResult(); // used until they expire; asked again after a backoff
        }
        throw new IllegalStateException(
            failed
                ? "the driver's refresh failed: " + reply.error
                : "the driver had no fresh credentials within " + timeoutMs + " ms (catalog-ext.refresh.timeout-ms)");
      }
      clock.sleepMs(POLL_MS);
    }
  }

  /**
   * One ask, bounded by what is left of timeout-ms. {@code PluginContext.ask} itself waits up to
   * spark.rpc.askTimeout (120 s) and takes no timeout; Spark's {@code askSync(msg, timeout)} is on
   * the private[spark] RpcEndpointRef, which the context hides. So the ask runs on a daemon thread
   * (BoundedCalls, its own permits) and this waits only until the deadline; an abandoned ask ends
   * with Spark's own timeout and holds one permit until then.
   */
  private Object ask(byte[] request, long deadline) throws Exception {
    long left = Math.max(1, deadline - clock.nowMs());
    return ShimMetrics.get().timeAsk(
        () -> BoundedCalls.call("the driver", () -> channel.ask(request), left, "the ask to the driver"));
  }
}
