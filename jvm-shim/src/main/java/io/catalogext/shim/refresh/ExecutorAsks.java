package io.catalogext.shim.refresh;

import io.catalogext.shim.events.ShimMetrics;
import io.catalogext.shim.util.Json;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's side of the executors' asks for a table's keys (the driver plugin hands each
 * message here): decoded, counted, answered from the registry's memory, never waiting on the catalog.
 */
public final class ExecutorAsks {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorAsks.class);
  // Process-wide: Spark builds the plugin by class name; Python reads the counts through PythonApi.
  private static final AtomicLong SERVED = new AtomicLong();
  private static final AtomicLong REFUSED = new AtomicLong();

  private ExecutorAsks() {}

  /** The encoded answer to one executor's message. */
  public static byte[] answer(Object message) {
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
    return CredentialRegistry.get().executorAnswers().answerBytes(request);
  }

  /** Executor asks answered in this JVM. */
  public static long served() {
    return SERVED.get();
  }

  /** JSON {"served", "refused"}: executor asks answered or turned away (malformed) in this JVM. */
  public static String stats() {
    ObjectNode node = Json.object();
    node.put("served", SERVED.get());
    node.put("refused", REFUSED.get());
    return Json.write(node);
  }
}
