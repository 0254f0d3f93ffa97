package io.catalogext.shim.session;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.config.TrustRules;
import io.catalogext.shim.errors.UntrustedOriginException;
import io.catalogext.shim.wire.Origin;
import io.catalogext.shim.wire.TrustedOrigins;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Storage endpoints a server answer names, and the credentials that may go there. A catalog that
 * vends a store's credentials for a table may say where that store is; credentials the catalog did
 * not issue (the user's own keys, SAS or tokens, and ambient identities: AWS's default chain, Google
 * ADC, Azure's default credential) go only to endpoints the user configured for that store or
 * trusts ({@code catalog-ext.trusted-origins}), or to the store's public default.
 *
 * <p>So an endpoint a server names on an untrusted origin is kept out of a table's FileIO unless that
 * table's answer vends the store's credentials: {@code /v1/config}'s are held back from the catalog
 * properties ({@link #fromConfig}) and given back per table; a table config's are dropped. When the
 * table's own location is on that store, the load is refused in one line naming the key, the origin
 * and the setting that trusts it. Python: {@code pyspark_catalog_ext/catalog/server_settings.py}
 * ({@code table_io_properties}).
 */
public final class ServerEndpoints {
  private static final String KNOB = "catalog-ext.trusted-origins";
  private static final Map<String, String> STORE_OF_SCHEME = Map.of(
      "s3", "s3", "s3a", "s3", "s3n", "s3", "gs", "gcs", "gcs", "gcs",
      "abfs", "adls", "abfss", "adls", "wasb", "adls", "wasbs", "adls");
  private static final Map<String, String> STORE_NAMES = Map.of("s3", "S3", "gcs", "GCS", "adls", "ADLS");

  private final String catalog;
  private final Map<String, String> user;
  private final TrustedOrigins trust;
  /** Endpoint keys {@code /v1/config} named on untrusted origins: given only to tables that vend their store's credentials. */
  private final Map<String, String> heldFromConfig = new ConcurrentHashMap<>();
  /** Whether the catalog's properties turn remote signing on: S3 requests then carry the catalog signer's signatures only. */
  private volatile boolean catalogSigns;

  public ServerEndpoints(String catalog, Map<String, String> user, TrustedOrigins trust) {
    this.catalog = catalog;
    Map<String, String> copy = new LinkedHashMap<>();
    user.forEach((k, v) -> {
      if (k != null && v != null) {
        copy.put(k, v);
      }
    });
    this.user = Map.copyOf(copy);
    this.trust = trust;
    this.catalogSigns = signs(this.user);
  }

  /**
   * Takes out of a {@code /v1/config} section ({@code props}, changed in place) the endpoint keys on
   * untrusted origins the user did not set; they are given back to the tables whose answers vend
   * their store's credentials. Returns the keys taken.
   */
  public List<String> fromConfig(Map<String, String> props) {
    List<String> held = new ArrayList<>();
    catalogSigns |= signs(props);
    props.forEach((key, value) -> {
      String store = TrustRules.storeOfEndpointKey(key);
      if (store != null && !Objects.equals(user.get(key), value) && untrustedOrigin(key, store, props) != null) {
        heldFromConfig.put(key, value);
        held.add(key);
      }
    });
    held.forEach(props::remove);
    return held;
  }

  /**
   * A table answer's {@code config} for its FileIO: with the endpoints of stores the answer vends
   * credentials for ({@code config} and {@code credentialConfigs}, after the allow-list), also those
   * {@code /v1/config} named; without the untrusted ones of the other stores.
   *
   * @throws UntrustedOriginException when such an endpoint is of the store {@code location} is on
   */
  public Map<String, String> forTable(String table, String location, Map<String, String> config,
      Collection<Map<String, String>> credentialConfigs) {
    Set<String> issued = issuedStores(config, credentialConfigs);
    if (catalogSigns) {
      issued.add("s3");
    }
    Map<String, String> out = new LinkedHashMap<>(config);
    heldFromConfig.forEach((key, value) -> {
      if (issued.contains(TrustRules.storeOfEndpointKey(key))) {
        out.putIfAbsent(key, value);
      }
    });
    Map<String, String> named = new LinkedHashMap<>(heldFromConfig);
    named.putAll(config);
    String tableStore = storeOf(location);
    for (Map.Entry<String, String> e : named.entrySet()) {
      String key = e.getKey();
      String store = TrustRules.storeOfEndpointKey(key);
      if (store == null || issued.contains(store) || Objects.equals(user.get(key), e.getValue())) {
        continue;
      }
      String problem = untrustedOrigin(key, store, named);
      if (problem == null) {
        continue;
      }
      out.remove(key);
      if (store.equals(tableStore)) {
        String name = STORE_NAMES.get(store);
        throw new UntrustedOriginException("catalog-ext: catalog " + catalog + ", table " + table + ": the catalog names "
            + key + " = " + problem + " but vends no " + name + " credential, and your own " + name + " credentials"
            + " go only to endpoints you configured; if you trust " + problem + ", set " + key + " yourself or add it to "
            + KNOB);
      }
    }
    return out;
  }

  /**
   * The stores for which an answer vends a credential, names where the catalog renews it (Iceberg's
   * own FileIOs fetch from a refresh endpoint, with the catalog's login), or (S3) signs remotely.
   */
  static Set<String> issuedStores(Map<String, String> config, Collection<Map<String, String>> credentialConfigs) {
    Set<String> out = new HashSet<>();
    List<Map<String, String>> all = new ArrayList<>(credentialConfigs);
    all.add(config);
    for (Map<String, String> c : all) {
      if (nonEmpty(c.get("s3.access-key-id")) || signs(c) || nonEmpty(c.get(ShimKeys.REFRESH_ENDPOINT))) {
        out.add("s3");
      }
      if (nonEmpty(c.get("gcs.oauth2.token")) || nonEmpty(c.get(ShimKeys.GCS_REFRESH_ENDPOINT))) {
        out.add("gcs");
      }
      if (nonEmpty(c.get(ShimKeys.ADLS_REFRESH_ENDPOINT))
          || c.entrySet().stream().anyMatch(e -> e.getKey().startsWith("adls.sas-token.") && nonEmpty(e.getValue()))) {
        out.add("adls");
      }
    }
    return out;
  }

  private static boolean signs(Map<String, String> props) {
    return "true".equalsIgnoreCase(props.get("s3.remote-signing-enabled"));
  }

  private static boolean nonEmpty(String value) {
    return value != null && !value.isEmpty();
  }

  /** The store a table location is on, by its scheme; null for another scheme. */
  static String storeOf(String location) {
    if (location == null) {
      return null;
    }
    int colon = location.indexOf(':');
    return colon < 0 ? null : STORE_OF_SCHEME.get(location.substring(0, colon).toLowerCase(Locale.ROOT));
  }

  /**
   * Null when every URL {@code key} (an endpoint of {@code store}) names in {@code props} is on a
   * trusted origin (the catalog's trust set, or an endpoint the user configured for the same store);
   * else the first untrusted origin, or the value's problem.
   */
  private String untrustedOrigin(String key, String store, Map<String, String> props) {
    Set<Origin> userOrigins = new HashSet<>();
    user.forEach((userKey, value) -> {
      if (store.equals(TrustRules.storeOfEndpointKey(userKey))) {
        for (String url : endpointUrls(userKey, value, user)) {
          Origin origin = originOrNull(url);
          if (origin != null) {
            userOrigins.add(origin);
          }
        }
      }
    });
    for (String url : endpointUrls(key, props.get(key), props)) {
      Origin origin = originOrNull(url);
      if (origin == null) {
        return "an unparseable URL";
      }
      if (!trust.origins().contains(origin) && !userOrigins.contains(origin)) {
        return origin.toString();
      }
    }
    return null;
  }

  /**
   * The URLs an endpoint setting sends to: a URL as it is, an ADLS authority with its scheme, each
   * endpoint of an Azure connection string. A scheme setting names no host.
   */
  static List<String> endpointUrls(String key, String value, Map<String, String> props) {
    String text = value == null ? "" : value.trim();
    if (key.endsWith("-scheme") || text.isEmpty()) {
      return List.of();
    }
    if (key.startsWith("adls.connection-string") && Origin.isAbsolute(text)) {
      return List.of(text); // Iceberg's adls.connection-string.<account>: the account's endpoint URL
    }
    if (key.startsWith("adls.connection-string")) {
      List<String> out = new ArrayList<>();
      for (String part : text.split(";")) {
        int eq = part.indexOf('=');
        if (eq > 0 && part.substring(0, eq).trim().toLowerCase(Locale.ROOT).endsWith("endpoint")) {
          out.add(part.substring(eq + 1));
        }
      }
      return out.isEmpty() ? List.of("unparseable:") : out;
    }
    if (key.endsWith("-authority")) {
      String scheme = props.get(key.replace("-authority", "-scheme"));
      return List.of((scheme == null || scheme.isEmpty() ? "https" : scheme) + "://" + text);
    }
    return List.of(text);
  }

  private static Origin originOrNull(String url) {
    try {
      return Origin.of(URI.create(url));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  @Override
  public String toString() {
    return "ServerEndpoints(" + catalog + ")"; // no values
  }
}
