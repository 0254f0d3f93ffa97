package io.catalogext.shim.wire;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.util.Json;

import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Iceberg 1.12's remote signing answer for Iceberg 1.10's signer client.
 *
 * <p>From 1.12 a catalog says where to sign in a LoadTableResult field, {@code
 * remote-signing-config} (apache/iceberg#16822, #17709): an optional {@code base-uri} and {@code
 * endpoint-path}, and {@code properties}/{@code headers} to pass on with every sign request; its
 * presence alone means "sign at the spec's per-table route, {@code
 * v1/{prefix}/namespaces/{ns}/tables/{t}/sign}" (lakekeeper#1961). Iceberg 1.10's parser drops the
 * field and its S3V4RestSignerClient reads only {@code s3.signer.uri} (default: the catalog URI) and
 * {@code s3.signer.endpoint} (default: {@code v1/aws/s3/sign}, which such a catalog need not serve),
 * so every S3 request would go to the wrong signer. {@link RefreshTokenCapture} keeps the field
 * under a private config key; here, once per table answer, it becomes those two properties.
 * Properties the catalog set itself win.
 */
public final class RemoteSigning {
  static final String FIELD = "remote-signing-config";
  public static final String SIGNER_URI = "s3.signer.uri";
  static final String SIGNER_ENDPOINT = "s3.signer.endpoint";
  /** The names Iceberg 1.12's signer client reads instead (RESTCatalogProperties.SIGNER_URI/_ENDPOINT). */
  public static final String NEW_SIGNER_URI = "signer.uri";
  static final String NEW_SIGNER_ENDPOINT = "signer.endpoint";
  /** Where Iceberg 1.12's signer client reads the remote-signing-config object (RESTCatalogProperties). */
  static final String REST_SIGNING_CONFIG = "rest.remote-signing.config";
  static final boolean PASSES_ON = icebergPassesSigningConfigOn();

  private RemoteSigning() {}

  /**
   * The answer with {@code remote-signing-config} translated (or unchanged without one).
   *
   * @throws IllegalStateException one line, when the catalog asks for sign-request properties or
   *     headers, which Iceberg 1.10's signer client cannot send
   */
  public static LoadTableResponse translate(LoadTableResponse loaded, TablePath path, RESTRequest body) {
    String captured = loaded.config().get(ShimKeys.CAPTURED_SIGNING_CONFIG);
    if (captured == null) {
      Map<String, String> mirrored = withNewSignerNames(loaded.config());
      return mirrored == null ? loaded : rebuilt(loaded, mirrored);
    }
    Map<String, String> config = new HashMap<>(loaded.config());
    config.remove(ShimKeys.CAPTURED_SIGNING_CONFIG);
    JsonNode signing;
    try {
      signing = Json.MAPPER.readTree(captured);
    } catch (Exception e) {
      throw new IllegalStateException("the catalog's remote-signing-config is not a JSON object", e);
    }
    if (PASSES_ON) {
      // Iceberg 1.12's signer reads the object from the FileIO config and sends its properties and
      // headers itself; the answer is rebuilt below (the shim's hand-out keys), which drops the
      // parsed field, so the object travels under the key the signer reads.
      config.put(REST_SIGNING_CONFIG, captured);
    }
    for (String passOn : new String[] {"properties", "headers"}) {
      JsonNode node = signing.get(passOn);
      if (!PASSES_ON && node != null && node.size() > 0) {
        throw new IllegalStateException("the catalog's remote-signing-config asks every sign request to carry "
            + passOn + ", which Iceberg 1.10's signer client cannot send; use an Iceberg runtime >= 1.12 for "
            + "this catalog, or vended credentials (delegation='vended-credentials')");
      }
    }
    String table = path.table;
    if (body instanceof CreateTableRequest) {
      table = ((CreateTableRequest) body).name();
    } else if (body instanceof RegisterTableRequest) {
      table = ((RegisterTableRequest) body).name();
    }
    JsonNode base = signing.get("base-uri");
    JsonNode endpoint = signing.get("endpoint-path");
    if (!config.containsKey(SIGNER_URI) && base != null && base.isTextual()) {
      config.put(SIGNER_URI, base.asText()); // absent: the catalog URI, Iceberg's own default
    }
    if (!config.containsKey(SIGNER_ENDPOINT)) {
      if (endpoint != null && endpoint.isTextual()) {
        config.put(SIGNER_ENDPOINT, endpoint.asText().replaceAll("^/+", ""));
      } else if (table != null) {
        config.put(SIGNER_ENDPOINT, TablePath.table(path.root, path.namespace, table) + "/sign");
      }
    }
    Map<String, String> mirrored = withNewSignerNames(config);
    return rebuilt(loaded, mirrored == null ? config : mirrored);
  }

  /**
   * The signer properties under the names Iceberg 1.12's signer client reads ({@code signer.uri},
   * {@code signer.endpoint}) beside the {@code s3.signer.*} names of 1.10 and 1.11, which 1.12 no
   * longer reads: a catalog (or user) that still sends the old form signs where it says on every
   * runtime. Null when there is nothing to add.
   */
  static Map<String, String> withNewSignerNames(Map<String, String> config) {
    Map<String, String> out = null;
    String[][] pairs = {{SIGNER_URI, NEW_SIGNER_URI}, {SIGNER_ENDPOINT, NEW_SIGNER_ENDPOINT}};
    for (String[] pair : pairs) {
      String value = config.get(pair[0]);
      if (value != null && !config.containsKey(pair[1])) {
        if (out == null) {
          out = new HashMap<>(config);
        }
        out.put(pair[1], value);
      }
    }
    return out;
  }

  private static LoadTableResponse rebuilt(LoadTableResponse loaded, Map<String, String> config) {
    return LoadTableResponse.builder()
        .withTableMetadata(loaded.tableMetadata())
        .addAllConfig(config)
        .addAllCredentials(loaded.credentials())
        .build();
  }

  /** Whether this Iceberg's signer passes a remote-signing-config's properties and headers on (1.12+). */
  private static boolean icebergPassesSigningConfigOn() {
    try {
      Class.forName("org.apache.iceberg.rest.RemoteSigningConfig", false, RemoteSigning.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }
}
