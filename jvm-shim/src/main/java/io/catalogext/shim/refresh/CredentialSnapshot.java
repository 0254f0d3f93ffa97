package io.catalogext.shim.refresh;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;

import java.util.Map;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;

/**
 * Immutable credentials with their timing: S3 keys, or a GCS or ADLS token ({@link StoreTokens}),
 * or both when one answer vends for several stores. Swapped atomically; read without locks.
 */
public final class CredentialSnapshot {
  /** S3 keys; null when the catalog vended none (a GCS or ADLS credential). */
  final AwsCredentials credentials;
  /** GCS or ADLS tokens; null when the catalog vended none (an S3 credential). */
  final StoreTokens tokens;
  public final long fetchedAtMs;
  /** Long.MAX_VALUE when the catalog gave no expiry. */
  final long expiresAtMs;
  /**
   * The expiry the catalog stated (Long.MAX_VALUE: none). {@link #expiresAtMs} is earlier when the
   * keys are scheduled by an assumed or a learned lifetime.
   */
  final long statedExpiresAtMs;
  /**
   * The expiry exactly as the answer stated it (Long.MAX_VALUE: none), before any clock shift: an
   * answer with these keys and this expiry is a catalog's cache; with another expiry, a renewal.
   */
  final long answeredExpiresAtMs;
  /** When a reader should start asking for fresh credentials. */
  public final long refreshAtMs;
  /** The store answered that these keys are no longer valid (S3 ExpiredToken, GCS 401, ...). */
  volatile boolean rejected;
  /** The store accepted a request signed with these keys (set once, by the rejection-retrying client). */
  volatile boolean accepted;
  /**
   * When readers leave the hot path: at refreshAtMs, or one ticker period before the hard margin
   * when that comes first (short keys), so no reader sends keys in their hard margin for want of
   * a tick. The slow path reads the clock.
   */
  final long dueAtMs;
  /**
   * Set once dueAtMs has passed (by the constructor or the JVM-wide ticker). The hot path reads
   * this flag instead of the clock: a volatile read is a plain load on x86, a clock call is not.
   */
  volatile boolean due;
  /** The JVM-wide ticker's period, which flags due snapshots. */
  static final long TICK_PERIOD_MS = 1000;

  CredentialSnapshot(
      AwsCredentials credentials, long fetchedAtMs, long expiresAtMs, RefreshPolicy policy, long nowMs) {
    this(credentials, null, fetchedAtMs, expiresAtMs, expiresAtMs, policy, nowMs);
  }

  CredentialSnapshot(AwsCredentials credentials, StoreTokens tokens, long fetchedAtMs, long expiresAtMs,
      long statedExpiresAtMs, RefreshPolicy policy, long nowMs) {
    this(credentials, tokens, fetchedAtMs, expiresAtMs, statedExpiresAtMs, statedExpiresAtMs, policy, nowMs);
  }

  private CredentialSnapshot(AwsCredentials credentials, StoreTokens tokens, long fetchedAtMs, long expiresAtMs,
      long statedExpiresAtMs, long answeredExpiresAtMs, RefreshPolicy policy, long nowMs) {
    this.answeredExpiresAtMs = answeredExpiresAtMs;
    this.credentials = credentials;
    this.tokens = tokens;
    this.fetchedAtMs = fetchedAtMs;
    this.expiresAtMs = expiresAtMs;
    this.statedExpiresAtMs = statedExpiresAtMs;
    this.refreshAtMs = policy.refreshAt(fetchedAtMs, expiresAtMs);
    this.dueAtMs = expiresAtMs == Long.MAX_VALUE ? refreshAtMs
        : Math.min(refreshAtMs, expiresAtMs - CredentialRules.hardMarginMs(expiresAtMs - fetchedAtMs) - TICK_PERIOD_MS);
    this.due = nowMs >= dueAtMs;
  }

  /** Whether Iceberg-style properties {@code config} hold storage keys or tokens of a store the shim refreshes. */
  public static boolean holdsKeys(Map<String, String> config) {
    return (config.containsKey(ShimKeys.ACCESS_KEY_ID) && config.containsKey(ShimKeys.SECRET_ACCESS_KEY))
        || StoreTokens.fromConfig(config) != null;
  }

  /**
   * Builds a snapshot from Iceberg-style properties (s3.*, gcs.oauth2.*, adls.sas-token*), or null
   * when they hold no keys.
   */
  static CredentialSnapshot fromConfig(Map<String, String> config, long nowMs, RefreshPolicy policy) {
    String accessKey = config.get(ShimKeys.ACCESS_KEY_ID);
    String secretKey = config.get(ShimKeys.SECRET_ACCESS_KEY);
    AwsCredentials creds = null;
    if (accessKey != null && secretKey != null) {
      String sessionToken = config.get(ShimKeys.SESSION_TOKEN);
      creds = sessionToken == null
          ? AwsBasicCredentials.create(accessKey, secretKey)
          : AwsSessionCredentials.create(accessKey, secretKey, sessionToken);
    }
    StoreTokens tokens = StoreTokens.fromConfig(config);
    if (creds == null && tokens == null) {
      return null;
    }
    String fetched = config.get(ShimKeys.FETCHED_AT_MS);
    long fetchedAt = fetched == null ? nowMs : Long.parseLong(fetched.trim());
    String expires = statedExpiry(config);
    long expiresAt;
    long stated = Long.MAX_VALUE;
    if (expires != null) {
      expiresAt = Long.parseLong(expires.trim());
      stated = expiresAt;
    } else if (tokens != null && tokens.statedExpiresAtMs != Long.MAX_VALUE) {
      expiresAt = tokens.statedExpiresAtMs;
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
    return new CredentialSnapshot(creds, tokens, fetchedAt, expiresAt, stated, policy, nowMs);
  }

  /**
   * These keys scheduled by {@code learnedLifetimeMs} when that ends before their own expiry (S3
   * rejected the catalog's keys earlier than stated before): renewed before the next rejection.
   */
  CredentialSnapshot withLearnedLifetime(long learnedLifetimeMs, RefreshPolicy policy, long nowMs) {
    if (learnedLifetimeMs <= 0 || fetchedAtMs + learnedLifetimeMs >= expiresAtMs) {
      return this;
    }
    return new CredentialSnapshot(credentials, tokens, fetchedAtMs, fetchedAtMs + learnedLifetimeMs, statedExpiresAtMs,
        answeredExpiresAtMs, policy, nowMs);
  }

  /** Shifted from the server's clock to this JVM's ({@code skewMs} = server minus local). */
  CredentialSnapshot onLocalClock(long skewMs, RefreshPolicy policy, long nowMs) {
    if (skewMs == 0 || expiresAtMs == Long.MAX_VALUE) {
      return this;
    }
    long stated = statedExpiresAtMs == Long.MAX_VALUE ? Long.MAX_VALUE : statedExpiresAtMs - skewMs;
    return new CredentialSnapshot(credentials, tokens, fetchedAtMs, expiresAtMs - skewMs, stated, answeredExpiresAtMs,
        policy, nowMs);
  }

  /**
   * Whether s3.* properties {@code config} carry these very keys with the very expiry they came with
   * (a catalog's credential cache). The same keys with another expiry are a renewal of their lease
   * (static keys a user's source hands out again with a later expiry).
   */
  boolean sameKeys(Map<String, String> config) {
    if (credentials == null) {
      return false;  // GCS/ADLS tokens: every answer counts as a renewal
    }
    String token = credentials instanceof AwsSessionCredentials ? ((AwsSessionCredentials) credentials).sessionToken() : null;
    String expires = statedExpiry(config);
    long answered;
    try {
      answered = expires == null ? Long.MAX_VALUE : Long.parseLong(expires.trim());
    } catch (NumberFormatException e) {
      return false;  // not ours to judge here: installing the answer reports it
    }
    return credentials.accessKeyId().equals(config.get(ShimKeys.ACCESS_KEY_ID))
        && credentials.secretAccessKey().equals(config.get(ShimKeys.SECRET_ACCESS_KEY))
        && java.util.Objects.equals(token, config.get(ShimKeys.SESSION_TOKEN))
        && answered == answeredExpiresAtMs;
  }

  /** The expiry an answer states for its keys (the driver's copy first, then Iceberg's key), or null. */
  private static String statedExpiry(Map<String, String> config) {
    return config.getOrDefault(ShimKeys.CREDENTIAL_EXPIRES_AT_MS, config.get(ShimKeys.EXPIRES_AT_MS));
  }

  /** Names these keys, not secret: the S3 access key id, else the tokens' fingerprint. */
  String accessKeyId() {
    return credentials != null ? credentials.accessKeyId() : tokens.fingerprint;
  }

  /** The store these keys are for, as messages name it. */
  String storeName() {
    return credentials != null ? "S3" : tokens.store.label;
  }

  /** The GCS or ADLS tokens (null for S3 keys): what a store client sends. */
  public StoreTokens tokens() {
    return tokens;
  }

  /** The expiry the keys are renewed by (epoch ms; Long.MAX_VALUE: none). */
  public long expiresAtMs() {
    return expiresAtMs;
  }

  /** The lifetime the catalog stated, or -1 when it stated none. */
  long statedLifetimeMs() {
    return statedExpiresAtMs == Long.MAX_VALUE ? -1 : statedExpiresAtMs - fetchedAtMs;
  }

  /**
   * Back to Iceberg-style properties (plus when they were fetched), to hand to another entry. The
   * expiry is always {@code s3.session-token-expires-at-ms} here, whatever the store: the one key
   * {@link #fromConfig} reads first, so an executor schedules by the driver's expiry.
   */
  Map<String, String> toConfig() {
    Map<String, String> config = new java.util.HashMap<>();
    if (credentials != null) {
      config.put(ShimKeys.ACCESS_KEY_ID, credentials.accessKeyId());
      config.put(ShimKeys.SECRET_ACCESS_KEY, credentials.secretAccessKey());
      if (credentials instanceof AwsSessionCredentials) {
        config.put(ShimKeys.SESSION_TOKEN, ((AwsSessionCredentials) credentials).sessionToken());
      }
    }
    if (tokens != null) {
      config.putAll(tokens.toConfig(statedExpiresAtMs));
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

  /** Whether a reader at {@code nowMs} must wait for new keys instead of sending with these. */
  boolean inHardMargin(long nowMs) {
    return expiresAtMs != Long.MAX_VALUE && nowMs >= expiresAtMs - hardMarginMs();
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
