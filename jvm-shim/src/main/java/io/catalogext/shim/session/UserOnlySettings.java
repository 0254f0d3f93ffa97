package io.catalogext.shim.session;

import io.catalogext.shim.config.TrustRules;
import io.catalogext.shim.wire.Origin;

import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a server answer may set, and what stays the user's: an allow-list from the spec both runtimes
 * share ({@link TrustRules}, {@code trust-rules.json}). A server answer ({@code /v1/config} defaults
 * and overrides, a table's config) may set only credentials and their expiries, refresh endpoints,
 * storage endpoints, region, path style, remote signing and (in {@code /v1/config}) the catalog's
 * protocol keys. Any other key it names (a class to load, Iceberg's HTTP client settings such as a
 * proxy or TLS configurer, the S3 client factory, a {@code catalog-ext.*} knob) is not followed: the
 * user's value, or none, stays, and one warning per key and answer names the key and the catalog's
 * origin (never the value).
 */
public final class UserOnlySettings {
  private static final Logger LOG = LoggerFactory.getLogger(UserOnlySettings.class);
  /** Iceberg's HTTPClient reads all its settings under this prefix. */
  static final String HTTP_CLIENT_PREFIX = "rest.client.";
  static final String S3_CLIENT_FACTORY = "s3.client-factory-impl";
  /** Iceberg's older AWS client factory setting: a user who names one keeps Iceberg's choice between the two. */
  static final String AWS_CLIENT_FACTORY = "client.factory";
  /** The shim's S3 client factory (the root package's RefreshingS3ClientFactory, named here below it). */
  public static final String SHIM_S3_CLIENT_FACTORY = "io.catalogext.shim.RefreshingS3ClientFactory";
  /** Warnings already logged (source + key), bounded: one line each, not one per table load. */
  private static final int MAX_WARNED = 256;

  private final String catalog;
  private final String origin;
  private final Map<String, String> user;
  private final boolean userPicksAwsFactory;
  private final Map<String, String> warned = new ConcurrentHashMap<>();

  private UserOnlySettings(String catalog, String origin, Map<String, String> user, boolean userPicksAwsFactory) {
    this.catalog = catalog;
    this.origin = origin;
    this.user = user;
    this.userPicksAwsFactory = userPicksAwsFactory;
  }

  /** Whether only the user may set {@code key} in a {@code /v1/config} answer. */
  public static boolean isUserOnly(String key) {
    return !TrustRules.serverMaySet(key, true);
  }

  /** Settings the catalog's HTTP client and S3 clients are built with: always as the user set them. */
  private static boolean isWireSetting(String key) {
    return key.startsWith(HTTP_CLIENT_PREFIX) || key.equals(S3_CLIENT_FACTORY);
  }

  /** The user-only settings of catalog {@code catalog} from the properties its user configured. */
  public static UserOnlySettings fromUserProperties(String catalog, String uri, Map<String, String> props) {
    Map<String, String> user = new HashMap<>();
    props.forEach((key, value) -> {
      if (key != null && value != null) {
        user.put(key, value);
      }
    });
    String origin;
    try {
      origin = Origin.of(uri).toString();
    } catch (IllegalArgumentException e) {
      origin = "the catalog";
    }
    return new UserOnlySettings(catalog, origin, Collections.unmodifiableMap(user), props.containsKey(AWS_CLIENT_FACTORY));
  }

  /** Whether a {@code /v1/config} {@code key} = {@code value} is not the user's setting and not a key a server may set. */
  public boolean overrides(String key, String value) {
    return isUserOnly(key) && !Objects.equals(user.get(key), value);
  }

  /** The same for a table answer's config, where only storage keys may be set. */
  private boolean overridesInTable(String key, String value) {
    return !TrustRules.serverMaySet(key, false) && !Objects.equals(user.get(key), value);
  }

  /**
   * {@code config}, Iceberg's merge of a server answer with the user's properties (where
   * {@code /v1/config} overrides win over the user's), with every user-only key as the user set it,
   * or absent; each server value that differed is dropped with one warning naming {@code source}.
   */
  public Map<String, String> enforce(String source, Map<String, String> config) {
    Map<String, String> out = new LinkedHashMap<>();
    config.forEach((key, value) -> {
      if (overrides(key, value)) {
        ignored(source, key);
        if (user.containsKey(key)) {
          out.put(key, user.get(key));
        }
      } else {
        out.put(key, value);
      }
    });
    user.forEach((key, value) -> {
      if (isWireSetting(key)) {
        out.put(key, value);
      }
    });
    return out;
  }

  /**
   * A table answer's config for the table's FileIO, without server values of user-only keys (the
   * catalog properties Iceberg merges it over hold the user's), and with the shim's S3 client
   * factory unless the user chose one: Iceberg merges the table config over the catalog properties,
   * so the factory set here is the one S3FileIO uses.
   */
  public Map<String, String> forFileIo(String source, Map<String, String> tableConfig) {
    Map<String, String> out = new LinkedHashMap<>();
    tableConfig.forEach((key, value) -> {
      if (overridesInTable(key, value)) {
        ignored(source, key);
      } else {
        out.put(key, value);
      }
    });
    if (user.containsKey(S3_CLIENT_FACTORY) || userPicksAwsFactory) {
      out.remove(S3_CLIENT_FACTORY);
    } else {
      out.put(S3_CLIENT_FACTORY, SHIM_S3_CLIENT_FACTORY);
    }
    return out;
  }

  /** A storage credential's config with only the keys a server may set in it (no client factory, no class). */
  public Map<String, String> credentialConfig(String source, Map<String, String> credentialConfig) {
    Map<String, String> out = new LinkedHashMap<>();
    credentialConfig.forEach((key, value) -> {
      if (TrustRules.serverMaySet(key, false)) {
        out.put(key, value);
      } else {
        ignored(source, key);
      }
    });
    return out;
  }

  /** Logs, once per source and key, that the server's {@code key} from {@code source} was not followed. */
  public void ignored(String source, String key) {
    if (warned.size() >= MAX_WARNED) {
      return;
    }
    String line = "catalog-ext: catalog " + catalog + " ignores " + key + " from " + source + " (" + origin + "):"
        + " a server answer may set only credentials, endpoints, region and path style (trust-rules.json)";
    if (warned.putIfAbsent(source + "\u0000" + key, line) == null) {
      LOG.warn(line);
    }
  }

  /** The warnings logged so far, one per ignored key and source (for status and tests). */
  public List<String> warnings() {
    return List.copyOf(warned.values());
  }

  @Override
  public String toString() {
    return "UserOnlySettings(" + catalog + ")"; // no values: a proxy password may be among them
  }
}
