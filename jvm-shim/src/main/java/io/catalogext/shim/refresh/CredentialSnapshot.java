package io.catalogext.shim.refresh;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.config.RefreshPolicy;
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
  /**
   * The expiry the catalog stated (Long.MAX_VALUE: none). {@link #expiresAtMs} is earlier when the
   * keys are scheduled by an assumed or a learned lifetime.
   */
  final long statedExpiresAtMs;
  /** When a reader should start asking for fresh credentials. */
  public final long refreshAtMs;
  /** S3 answered that these keys are no longer valid (ExpiredToken, InvalidAccessKeyId, ...). */
  volatile boolean rejected;
  /** S3 accepted a request signed with these keys (set once, by the rejection-retrying client). */
  volatile boolean accepted;
  /** Installed by a refresh that S3 rejecting the previous keys started. */
  volatile boolean reactive;
  /**
   * Set once refreshAtMs has passed (by the constructor or the JVM-wide ticker). The hot path reads
   * this flag instead of the clock: a volatile read is a plain load on x86, a clock call is not.
   */
  volatile boolean due;

  CredentialSnapshot(
      AwsCredentials credentials, long fetchedAtMs, long expiresAtMs, RefreshPolicy policy, long nowMs) {
    this(credentials, fetchedAtMs, expiresAtMs, expiresAtMs, policy, nowMs);
  }

  CredentialSnapshot(AwsCredentials credentials, long fetchedAtMs, long expiresAtMs, long statedExpiresAtMs,
      RefreshPolicy policy, long nowMs) {
    this.credentials = credentials;
    this.fetchedAtMs = fetchedAtMs;
    this.expiresAtMs = expiresAtMs;
    this.statedExpiresAtMs = statedExpiresAtMs;
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
    long stated = Long.MAX_VALUE;
    if (expires != null) {
      expiresAt = Long.parseLong(expires.trim());
      stated = expiresAt;
    } else if (policy != null && policy.assumedLifetimeMs > 0) {
      // No expiry given (Unity 0.6, unitycatalog#1885, omits it for keys that do expire): assume one.
      expiresAt = fetchedAt + policy.assumedLifetimeMs;
    } else {
      expiresAt = Long.MAX_VALUE;
    }
    String statedByDriver = config.get(ShimKeys.STATED_EXPIRES_AT_MS);
    if (statedByDriver != null) {
      long parsed = Long.parseLong(statedByDriver.trim());
      stated = parsed < 0 ? Long.MAX_VALUE : parsed;
    }
    return new CredentialSnapshot(creds, fetchedAt, expiresAt, stated, policy, nowMs);
  }

  /**
   * These keys scheduled by {@code learnedLifetimeMs} when that ends before their own expiry (S3
   * rejected the catalog's keys earlier than stated before): renewed before the next rejection.
   */
  CredentialSnapshot withLearnedLifetime(long learnedLifetimeMs, RefreshPolicy policy, long nowMs) {
    if (learnedLifetimeMs <= 0 || fetchedAtMs + learnedLifetimeMs >= expiresAtMs) {
      return this;
    }
    return new CredentialSnapshot(
        credentials, fetchedAtMs, fetchedAtMs + learnedLifetimeMs, statedExpiresAtMs, policy, nowMs);
  }

  /** Shifted from the server's clock to this JVM's ({@code skewMs} = server minus local). */
  CredentialSnapshot onLocalClock(long skewMs, RefreshPolicy policy, long nowMs) {
    if (skewMs == 0 || expiresAtMs == Long.MAX_VALUE) {
      return this;
    }
    long stated = statedExpiresAtMs == Long.MAX_VALUE ? Long.MAX_VALUE : statedExpiresAtMs - skewMs;
    return new CredentialSnapshot(credentials, fetchedAtMs, expiresAtMs - skewMs, stated, policy, nowMs);
  }

  String accessKeyId() {
    return credentials.accessKeyId();
  }

  /** The lifetime the catalog stated, or -1 when it stated none. */
  long statedLifetimeMs() {
    return statedExpiresAtMs == Long.MAX_VALUE ? -1 : statedExpiresAtMs - fetchedAtMs;
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
    if (statedExpiresAtMs != expiresAtMs) {
      config.put(ShimKeys.STATED_EXPIRES_AT_MS, String.valueOf(statedExpiresAtMs == Long.MAX_VALUE ? -1 : statedExpiresAtMs));
    }
    return config;
  }

  long lifetimeMs() {
    return expiresAtMs == Long.MAX_VALUE ? -1 : expiresAtMs - fetchedAtMs;
  }

  /** Below this much validity a reader waits for new keys (the shared rule, {@link CredentialRules}). */
  long hardMarginMs() {
    return CredentialRules.hardMarginMs(lifetimeMs());
  }

  @Override
  public String toString() {
    // Never the keys: only timing.
    return "CredentialSnapshot{expiresAtMs=" + expiresAtMs + ", refreshAtMs=" + refreshAtMs + "}";
  }
}
