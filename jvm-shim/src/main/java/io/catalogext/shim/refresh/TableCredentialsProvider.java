package io.catalogext.shim.refresh;

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

  @Override
  public String toString() {
    return "TableCredentialsProvider{" + entry.context.qualifiedName() + "}";
  }
}
