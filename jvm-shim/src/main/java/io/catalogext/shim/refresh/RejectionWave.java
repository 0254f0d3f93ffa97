package io.catalogext.shim.refresh;

/**
 * A rejection that started a refresh: the keys the store rejected and how long they had lived. Keys
 * fetched after them that live no longer, before a store accepted any such, cannot be helped by
 * refreshing (credential-rules.json `refreshing-cannot-help`).
 *
 * <p>Python twin: {@code pyspark_catalog_ext.refresh.entry.RejectionWave}.
 */
final class RejectionWave {
  final CredentialSnapshot rejected;
  final long keysLivedMs;

  RejectionWave(CredentialSnapshot rejected, long keysLivedMs) {
    this.rejected = rejected;
    this.keysLivedMs = keysLivedMs;
  }

  /**
   * Whether {@code keys} are other keys fetched since the rejected ones (the same keys under another
   * prefix, or handed back by a catalog's cache, are not).
   */
  boolean isOlderThan(CredentialSnapshot keys) {
    return keys.fetchedAtMs >= rejected.fetchedAtMs && !keys.accessKeyId().equals(rejected.accessKeyId());
  }
}
