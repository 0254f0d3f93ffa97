package io.catalogext.shim.refresh;

/**
 * How an executor JVM asks the driver for a table's keys: Spark's plugin RPC
 * ({@code PluginContext.ask}), which the executor plugin connects ({@link CredentialRegistry#connectToDriver}).
 * Messages are {@link PluginMessages} encoded as bytes.
 */
public interface DriverChannel {
  Object ask(Object message) throws Exception;
}
