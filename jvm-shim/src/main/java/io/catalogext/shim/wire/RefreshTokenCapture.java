package io.catalogext.shim.wire;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.config.TrustRules;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.rest.responses.LoadCredentialsResponse;
import org.apache.iceberg.rest.responses.LoadCredentialsResponseParser;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.rest.responses.LoadTableResponseParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.DeserializationContext;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonDeserializer;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.module.SimpleModule;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the shim reads every LoadTable and LoadCredentials answer before Iceberg's parser (the
 * catalog's HTTP client reads with {@link RestJson#restMapper()}), so each quirk of the storage-credentials
 * list is handled here, once:
 *
 * <ul>
 *   <li>Iceberg's parser drops the proposed {@code storage-refresh-token} field of a
 *       StorageCredential (spec PR 15280): it is moved into the credential's config under a private
 *       key; {@link HandOuts} takes it out again, so the token reaches the driver
 *       registry and never a FileIO.
 *   <li>An entry with an empty config (lakekeeper#1923) makes Iceberg 1.10 reject the whole answer
 *       ("Invalid config: must be non-empty"), so every table load failed: such entries carry no
 *       credentials and are dropped.
 *   <li>Iceberg 1.12's {@code remote-signing-config} field (apache/iceberg#16822), which 1.10's
 *       parser drops: it is kept in the table config under a private key, and {@link
 *       RemoteSigning} turns it into the {@code s3.signer.*} properties 1.10's signer client reads.
 *   <li>Table metadata properties that name code ({@code write.location-provider.impl}, any key
 *       {@code trust-rules.json} lists as such) are removed before Iceberg parses the metadata.
 * </ul>
 */
public final class RefreshTokenCapture extends JsonDeserializer<LoadTableResponse> {
  public static final String TOKEN_FIELD = "storage-refresh-token";
  private static final Logger LOG = LoggerFactory.getLogger(RefreshTokenCapture.class);

  public static SimpleModule module() {
    return new SimpleModule("catalog-ext-refresh-token-capture")
        .addDeserializer(LoadTableResponse.class, new RefreshTokenCapture())
        .addDeserializer(LoadCredentialsResponse.class, new CredentialsCapture());
  }

  /** The same for {@code GET .../credentials} answers (the refresh-token strategy rotates tokens). */
  static final class CredentialsCapture extends JsonDeserializer<LoadCredentialsResponse> {
    @Override
    public LoadCredentialsResponse deserialize(JsonParser parser, DeserializationContext ctx) throws IOException {
      JsonNode node = parser.getCodec().readTree(parser);
      capture(node);
      return LoadCredentialsResponseParser.fromJson(node);
    }
  }

  @Override
  public LoadTableResponse deserialize(JsonParser parser, DeserializationContext ctx)
      throws IOException {
    JsonNode node = parser.getCodec().readTree(parser);
    capture(node);
    dropCodeProperties(node);
    return LoadTableResponseParser.fromJson(node);
  }

  /**
   * Takes out of the table's metadata properties those that name code ({@code write.location-provider.impl}):
   * any table writer sets them, and Iceberg would load the class they name at the next write.
   */
  static void dropCodeProperties(JsonNode node) {
    JsonNode metadata = node == null ? null : node.get("metadata");
    JsonNode properties = metadata == null ? null : metadata.get("properties");
    if (!(properties instanceof ObjectNode)) {
      return;
    }
    List<String> named = new ArrayList<>();
    properties.fieldNames().forEachRemaining(key -> {
      if (TrustRules.isMetadataCodeKey(key)) {
        named.add(key);
      }
    });
    if (!named.isEmpty()) {
      ((ObjectNode) properties).remove(named);
      LOG.warn("catalog-ext: ignoring table metadata properties {}: a table's properties never name code a client loads",
          named);
    }
  }

  private static void capture(JsonNode node) {
    JsonNode signing = node.get(RemoteSigning.FIELD);
    if (signing != null && signing.isObject()) {
      JsonNode config = node.get("config");
      if (config == null || !config.isObject()) {
        config = ((ObjectNode) node).putObject("config");
      }
      ((ObjectNode) config).put(ShimKeys.CAPTURED_SIGNING_CONFIG, signing.toString());
    }
    JsonNode credentials = node.get("storage-credentials");
    if (credentials != null && credentials.isArray()) {
      ArrayNode entries = (ArrayNode) credentials;
      for (int i = entries.size() - 1; i >= 0; i--) {
        JsonNode config = entries.get(i).get("config");
        if (config == null || (config.isObject() && config.isEmpty())) {
          entries.remove(i); // lakekeeper#1923: an entry without credentials
        }
      }
      for (JsonNode credential : credentials) {
        JsonNode token = credential.get(TOKEN_FIELD);
        JsonNode config = credential.get("config");
        if (token != null && token.isTextual() && config instanceof ObjectNode) {
          ((ObjectNode) config).put(ShimKeys.CAPTURED_REFRESH_TOKEN, token.asText());
        }
      }
    }
  }
}
