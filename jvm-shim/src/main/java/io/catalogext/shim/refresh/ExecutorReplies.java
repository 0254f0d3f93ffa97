package io.catalogext.shim.refresh;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * What the driver tells executors about one table: its keys if none is due, else (after starting a
 * background refresh) whether one is running, the last error, and the keys it still holds while
 * none of them has expired (a failing refresh must not cost executors keys that are still good).
 *
 * <p>The last fresh reply is kept encoded: executors ask for the same table many times per key
 * lifetime, and encoding the reply (JSON with an STS-sized session token) on every ask was most of
 * the driver plugin's CPU at scale (JFR of bench_plugin_scale, docs/benchmarks.md). It is reused
 * while every slot still holds the very snapshot it was built from and none is due.
 */
final class ExecutorReplies {
  private final CredentialSlots slots;
  private final RefreshFlight flight;
  private final Clock clock;
  /** Notes an executor's use of the table (it stays scheduled). */
  private final LongConsumer used;
  private volatile EncodedReply encoded;

  ExecutorReplies(CredentialSlots slots, RefreshFlight flight, Clock clock, LongConsumer used) {
    this.slots = slots;
    this.flight = flight;
    this.clock = clock;
    this.used = used;
  }

  private static final class EncodedReply {
    final String[] prefixes;
    final CredentialSnapshot[] snapshots;
    final long dueAtMs;
    final byte[] bytes;

    EncodedReply(String[] prefixes, CredentialSnapshot[] snapshots, byte[] bytes) {
      this.prefixes = prefixes;
      this.snapshots = snapshots;
      this.bytes = bytes;
      long due = Long.MAX_VALUE;
      for (CredentialSnapshot snap : snapshots) {
        due = snap == null ? Long.MIN_VALUE : Math.min(due, Math.min(snap.refreshAtMs, snap.expiresAtMs));
      }
      this.dueAtMs = due;
    }

    /** {@code slots} hold exactly the snapshots this reply was built from (by identity). */
    boolean current(Map<String, CredentialSlot> slots) {
      if (slots.size() != prefixes.length) {
        return false;
      }
      for (int i = 0; i < prefixes.length; i++) {
        CredentialSlot slot = slots.get(prefixes[i]);
        if (slot == null || slot.current != snapshots[i] || snapshots[i].rejected) {
          return false; // replaced, or S3 rejected these keys since the reply was encoded
        }
      }
      return true;
    }
  }

  /** {@link #reply()} encoded for the plugin RPC; a fresh one is reused while it stays fresh. */
  byte[] bytes() {
    long now = clock.nowMs();
    EncodedReply cached = encoded;
    Map<String, CredentialSlot> all = slots.all();
    if (cached != null && now < cached.dueAtMs && cached.current(all)) {
      used.accept(now);
      return cached.bytes;
    }
    String[] prefixes = all.keySet().toArray(new String[0]);
    CredentialSnapshot[] held = new CredentialSnapshot[prefixes.length];
    for (int i = 0; i < prefixes.length; i++) {
      CredentialSlot slot = all.get(prefixes[i]);
      held[i] = slot == null ? null : slot.current;
    }
    PluginMessages.Reply reply = reply();
    byte[] bytes = reply.encode();
    if (reply.fresh) {
      EncodedReply built = new EncodedReply(prefixes, held, bytes);
      if (built.current(all)) { // nothing changed while the reply was built: it is the one for these snapshots
        encoded = built;
      }
    }
    return bytes;
  }

  PluginMessages.Reply reply() {
    long now = clock.nowMs();
    long seen = flight.generation(); // before reading the keys: see RefreshFlight
    Map<String, Map<String, String>> configs = new LinkedHashMap<>();
    Map<String, CredentialSlot> all = slots.all();
    boolean fresh = !all.isEmpty();
    boolean valid = !all.isEmpty();
    for (Map.Entry<String, CredentialSlot> e : all.entrySet()) {
      CredentialSnapshot snap = e.getValue().current;
      if (snap == null || now >= snap.expiresAtMs || snap.rejected) {
        fresh = false;
        valid = false;
        break;
      }
      fresh &= now < snap.refreshAtMs;
      configs.put(e.getKey(), snap.toConfig());
    }
    used.accept(clock.nowMs()); // an executor uses the table: keep it scheduled
    if (fresh) {
      return new PluginMessages.Reply(configs, true, false, null, flight.lastStrategy());
    }
    flight.refreshAsync(seen);
    return new PluginMessages.Reply(valid ? configs : Map.of(), false, flight.inFlight(), flight.lastError(),
        flight.lastStrategy());
  }
}
