package io.catalogext.shim.refresh;

import java.util.function.BiFunction;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver plugin's answers to executors' asks: from memory, never waiting on the catalog. A due
 * entry starts its (single-flight) background refresh and the executor asks again.
 */
public final class ExecutorAnswers {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorAnswers.class);
  /** The live entry of a handle, or null. */
  private final Function<String, TableEntry> live;
  /** The entry of an evicted handle tracked again, when it was issued for that table; else null. */
  private final BiFunction<String, TableContext, TableEntry> retrack;

  ExecutorAnswers(Function<String, TableEntry> live, BiFunction<String, TableContext, TableEntry> retrack) {
    this.live = live;
    this.retrack = retrack;
  }

  public PluginMessages.Reply answer(PluginMessages.Request request) {
    TableEntry entry = entryFor(request);
    if (entry == null) {
      return PluginMessages.Reply.failed("unknown table handle");
    }
    String limited = staleReport(entry, request);
    return limited != null ? PluginMessages.Reply.rejected(limited) : entry.executorReply();
  }

  /** {@link #answer}, encoded: what the plugin RPC sends (a fresh reply reused, see TableEntry). */
  public byte[] answerBytes(PluginMessages.Request request) {
    TableEntry entry = entryFor(request);
    if (entry == null) {
      return PluginMessages.Reply.failed("unknown table handle").encode();
    }
    String limited = staleReport(entry, request);
    return limited != null ? PluginMessages.Reply.rejected(limited).encode() : entry.executorReplyBytes();
  }

  /**
   * What an ask reports: the key a store last accepted in the executor, and the key it rejected (see
   * {@link TableEntry#onExecutorRejection}). Null, or the caller's one line.
   */
  private static String staleReport(TableEntry entry, PluginMessages.Request request) {
    if (request.staleKeyId == null) {
      entry.onExecutorAccepted(request.acceptedKeyId);
      return null;
    }
    return entry.onExecutorRejection(request.staleKeyId, request.staleCode, request.acceptedKeyId);
  }

  /**
   * The driver's entry for an executor's ask: the live entry of the handle, or, after an idle
   * eviction, the table tracked again when the driver issued the handle for the table the
   * executor names. Null otherwise: an executor naming a table gets nothing without its handle.
   */
  private TableEntry entryFor(PluginMessages.Request request) {
    TableEntry entry = live.apply(request.handle);
    if (entry == null && request.identityJson != null) {
      TableContext named = TableContext.fromIdentity(request.identityJson);
      entry = retrack.apply(request.handle, named);
      if (entry == null) {
        LOG.warn("catalog-ext: refused an executor's ask for {}: not a handle this driver issued for that table"
            + " in a live catalog session", named.shownName());
      }
    }
    return entry;
  }
}
