package io.catalogext.shim;

import io.catalogext.shim.events.ShimMetrics;
import io.catalogext.shim.refresh.PluginMessages;
import io.catalogext.shim.refresh.CredentialRegistry;

import java.util.Collections;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code spark.plugins=io.catalogext.shim.CatalogExtPlugin}: executors in other JVMs get a table's
 * credentials from the driver over Spark's own plugin RPC, so {@code spark.authenticate} and
 * {@code spark.network.crypto.enabled} protect them and no port or secret of ours exists.
 *
 * <p>Driver and executors also add {@link ShimMetrics} to Spark's metrics system, published as
 * {@code plugin.io.catalogext.shim.CatalogExtPlugin.*} in whatever sinks are configured.
 */
public final class CatalogExtPlugin implements SparkPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(CatalogExtPlugin.class);

  /** Set in executor JVMs by {@link Executor#init}; how executor-side entries reach the driver. */
  // Process-wide: the S3 client factory that needs it is built by class name (no way to pass it).
  private static volatile PluginContext executorContext;

  @Override
  public DriverPlugin driverPlugin() {
    return new Driver();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Executor();
  }

  public static PluginContext executorContext() {
    return executorContext;
  }

  /** Answers executors from the driver's registry. Never waits on the catalog. */
  public static final class Driver implements DriverPlugin {
    // Process-wide: Spark builds this plugin by class name; Python reads the counts via the registry.
    public static final AtomicLong SERVED = new AtomicLong();
    public static final AtomicLong REFUSED = new AtomicLong();

    @Override
    public Map<String, String> init(SparkContext sc, PluginContext pluginContext) {
      CredentialRegistry.get().markDriver();
      return Collections.emptyMap();
    }

    @Override
    public void registerMetrics(String appId, PluginContext pluginContext) {
      ShimMetrics.get().registerInto(pluginContext.metricRegistry());
    }

    @Override
    public Object receive(Object message) {
      PluginMessages.Request request;
      try {
        request = PluginMessages.Request.decode(message);
      } catch (IllegalArgumentException e) {
        REFUSED.incrementAndGet();
        ShimMetrics.get().askServed(false);
        LOG.warn("catalog-ext: ignored a plugin message: {}", e.getMessage());
        return PluginMessages.Reply.failed("malformed request: " + e.getMessage()).encode();
      }
      SERVED.incrementAndGet();
      ShimMetrics.get().askServed(true);
      return CredentialRegistry.get().answerExecutorBytes(request);
    }
  }

  /** Keeps the plugin context so this JVM's entries can ask the driver. */
  static final class Executor implements ExecutorPlugin {
    @Override
    public void init(PluginContext ctx, Map<String, String> extraConf) {
      executorContext = ctx;
      ShimMetrics.get().registerInto(ctx.metricRegistry()); // Spark publishes them after init
    }

    @Override
    public void shutdown() {
      executorContext = null;
    }
  }
}
