package io.catalogext.shim.session;

import io.catalogext.shim.events.EventLog;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one catalog session learned about its catalog's credentials the hard way: how long its keys
 * really live (the store rejected them earlier than stated) and how far the servers' clocks are
 * from ours. Keys the session's tables fetch from then on are scheduled by the learned lifetime and
 * on the server's clock. One per {@link CatalogSession}, never per catalog name: two Spark Connect
 * sessions whose catalogs are both called {@code lake} may reach different servers, and one user's
 * fault must not shorten another's renewals. It goes with its session (no registry of its own).
 */
public final class ServerClocks {
  private static final Logger LOG = LoggerFactory.getLogger(ServerClocks.class);

  private final String catalog;
  /** The shortest lifetime observed for the catalog's keys, or -1. */
  private final AtomicLong learnedLifetimeMs = new AtomicLong(-1);
  /** Server minus local clock, 0 while within the bound. */
  private volatile long skewMs;

  /** The clocks of a session of catalog {@code catalog} (the name only labels events and logs). */
  public ServerClocks(String catalog) {
    this.catalog = catalog;
  }

  /** The shortest lifetime observed for the catalog's keys, or -1. */
  public long learnedLifetimeMs() {
    return learnedLifetimeMs.get();
  }

  /** Records keys rejected {@code ageMs} after their fetch; returns the learned lifetime. */
  public long learnLifetime(long ageMs) {
    long age = Math.max(1, ageMs);
    return learnedLifetimeMs.accumulateAndGet(age, (held, seen) -> held < 0 ? seen : Math.min(held, seen));
  }

  /** Server minus local clock for the catalog's servers, 0 while within the bound. */
  public long skewMs() {
    return skewMs;
  }

  /**
   * A server's Date header ({@code serverMs}) seen at local {@code localMs}: past {@code boundMs}
   * the catalog's expiries are read on the server's clock (reported once per new skew); within it,
   * a skew noted before is dropped. Date headers have 1 s resolution, hence the bound.
   */
  public synchronized void observeDate(String source, long serverMs, long localMs, long boundMs) {
    long skew = serverMs - localMs;
    if (Math.abs(skew) <= boundMs) {
      skewMs = 0;
      return;
    }
    long before = skewMs;
    skewMs = skew;
    if (before == 0 || Math.abs(before - skew) > boundMs) {
      ObjectNode event = EventLog.fields();
      event.put("catalog", catalog);
      event.put("server", source); // not "source": every event's own field saying which runtime emitted it
      event.put("skew_ms", skew);
      EventLog.emit("clock.skew", event);
      LOG.warn("catalog-ext: the clock of {} (catalog {}) is {} ms {} this machine's: expiries are scheduled by"
          + " the server's clock", source, catalog, Math.abs(skew), skew > 0 ? "ahead of" : "behind");
    }
  }
}
