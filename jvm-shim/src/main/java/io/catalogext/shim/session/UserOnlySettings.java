package io.catalogext.shim.session;

import io.catalogext.shim.config.ShimKeys;
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
 * Settings a catalog's user alone makes, never its server: Iceberg's HTTP client settings
 * ({@code rest.client.*}: proxy, TLS configurer, timeouts, user agent), which decide how and through
 * whom the requests carrying the catalog's credentials travel, the S3 client factory, which
 * decides who builds a table's S3 clients (the shim's checks a remote signer's origins before
 * anything is signed), the FileIO ({@code io-impl}: a server's would name code, and take a table
 * away from the shim's refreshing FileIO) and the stores the user allowed ({@code catalog-ext.stores}).
 * A server answer ({@code /v1/config} defaults and overrides, a table's
 * config) that sets one of them differently from the user is not followed: the user's value, or
 * none, stays, and one warning per key and answer names the key and the catalog's origin (never the
 * value).
 */
public final class UserOnlySettings {
  private static final Logger LOG = LoggerFactory.getLogger(UserOnlySettings.class);
  /** Iceberg's HTTPClient reads all its settings under this prefix. */
  static final String HTTP_CLIENT_PREFIX = "rest.client.";
  static final String S3_CLIENT_FACTORY = "s3.client-factory-impl";
  /** Iceberg's CatalogProperties.FILE_IO_IMPL. */
  static final String FILE_IO_IMPL = "io-impl";
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

  /** Whether only the user may set {@code key}. */
  public static boolean isUserOnly(String key) {
    return key != null && (key.startsWith(HTTP_CLIENT_PREFIX) || key.equals(S3_CLIENT_FACTORY) || key.equals(FILE_IO_IMPL)
        || key.equals(ShimKeys.STORES));
  }

  /** The user-only settings of catalog {@code catalog} from the properties its user configured. */
  public static UserOnlySettings fromUserProperties(String catalog, String uri, Map<String, String> props) {
    Map<String, String> user = new HashMap<>();
    props.forEach((key, value) -> {
      if (isUserOnly(key) && value != null) {
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

  /** Whether a server's {@code key} = {@code value} is not the user's setting (and so is not followed). */
  public boolean overrides(String key, String value) {
    return isUserOnly(key) && !Objects.equals(user.get(key), value);
  }

  /**
   * {@code config}, Iceberg's merge of a server answer with the user's properties (where
   * {@code /v1/config} overrides win over the user's), with every user-only key as the user set it,
   * or absent; each server value that differed is dropped with one warning naming {@code source}.
   */
  public Map<String, String> enforce(String source, Map<String, String> config) {
    Map<String, String> out = withoutServerValues(source, config);
    out.putAll(user);
    return out;
  }

  /**
   * A table answer's config for the table's FileIO, without server values of user-only keys (the
   * catalog properties Iceberg merges it over hold the user's), and with the shim's S3 client
   * factory unless the user chose one: Iceberg merges the table config over the catalog properties,
   * so the factory set here is the one S3FileIO uses.
   */
  public Map<String, String> forFileIo(String source, Map<String, String> tableConfig) {
    Map<String, String> out = withoutServerValues(source, tableConfig);
    if (user.containsKey(S3_CLIENT_FACTORY) || userPicksAwsFactory) {
      out.remove(S3_CLIENT_FACTORY);
    } else {
      out.put(S3_CLIENT_FACTORY, SHIM_S3_CLIENT_FACTORY);
    }
    return out;
  }

  /** {@code config} without the server's values of user-only keys ("source": "/v1/config overrides", ...). */
  private Map<String, String> withoutServerValues(String source, Map<String, String> config) {
    Map<String, String> out = new LinkedHashMap<>();
    config.forEach((key, value) -> {
      if (overrides(key, value)) {
        ignored(source, key);
      } else {
        out.put(key, value);
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
        + " Iceberg's HTTP client settings (rest.client.*), the FileIO, the S3 client factory and the stores"
        + " (io-impl, s3.client-factory-impl, catalog-ext.stores) are the user's to set, never the server's";
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
