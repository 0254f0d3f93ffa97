package io.catalogext.shim.refresh;

import io.catalogext.shim.errors.CredentialsRejectedException;

import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;

/**
 * The provider S3FileIO's clients use: one table's credentials for one storage prefix. While the
 * credentials are fresh, a call is two volatile reads: no clock, no lock, no map, no Python.
 */
public final class TableCredentialsProvider implements AwsCredentialsProvider {
  private final TableEntry entry;
  private final CredentialSlot slot;

  public TableCredentialsProvider(TableEntry entry, CredentialSlot slot) {
    this.entry = entry;
    this.slot = slot;
  }

  @Override
  public AwsCredentials resolveCredentials() {
    CredentialSnapshot current = slot.current;
    if (current != null && !current.due) {
      if (!slot.used) {
        slot.used = true;
      }
      return current.credentials;
    }
    return entry.resolveSlow(slot);
  }

  /** The keys a call about to be signed gets (the SDK resolves them right after). */
  CredentialSnapshot current() {
    return slot.current;
  }

  /** S3 accepted a call signed with {@code used}: once marked, never written again. */
  void accepted(CredentialSnapshot used) {
    if (used != null && !used.accepted) {
      used.accepted = true;
      entry.accepted(used);
    }
  }

  /** The one-line error for a call whose last send the store rejected with {@code used}, {@code code}. */
  public CredentialsRejectedException lastSendRejected(CredentialSnapshot used, String code, Throwable rejection) {
    return entry.rejectedAgain(used, code, rejection);
  }

  /** See {@link TableEntry#onRejected}. */
  boolean onRejected(CredentialSnapshot used, String code, Throwable rejection) {
    return entry.onRejected(slot, used, code, rejection);
  }

  /** A rejected call went through after waiting {@code waitMs} for new keys. */
  void retried(long waitMs) {
    entry.retried(waitMs);
  }

  TableEntry entry() {
    return entry;
  }

  @Override
  public String toString() {
    return "TableCredentialsProvider{" + entry.context.qualifiedName() + "}";
  }
}
