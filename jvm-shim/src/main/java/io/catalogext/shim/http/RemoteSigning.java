package io.catalogext.shim.http;

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

  private RemoteSigning() {}

  /**
   * The answer with {@code remote-signing-config} translated (or unchanged without one).
   *
   * @throws IllegalStateException one line, when the catalog asks for sign-request properties or
   *     headers, which Iceberg 1.10's signer client cannot send
   */
  static LoadTableResponse translate(LoadTableResponse loaded, TablePath path, RESTRequest body) {
    String captured = loaded.config().get(ShimKeys.CAPTURED_SIGNING_CONFIG);
    if (captured == null) {
      return loaded;
    }
    Map<String, String> config = new HashMap<>(loaded.config());
    config.remove(ShimKeys.CAPTURED_SIGNING_CONFIG);
    JsonNode signing;
    try {
      signing = Json.restMapper().readTree(captured);
    } catch (Exception e) {
      throw new IllegalStateException("the catalog's remote-signing-config is not a JSON object", e);
    }
    for (String passOn : new String[] {"properties", "headers"}) {
      JsonNode node = signing.get(passOn);
      if (node != null && node.size() > 0) {
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
    return LoadTableResponse.builder()
        .withTableMetadata(loaded.tableMetadata())
        .addAllConfig(config)
        .addAllCredentials(loaded.credentials())
        .build();
  }
}
