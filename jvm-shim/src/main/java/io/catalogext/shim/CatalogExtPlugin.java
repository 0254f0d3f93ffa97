package io.catalogext.shim;

import io.catalogext.shim.events.ShimMetrics;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.refresh.ExecutorAsks;

import java.util.Collections;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * {@code spark.plugins=io.catalogext.shim.CatalogExtPlugin}: executors in other JVMs get a table's
 * credentials from the driver over Spark's own plugin RPC, so {@code spark.authenticate} and
 * {@code spark.network.crypto.enabled} protect them and no port or secret of ours exists.
 *
 * <p>Driver and executors also add {@link ShimMetrics} to Spark's metrics system, published as
 * {@code plugin.io.catalogext.shim.CatalogExtPlugin.*} in whatever sinks are configured.
 */
public final class CatalogExtPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new Driver();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Executor();
  }

  /** Answers executors from the driver's registry. Never waits on the catalog. */
  public static final class Driver implements DriverPlugin {
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
      return ExecutorAsks.answer(message);
    }
  }

  /** Connects this JVM's entries to the driver through the plugin context's RPC. */
  static final class Executor implements ExecutorPlugin {
    @Override
    public void init(PluginContext ctx, Map<String, String> extraConf) {
      // Process-wide: the S3 client factory that needs it is built by class name (no way to pass it).
      CredentialRegistry.get().connectToDriver(ctx::ask);
      ShimMetrics.get().registerInto(ctx.metricRegistry()); // Spark publishes them after init
    }

    @Override
    public void shutdown() {
      CredentialRegistry.get().connectToDriver(null);
    }
  }
}
