package io.catalogext.shim.wire;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.errors.UntrustedOriginException;
import io.catalogext.shim.util.OneLine;

import java.net.URI;
import java.util.Map;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.ResourcePaths;
import org.apache.iceberg.rest.auth.OAuth2Properties;
import org.apache.iceberg.util.PropertyUtil;

/**
 * Where Iceberg's own FileIOs would send the catalog's credentials by themselves: each store's
 * credentials refresh (S3's {@code client.refresh-credentials-endpoint}, GCS's
 * {@code gcs.oauth2.refresh-credentials-endpoint}, ADLS's {@code adls.refresh-credentials-endpoint})
 * asks its endpoint, resolved under the catalog URI, with the catalog's auth session: its token, its
 * {@code header.*} values, an OAuth2 token request with the client secret. A table answer can name
 * any URL there, so the shim's FileIOs and S3 client factory check the endpoint and the OAuth2 token
 * URL, as Iceberg resolves them, against the catalog's trust set before Iceberg's FileIO or client
 * exists.
 */
public final class IcebergRefreshOrigins {
  private IcebergRefreshOrigins() {}

  /**
   * The trust set a FileIO goes by: sealed by the driver into the table config (written over any
   * value an answer carries); a FileIO the shim's catalog did not hand out has only its own
   * properties to go by. Server-named URLs on other origins in {@code properties} are noted for the
   * refusal's message.
   */
  public static TrustedOrigins of(Map<String, String> properties) {
    String sealed = properties.get(ShimKeys.SEALED_TRUSTED_ORIGINS);
    String catalog = properties.getOrDefault(ShimKeys.CATALOG_NAME, "(unnamed)");
    TrustedOrigins trust = sealed != null
        ? TrustedOrigins.fromSealed(catalog, sealed)
        : TrustedOrigins.fromUserProperties(catalog, properties);
    trust.noteServerUrls("the table's FileIO properties", properties);
    return trust;
  }

  /**
   * Refuses, in one line, where Iceberg's refresh reading {@code endpointKey} from {@code properties}
   * would send the catalog's credentials to an origin {@code trust} does not hold.
   *
   * @param enabledKey the switch that turns that refresh off, or null where Iceberg reads none
   *     (GCSFileIO 1.11's scheduled refresh asks the endpoint whatever its switch says)
   * @param store the store's name for the message ("S3", "GCS", "ADLS")
   */
  public static void check(
      TrustedOrigins trust, Map<String, String> properties, String endpointKey, String enabledKey, String store) {
    String endpoint = properties.get(endpointKey);
    if (endpoint == null || endpoint.isEmpty()
        || (enabledKey != null && !PropertyUtil.propertyAsBoolean(properties, enabledKey, true))) {
      return;
    }
    String base = properties.get(CatalogProperties.URI);
    if (base == null) {
      return; // Iceberg's refresh refuses to start without a catalog URI: nothing is sent
    }
    checkResolved(trust, base, endpoint, "Iceberg's " + store + " credentials refresh request");
    checkResolved(trust, base, properties.getOrDefault(OAuth2Properties.OAUTH2_SERVER_URI, ResourcePaths.tokens()),
        "the OAuth2 token request of Iceberg's " + store + " credentials refresh");
  }

  /** Checks {@code path} where Iceberg's HTTP client sends it: as is when absolute, else under the catalog URI. */
  private static void checkResolved(TrustedOrigins trust, String base, String path, String request) {
    String resolved = RESTUtil.resolveEndpoint(base, path);
    URI url;
    try {
      url = URI.create(resolved);
    } catch (IllegalArgumentException e) {
      throw new UntrustedOriginException("catalog-ext refused to send " + request + " to a URL it cannot parse ("
          + OneLine.of(e) + "): the catalog's credentials go only to the origins its user configured");
    }
    trust.check(url, request);
  }
}
