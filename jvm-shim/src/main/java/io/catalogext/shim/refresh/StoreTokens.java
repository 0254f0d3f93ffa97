package io.catalogext.shim.refresh;

import io.catalogext.shim.config.ShimKeys;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * The bearer secrets a GCS or ADLS credential carries, in Iceberg's property names: a GCS OAuth2
 * token ({@code gcs.oauth2.token}), or a SAS per ADLS host ({@code adls.sas-token.<host>}). What
 * a {@link CredentialSnapshot} holds for those stores instead of S3 keys; immutable, and never
 * printed (only its {@link #fingerprint}, a truncated hash, names it in logs and to the driver).
 */
public final class StoreTokens {
  /** The two stores these tokens are for; {@link #label} is what messages say. */
  public enum Store {
    GCS("GCS"),
    ADLS("Azure storage");

    public final String label;

    Store(String label) {
      this.label = label;
    }
  }

  public final Store store;
  private final String gcsToken;
  /** ADLS: host -> SAS (without a leading '?'), sorted for a stable fingerprint. */
  private final Map<String, String> sasByHost;
  /** The expiry the catalog stated (the earliest one for several hosts); Long.MAX_VALUE: none. */
  final long statedExpiresAtMs;
  /** Names these tokens without revealing them: a rejection report compares it with the current one. */
  final String fingerprint;

  private StoreTokens(Store store, String gcsToken, Map<String, String> sasByHost, long statedExpiresAtMs) {
    this.store = store;
    this.gcsToken = gcsToken;
    this.sasByHost = Collections.unmodifiableMap(sasByHost);
    this.statedExpiresAtMs = statedExpiresAtMs;
    this.fingerprint = store.name().toLowerCase(java.util.Locale.ROOT) + ":" + hash(gcsToken, sasByHost);
  }

  /** Whether {@code key} holds one of these secrets or its expiry (what a refresh keeps of a config). */
  public static boolean isTokenKey(String key) {
    return key.equals(ShimKeys.GCS_TOKEN) || key.equals(ShimKeys.GCS_TOKEN_EXPIRES_AT)
        || key.startsWith(ShimKeys.ADLS_SAS_TOKEN_PREFIX) || key.startsWith(ShimKeys.ADLS_SAS_EXPIRES_AT_MS_PREFIX);
  }

  /** The tokens in Iceberg-style properties, or null when there are none (a GCS token wins over SAS). */
  static StoreTokens fromConfig(Map<String, String> config) {
    String token = config.get(ShimKeys.GCS_TOKEN);
    if (token != null && !token.isEmpty()) {
      return new StoreTokens(Store.GCS, token, Map.of(), parseMs(config.get(ShimKeys.GCS_TOKEN_EXPIRES_AT)));
    }
    Map<String, String> sas = new TreeMap<>();
    long expires = Long.MAX_VALUE;
    for (Map.Entry<String, String> e : config.entrySet()) {
      String key = e.getKey();
      if (key.startsWith(ShimKeys.ADLS_SAS_TOKEN_PREFIX) && e.getValue() != null && !e.getValue().isEmpty()) {
        String host = key.substring(ShimKeys.ADLS_SAS_TOKEN_PREFIX.length());
        String hostSas = e.getValue().startsWith("?") ? e.getValue().substring(1) : e.getValue();
        sas.put(host, hostSas);
        // A catalog that states no expiry: the SAS's own (se=), which Azure goes by.
        String stated = config.get(ShimKeys.ADLS_SAS_EXPIRES_AT_MS_PREFIX + host);
        expires = Math.min(expires, stated != null ? parseMs(stated) : sasSignedExpiryMs(hostSas));
      }
    }
    return sas.isEmpty() ? null : new StoreTokens(Store.ADLS, null, sas, expires);
  }

  /** GCS: the OAuth2 access token. */
  public String gcsToken() {
    return gcsToken;
  }

  /**
   * ADLS: the SAS for storage account {@code account} (the first label of the host the catalog keyed
   * it by, so {@code .dfs.} and {@code .blob.} hosts of one account find it), or null.
   */
  public String sasForAccount(String account) {
    for (Map.Entry<String, String> e : sasByHost.entrySet()) {
      if (accountOf(e.getKey()).equals(account)) {
        return e.getValue();
      }
    }
    return null;
  }

  /** The storage account of an ADLS host ({@code acct.dfs.core.windows.net} -> {@code acct}). */
  public static String accountOf(String host) {
    int dot = host.indexOf('.');
    return (dot < 0 ? host : host.substring(0, dot)).toLowerCase(java.util.Locale.ROOT);
  }

  /**
   * When a SAS says it ends: its signed expiry ({@code se=}), in epoch ms; Long.MAX_VALUE when it
   * states none that can be read. The store itself goes by this time, whatever the catalog stated.
   */
  public static long sasSignedExpiryMs(String sas) {
    if (sas == null) {
      return Long.MAX_VALUE;
    }
    for (String pair : sas.split("&")) {
      if (pair.startsWith("se=")) {
        String value = URLDecoder.decode(pair.substring(3), StandardCharsets.UTF_8);
        try {
          return Instant.parse(value).toEpochMilli();
        } catch (DateTimeParseException notAnInstant) {
          try {
            return LocalDate.parse(value).atStartOfDay(ZoneOffset.UTC).toInstant().toEpochMilli();
          } catch (DateTimeParseException unreadable) {
            return Long.MAX_VALUE;
          }
        }
      }
    }
    return Long.MAX_VALUE;
  }

  /** The tokens as Iceberg's own FileIO takes them, with the expiry the catalog stated. */
  public Map<String, String> asProperties() {
    return toConfig(statedExpiresAtMs);
  }

  /** Back to Iceberg-style properties: the tokens with the expiry {@code expiresAtMs} (Long.MAX_VALUE: none). */
  Map<String, String> toConfig(long expiresAtMs) {
    Map<String, String> config = new java.util.HashMap<>();
    if (store == Store.GCS) {
      config.put(ShimKeys.GCS_TOKEN, gcsToken);
      if (expiresAtMs != Long.MAX_VALUE) {
        config.put(ShimKeys.GCS_TOKEN_EXPIRES_AT, String.valueOf(expiresAtMs));
      }
    } else {
      sasByHost.forEach((host, sas) -> {
        config.put(ShimKeys.ADLS_SAS_TOKEN_PREFIX + host, sas);
        if (expiresAtMs != Long.MAX_VALUE) {
          config.put(ShimKeys.ADLS_SAS_EXPIRES_AT_MS_PREFIX + host, String.valueOf(expiresAtMs));
        }
      });
    }
    return config;
  }

  private static long parseMs(String value) {
    if (value == null || value.trim().isEmpty()) {
      return Long.MAX_VALUE;
    }
    return Long.parseLong(value.trim());
  }

  private static String hash(String token, Map<String, String> sasByHost) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      if (token != null) {
        sha.update(token.getBytes(StandardCharsets.UTF_8));
      }
      sasByHost.forEach((host, sas) -> {
        sha.update(host.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
        sha.update(sas.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
      });
      StringBuilder hex = new StringBuilder();
      byte[] digest = sha.digest();
      for (int i = 0; i < 8; i++) {
        hex.append(String.format("%02x", digest[i]));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  @Override
  public String toString() {
    return "StoreTokens{" + fingerprint + "}"; // never the tokens
  }
}
