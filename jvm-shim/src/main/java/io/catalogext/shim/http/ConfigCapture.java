package io.catalogext.shim.http;

import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.Json;

import java.io.IOException;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ConfigResponseParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.DeserializationContext;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonDeserializer;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.module.SimpleModule;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Iceberg 1.10's {@code ConfigResponseParser} drops the top-level {@code idempotency-key-lifetime}
 * of {@code GET /v1/config} (the field arrived with the spec change released in 1.11). This
 * deserializer reads it first and hands it to the catalog's commit guard, which only sends
 * {@code Idempotency-Key} headers to servers that advertise it.
 *
 * <p>It also notes where {@code defaults} or {@code overrides} name URLs on origins the user did not
 * configure: Iceberg merges them into the catalog properties, and a request that would follow one
 * (the catalog's {@code uri}, an OAuth2 token URL, ...) is refused where it is sent, by the
 * {@link CatalogTransport}; the note lets that refusal say which key named it. Settings only the
 * user makes (a proxy, the S3 client factory: {@code UserOnlySettings}) are taken out of them.
 * Everything else is parsed by Iceberg unchanged.
 */
public final class ConfigCapture extends JsonDeserializer<ConfigResponse> {
  static final String LIFETIME_FIELD = "idempotency-key-lifetime";

  private final CatalogSession session;

  private ConfigCapture(CatalogSession session) {
    this.session = session;
  }

  /** Registers the capture for the catalog {@code session} on {@code mapper} (after Iceberg's serializers, so it wins). */
  public static ObjectMapper register(ObjectMapper mapper, CatalogSession session) {
    mapper.registerModule(
        new SimpleModule("catalog-ext-config-capture-" + System.identityHashCode(session))
            .addDeserializer(ConfigResponse.class, new ConfigCapture(session)));
    return mapper;
  }

  /** Notes the URLs {@code overrides}/{@code defaults} name on other origins than the user's. */
  private void noteServerUrls(JsonNode node) {
    for (String section : new String[] {"overrides", "defaults"}) {
      JsonNode props = node == null ? null : node.get(section);
      if (props instanceof ObjectNode) {
        session.trust.noteServerUrls("/v1/config " + section, Json.stringMap(props));
      }
    }
  }

  /**
   * Takes out of {@code overrides}/{@code defaults} what only the user sets (a proxy, a TLS
   * configurer, the S3 client factory): Iceberg would merge it into the catalog properties, from
   * which it builds the catalog's and the remote signer's HTTP clients and the tables' FileIOs.
   */
  private void dropUserOnlySettings(JsonNode node) {
    for (String section : new String[] {"overrides", "defaults"}) {
      JsonNode props = node == null ? null : node.get(section);
      if (props instanceof ObjectNode) {
        Json.stringMap(props).forEach((key, value) -> {
          if (session.userOnly.overrides(key, value)) {
            session.userOnly.ignored("/v1/config " + section, key);
            ((ObjectNode) props).remove(key);
          }
        });
        // Storage endpoints on untrusted origins: only for tables whose answers vend that store's credentials.
        ((ObjectNode) props).remove(session.endpoints.fromConfig(Json.stringMap(props)));
      }
    }
  }

  @Override
  public ConfigResponse deserialize(JsonParser parser, DeserializationContext ctx) throws IOException {
    JsonNode node = parser.getCodec().readTree(parser);
    noteServerUrls(node);
    dropUserOnlySettings(node);
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
    session.guard.setIdempotencyKeyLifetime(
        lifetime != null && lifetime.isTextual() ? lifetime.asText() : null);
    JsonNode top = node == null ? null : node.get(LIFETIME_FIELD);
    if (top != null && !parsesAsDuration(top) && node instanceof ObjectNode) {
      // Iceberg 1.11 on parses the field itself and refuses the whole catalog over a value Java's
      // Duration cannot read (a week, "P1W", is valid ISO-8601 but not to Java). The guard has
      // noted it and reconciles without idempotency; Iceberg gets the answer without it.
      ((ObjectNode) node).remove(LIFETIME_FIELD);
    }
    // An endpoint list without GET .../credentials does not rule it out: a list may leave out a route
    // the server serves (Polaris 1.4.1 does), so the refresh tries it once and remembers a 404.
    return ConfigResponseParser.fromJson(node);
  }

  private static boolean parsesAsDuration(JsonNode value) {
    if (!value.isTextual()) {
      return value.isNull();
    }
    try {
      Duration.parse(value.asText());
      return true;
    } catch (DateTimeParseException e) {
      return false;
    }
  }
}
