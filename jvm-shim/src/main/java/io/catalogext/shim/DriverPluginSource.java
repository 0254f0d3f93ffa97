package io.catalogext.shim;

/**
 * Refresh source of entries in executor JVMs: ask the driver through Spark's plugin RPC
 * ({@link CatalogExtPlugin}). The driver answers from memory at once; while it is refreshing, this
 * asks again until {@code timeoutMs}. A failed driver refresh is an error here too, never success.
 */
final class DriverPluginSource implements EntryRefresher {
  /** Between two asks while the driver refreshes: short next to any credential lifetime. */
  static final long POLL_MS = 200L;

  /** One ask of the driver; {@code PluginContext::ask} in executors (bounded by spark.rpc.askTimeout). */
  interface Asker {
    Object ask(Object message) throws Exception;
  }

  private final Asker asker;
  private final TableEntry.Clock clock;
  private final long timeoutMs;

  DriverPluginSource(Asker asker, TableEntry.Clock clock, long timeoutMs) {
    this.asker = asker;
    this.clock = clock;
    this.timeoutMs = timeoutMs;
  }

  /** The source for this executor JVM, using the plugin context the executor plugin kept. */
  static DriverPluginSource forExecutor(TableEntry.Clock clock, long timeoutMs) {
    return new DriverPluginSource(
        message -> {
          org.apache.spark.api.plugin.PluginContext ctx = CatalogExtPlugin.executorContext();
          if (ctx == null) {
            throw new IllegalStateException(
                "the catalog-ext Spark plugin is not running in this executor: set"
                    + " spark.plugins=io.catalogext.shim.CatalogExtPlugin (pyspark-catalog-ext spark-conf does)");
          }
          return ctx.ask(message);
        },
        clock,
        timeoutMs);
  }

  @Override
  public RefreshResult fetch(TableEntry entry) throws Exception {
    byte[] request = new PluginMessages.Request(entry.handle, entry.context.identityJson()).encode();
    long deadline = clock.nowMs() + timeoutMs;
    while (true) {
      PluginMessages.Reply reply = PluginMessages.Reply.decode(asker.ask(request));
      if (reply.fresh) {
        return reply.toResult();
      }
      if (reply.error != null && !reply.refreshing) {
        throw new IllegalStateException("the driver's refresh failed: " + reply.error);
      }
      if (clock.nowMs() >= deadline) {
        throw new IllegalStateException(
            "the driver had no fresh credentials within " + timeoutMs + " ms (catalog-ext.refresh.timeout-ms)");
      }
      Thread.sleep(POLL_MS);
    }
  }
}
