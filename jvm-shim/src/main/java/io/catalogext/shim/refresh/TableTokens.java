package io.catalogext.shim.refresh;

import io.catalogext.shim.errors.CredentialsRejectedException;

import java.util.Map;

/**
 * What a GCS or ADLS client of one table reads its tokens from: the table's entry and the slot of
 * one storage prefix (the twin of {@link TableCredentialsProvider} for S3). While the tokens are
 * fresh, a read is two volatile reads; due, missing or expiring ones take the entry's slow path
 * (single-flight refresh, on the driver or from it). A store's rejection goes back to the entry,
 * which refreshes once per wave and fails in one line when new tokens are rejected too.
 */
public final class TableTokens {
  private final TableEntry entry;
  private final CredentialSlot slot;

  private TableTokens(TableEntry entry, CredentialSlot slot) {
    this.entry = entry;
    this.slot = slot;
  }

  /**
   * The tokens of {@code prefix} ("": the table config's) of the table named by FileIO properties
   * {@code properties} (the shim's handle, which the catalog's hand-out put there), seeded with the
   * credential {@code config} the FileIO was given.
   */
  public static TableTokens of(Map<String, String> properties, String prefix, Map<String, String> config) {
    TableEntry entry = CredentialRegistry.get().forClient(properties);
    return new TableTokens(entry, entry.seed(prefix, config));
  }

  /** The snapshot to send a request with: current ones while fresh, else through the slow path. */
  public CredentialSnapshot current() {
    CredentialSnapshot current = slot.current;
    if (current != null && !current.due) {
      if (!slot.used) {
        slot.used = true;
      }
      return current;
    }
    return entry.resolveSnapshot(slot);
  }

  /** The current snapshot while it is fresh, else null (never waits: for callers that must not block). */
  public CredentialSnapshot currentIfFresh() {
    CredentialSnapshot current = slot.current;
    if (current != null && !current.due) {
      if (!slot.used) {
        slot.used = true;
      }
      return current;
    }
    return null;
  }

  /** The store accepted a request sent with {@code used}: once marked, never written again. */
  public void accepted(CredentialSnapshot used) {
    if (used != null && !used.accepted) {
      used.accepted = true;
      entry.accepted(used);
    }
  }

  /** The one-line error for a call whose last send the store rejected with {@code used}, {@code code}. */
  public CredentialsRejectedException lastSendRejected(CredentialSnapshot used, String code, Throwable rejection) {
    return entry.rejectedAgain(used, code, rejection);
  }

  /**
   * The store answered {@code code} ("the token is no longer valid") to a request sent with
   * {@code used}: see {@link TableEntry#onRejected}. True: send it again with {@link #current()}.
   */
  public boolean onRejected(CredentialSnapshot used, String code, Throwable rejection) {
    return entry.onRejected(slot, used, code, rejection);
  }

  /** A rejected request went through after waiting {@code waitMs} for new tokens. */
  public void retried(long waitMs) {
    entry.retried(waitMs);
  }

  /** The refresh policy's bound on how far a server's clock may be off ours. */
  public long maxClockSkewMs() {
    return entry.policy.maxClockSkewMs;
  }

  @Override
  public String toString() {
    return "TableTokens{" + entry.context.qualifiedName() + "}";
  }
}
