package io.catalogext.shim;

import java.io.IOException;
import org.apache.iceberg.rest.responses.LoadCredentialsResponse;
import org.apache.iceberg.rest.responses.LoadCredentialsResponseParser;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.rest.responses.LoadTableResponseParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.DeserializationContext;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonDeserializer;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.module.SimpleModule;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Iceberg's parser drops the proposed {@code storage-refresh-token} field of a StorageCredential
 * (spec PR 15280). This deserializer moves it into the credential's config under a private key
 * before Iceberg parses the response; {@link ObservingRESTClient} takes it out again, so the token
 * reaches the driver registry and never a FileIO.
 */
final class RefreshTokenCapture extends JsonDeserializer<LoadTableResponse> {
  static final String TOKEN_FIELD = "storage-refresh-token";

  static SimpleModule module() {
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
    return LoadTableResponseParser.fromJson(node);
  }

  private static void capture(JsonNode node) {
    JsonNode credentials = node.get("storage-credentials");
    if (credentials != null && credentials.isArray()) {
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
