package io.catalogext.shim.refresh;

import io.catalogext.shim.config.ShimKeys;

import java.util.Map;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;

/** Immutable credentials with their timing. Swapped atomically; read without locks. */
public final class CredentialSnapshot {
  final AwsCredentials credentials;
  public final long fetchedAtMs;
  /** Long.MAX_VALUE when the catalog gave no expiry. */
  final long expiresAtMs;
  /** When a reader should start asking for fresh credentials. */
  public final long refreshAtMs;
  /**
   * Set once refreshAtMs has passed (by the constructor or the JVM-wide ticker). The hot path reads
   * this flag instead of the clock: a volatile read is a plain load on x86, a clock call is not.
   */
  volatile boolean due;

  CredentialSnapshot(
      AwsCredentials credentials, long fetchedAtMs, long expiresAtMs, RefreshPolicy policy, long nowMs) {
    this.credentials = credentials;
    this.fetchedAtMs = fetchedAtMs;
    this.expiresAtMs = expiresAtMs;
    this.refreshAtMs = policy.refreshAt(fetchedAtMs, expiresAtMs);
    this.due = nowMs >= refreshAtMs;
  }

  /** Builds a snapshot from Iceberg-style s3.* properties, or null when they hold no keys. */
  static CredentialSnapshot fromConfig(Map<String, String> config, long nowMs, RefreshPolicy policy) {
    String accessKey = config.get(ShimKeys.ACCESS_KEY_ID);
    String secretKey = config.get(ShimKeys.SECRET_ACCESS_KEY);
    if (accessKey == null || secretKey == null) {
      return null;
    }
    String sessionToken = config.get(ShimKeys.SESSION_TOKEN);
    AwsCredentials creds =
        sessionToken == null
            ? AwsBasicCredentials.create(accessKey, secretKey)
            : AwsSessionCredentials.create(accessKey, secretKey, sessionToken);
    String fetched = config.get(ShimKeys.FETCHED_AT_MS);
    long fetchedAt = fetched == null ? nowMs : Long.parseLong(fetched.trim());
    String expires = config.getOrDefault(ShimKeys.CREDENTIAL_EXPIRES_AT_MS, config.get(ShimKeys.EXPIRES_AT_MS));
    long expiresAt;
    if (expires != null) {
      expiresAt = Long.parseLong(expires.trim());
    } else if (policy != null && policy.assumedLifetimeMs > 0) {
      // No expiry given (Unity 0.6, unitycatalog#1885, omits it for keys that do expire): assume one.
      expiresAt = fetchedAt + policy.assumedLifetimeMs;
    } else {
      expiresAt = Long.MAX_VALUE;
    }
    return new CredentialSnapshot(creds, fetchedAt, expiresAt, policy, nowMs);
  }

  /** Back to Iceberg-style s3.* properties (plus when they were fetched), to hand to another entry. */
  Map<String, String> toConfig() {
    Map<String, String> config = new java.util.HashMap<>();
    config.put(ShimKeys.ACCESS_KEY_ID, credentials.accessKeyId());
    config.put(ShimKeys.SECRET_ACCESS_KEY, credentials.secretAccessKey());
    if (credentials instanceof AwsSessionCredentials) {
      config.put(ShimKeys.SESSION_TOKEN, ((AwsSessionCredentials) credentials).sessionToken());
    }
    if (expiresAtMs != Long.MAX_VALUE) {
      config.put(ShimKeys.EXPIRES_AT_MS, String.valueOf(expiresAtMs));
    }
    config.put(ShimKeys.FETCHED_AT_MS, String.valueOf(fetchedAtMs));
    return config;
  }

  long lifetimeMs() {
    return expiresAtMs == Long.MAX_VALUE ? -1 : expiresAtMs - fetchedAtMs;
  }

  @Override
  public String toString() {
    // Never the keys: only timing.
    return "CredentialSnapshot{expiresAtMs=" + expiresAtMs + ", refreshAtMs=" + refreshAtMs + "}";
  }
}
