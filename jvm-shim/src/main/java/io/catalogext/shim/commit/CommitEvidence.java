package io.catalogext.shim.commit;

import io.catalogext.shim.commit.CommitDecision.Landed;
import io.catalogext.shim.util.Json;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/** What a catalog's commit guard did, for status and tests: counts and the last event lines. No secrets. */
final class CommitEvidence {
  /** Event lines kept: the newest. */
  static final int EVENTS = 200;

  final AtomicLong mutations = new AtomicLong();
  final AtomicLong keyed = new AtomicLong();
  /** Mutations whose key was Iceberg's own (1.11+), repeated instead of replaced. */
  final AtomicLong reusedKeys = new AtomicLong();
  final AtomicLong retries = new AtomicLong();
  private final AtomicLong landed = new AtomicLong();
  private final AtomicLong notLanded = new AtomicLong();
  private final AtomicLong pending = new AtomicLong();
  private final AtomicLong unknown = new AtomicLong();
  private final Deque<String> events = new ArrayDeque<>();

  void event(String text) {
    synchronized (events) {
      if (events.size() >= EVENTS) {
        events.removeFirst();
      }
      events.addLast(text);
    }
  }

  /** Counts one reconciliation by what it showed. */
  void reconciled(Landed result) {
    switch (result) {
      case YES:
        landed.incrementAndGet();
        break;
      case NO:
        notLanded.incrementAndGet();
        break;
      case PENDING:
        pending.incrementAndGet();
        break;
      default:
        unknown.incrementAndGet();
    }
  }

  ObjectNode toJson(String lifetimeText, boolean idempotency) {
    ObjectNode n = Json.object();
    n.put("idempotency_key_lifetime", lifetimeText);
    n.put("idempotency", idempotency);
    n.put("mutations", mutations.get());
    n.put("keyed", keyed.get());
    n.put("reused_iceberg_keys", reusedKeys.get());
    n.put("retries", retries.get());
    n.put("reconciled_landed", landed.get());
    n.put("reconciled_not_landed", notLanded.get());
    n.put("reconciled_pending", pending.get());
    n.put("reconciled_unknown", unknown.get());
    synchronized (events) {
      events.forEach(n.putArray("events")::add);
    }
    return n;
  }

  void forget() {
    for (AtomicLong count : new AtomicLong[] {mutations, keyed, reusedKeys, retries, landed, notLanded, pending, unknown}) {
      count.set(0);
    }
    synchronized (events) {
      events.clear();
    }
  }
}
