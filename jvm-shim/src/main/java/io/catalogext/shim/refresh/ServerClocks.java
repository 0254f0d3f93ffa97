package io.catalogext.shim.refresh;

import io.catalogext.shim.events.EventLog;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What this JVM learned about each catalog's credentials the hard way: how long its keys really
 * live (S3 rejected them earlier than stated) and how far the servers' clocks are from ours. Keys
 * fetched from then on are scheduled by the learned lifetime and on the server's clock.
 */
final class ServerClocks {
  private static final Logger LOG = LoggerFactory.getLogger(ServerClocks.class);
  // Process-wide, like the registry: the S3 clients Iceberg builds by class name report into it.
  static final ServerClocks GLOBAL = new ServerClocks();

  private final Map<String, Long> learnedLifetimeMs = new ConcurrentHashMap<>();
  private final Map<String, Long> skewMs = new ConcurrentHashMap<>();

  /** The shortest lifetime observed for the catalog's keys, or -1. */
  long learnedLifetimeMs(String catalog) {
    return learnedLifetimeMs.getOrDefault(catalog, -1L);
  }

  /** Records keys rejected {@code ageMs} after their fetch; returns the catalog's learned lifetime. */
  long learnLifetime(String catalog, long ageMs) {
    return learnedLifetimeMs.merge(catalog, Math.max(1, ageMs), Math::min);
  }

  /** Server minus local clock for the catalog's servers, 0 while within the bound. */
  long skewMs(String catalog) {
    return skewMs.getOrDefault(catalog, 0L);
  }

  /**
   * A server's Date header ({@code serverMs}) seen at local {@code localMs}: past {@code boundMs}
   * the catalog's expiries are read on the server's clock (reported once per new skew); within it,
   * a skew noted before is dropped. Date headers have 1 s resolution, hence the bound.
   */
  void observeDate(String catalog, String source, long serverMs, long localMs, long boundMs) {
    long skew = serverMs - localMs;
    if (Math.abs(skew) <= boundMs) {
      skewMs.remove(catalog);
      return;
    }
    Long before = skewMs.put(catalog, skew);
    if (before == null || Math.abs(before - skew) > boundMs) {
      ObjectNode event = EventLog.fields();
      event.put("catalog", catalog);
      event.put("source", source);
      event.put("skew_ms", skew);
      EventLog.emit("clock.skew", event);
      LOG.warn("catalog-ext: the clock of {} (catalog {}) is {} ms {} this machine's: expiries are scheduled by"
          + " the server's clock", source, catalog, Math.abs(skew), skew > 0 ? "ahead of" : "behind");
    }
  }

  /** Tests: forget everything. */
  void clear() {
    learnedLifetimeMs.clear();
    skewMs.clear();
  }
}
