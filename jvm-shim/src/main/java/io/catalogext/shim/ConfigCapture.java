package io.catalogext.shim;

import java.io.IOException;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ConfigResponseParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.DeserializationContext;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonDeserializer;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.module.SimpleModule;

/**
 * Iceberg 1.10's {@code ConfigResponseParser} drops the top-level {@code idempotency-key-lifetime}
 * of {@code GET /v1/config} (the field arrived with the spec change released in 1.11). This
 * deserializer reads it first and hands it to the catalog's {@link CommitGuard}, which only sends
 * {@code Idempotency-Key} headers to servers that advertise it. Everything else is parsed by
 * Iceberg unchanged.
 */
final class ConfigCapture extends JsonDeserializer<ConfigResponse> {
  static final String LIFETIME_FIELD = "idempotency-key-lifetime";

  private final ObservingRESTClient.CatalogState state;

  private ConfigCapture(ObservingRESTClient.CatalogState state) {
    this.state = state;
  }

  /** Registers the capture on {@code mapper} (after Iceberg's serializers, so it wins). */
  static ObjectMapper register(ObjectMapper mapper, ObservingRESTClient.CatalogState state) {
    mapper.registerModule(
        new SimpleModule("catalog-ext-config-capture-" + System.identityHashCode(state))
            .addDeserializer(ConfigResponse.class, new ConfigCapture(state)));
    return mapper;
  }

  @Override
  public ConfigResponse deserialize(JsonParser parser, DeserializationContext ctx) throws IOException {
    JsonNode node = parser.getCodec().readTree(parser);
    JsonNode lifetime = node == null ? null : node.get(LIFETIME_FIELD);
    if (lifetime == null || lifetime.isNull()) {
      // Tolerate servers that put it among the properties.
      for (String section : new String[] {"overrides", "defaults"}) {
        JsonNode props = node == null ? null : node.get(section);
        if (props != null && props.hasNonNull(LIFETIME_FIELD)) {
          lifetime = props.get(LIFETIME_FIELD);
          break;
        }
      }
    }
    CommitGuard.of(state).setIdempotencyKeyLifetime(
        lifetime != null && lifetime.isTextual() ? lifetime.asText() : null);
    return ConfigResponseParser.fromJson(node);
  }
}
