package io.catalogext.shim.config;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Who may decide what, from the spec both runtimes share
 * ({@code pyspark_catalog_ext/resources/trust-rules.json}, copied into this jar): the URL settings
 * only the user gives, and the allow-list of keys a server answer ({@code /v1/config}, a table's
 * config) may set. Every other key an answer names is not followed, so no answer names code
 * ({@code io-impl}, {@code *-impl}, {@code client.factory}), a proxy or a {@code catalog-ext.*} knob.
 * PyIceberg reads the same file ({@code pyspark_catalog_ext/catalog/trust_rules.py}).
 *
 * <p>Python twin: {@code pyspark_catalog_ext.catalog.trust_rules}.
 */
public final class TrustRules {
  static final String RESOURCE = "/io/catalogext/shim/trust-rules.json";
  private static final JsonNode SPEC = load();
  private static final JsonNode STORAGE = SPEC.path("server-settable").path("storage");

  /** Settings whose URL the user gives (never read from an answer): their origins are trusted. */
  public static final List<String> USER_URL_KEYS = strings(SPEC.path("user-url-keys").path("keys"));
  private static final Set<String> STORAGE_KEYS = new LinkedHashSet<>();
  private static final List<String> STORAGE_PREFIXES = new ArrayList<>();
  private static final Set<String> CATALOG_KEYS =
      Set.copyOf(strings(SPEC.path("server-settable").path("catalog").path("keys")));
  private static final List<String> CATALOG_PREFIXES =
      strings(SPEC.path("server-settable").path("catalog").path("prefixes"));
  private static final Set<String> TABLE_KEYS =
      Set.copyOf(strings(SPEC.path("server-settable").path("table").path("keys")));
  private static final List<String> TABLE_PREFIXES =
      strings(SPEC.path("server-settable").path("table").path("prefixes"));

  private static final List<String> CODE_SUFFIXES = strings(SPEC.path("metadata-code-keys").path("suffixes"));
  /** The stores whose endpoint keys the spec lists, in its order. */
  public static final List<String> STORES = List.of("s3", "gcs", "adls");
  private static final List<String> ADLS_ENDPOINT_PREFIXES = strings(STORAGE.path("endpoints").path("adls-prefixes"));

  static {
    for (String group : new String[] {"credentials", "refresh-endpoints", "placement", "remote-signing"}) {
      STORAGE_KEYS.addAll(strings(STORAGE.path(group).path("keys")));
      STORAGE_PREFIXES.addAll(strings(STORAGE.path(group).path("prefixes")));
    }
    for (String store : new String[] {"s3", "gcs", "adls"}) {
      STORAGE_KEYS.addAll(strings(STORAGE.path("endpoints").path(store)));
    }
    STORAGE_PREFIXES.addAll(strings(STORAGE.path("endpoints").path("adls-prefixes")));
  }

  private TrustRules() {}

  /**
   * Whether a server answer may set {@code key}: a table answer the storage keys (credentials,
   * expiries, refresh endpoints, storage endpoints, region, path style, remote signing) and the
   * table's own auth token; {@code /v1/config} ({@code config}) the storage keys and the catalog's
   * own protocol keys.
   */
  public static boolean serverMaySet(String key, boolean config) {
    if (key == null) {
      return false;
    }
    if (STORAGE_KEYS.contains(key) || STORAGE_PREFIXES.stream().anyMatch(key::startsWith)) {
      return true;
    }
    if (config) {
      return CATALOG_KEYS.contains(key) || CATALOG_PREFIXES.stream().anyMatch(key::startsWith);
    }
    return TABLE_KEYS.contains(key) || TABLE_PREFIXES.stream().anyMatch(key::startsWith);
  }

  /**
   * "s3", "gcs" or "adls" when {@code key} says where that store's requests go (an endpoint, an ADLS
   * authority or connection string); null otherwise. Python: {@code catalog/trust_rules.py store_of_endpoint_key}.
   */
  public static String storeOfEndpointKey(String key) {
    if (key == null) {
      return null;
    }
    for (String store : STORES) {
      for (JsonNode k : STORAGE.path("endpoints").path(store)) {
        if (k.asText().equals(key)) {
          return store;
        }
      }
    }
    return ADLS_ENDPOINT_PREFIXES.stream().anyMatch(key::startsWith) ? "adls" : null;
  }

  /**
   * Whether a table metadata property names code a client would load ({@code write.location-provider.impl}):
   * such properties are data any table writer sets, and never reach Iceberg.
   */
  public static boolean isMetadataCodeKey(String key) {
    return key != null && CODE_SUFFIXES.stream().anyMatch(key::endsWith);
  }

  /** The spec itself, for tests that replay its vectors. */
  public static JsonNode spec() {
    return SPEC;
  }

  private static JsonNode load() {
    return SharedSpecs.read(RESOURCE);
  }

  private static List<String> strings(JsonNode list) {
    List<String> out = new ArrayList<>();
    list.forEach(n -> out.add(n.asText()));
    return List.copyOf(out);
  }
}
