package io.catalogext.shim.wire;

import java.io.IOException;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.DeserializationContext;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonDeserializer;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.module.SimpleModule;

/**
 * Any JSON answer, kept as a tree: Iceberg's client parses every answer into a RESTResponse class,
 * and a route outside Iceberg's spec (Polaris's policy API) has none. {@link RestJson}'s mapper
 * reads it ({@link #module}).
 */
public final class RawJson implements RESTResponse {
  public final JsonNode body;

  RawJson(JsonNode body) {
    this.body = body;
  }

  @Override
  public void validate() {}

  /** Deserializes {@link RawJson} from any JSON value. */
  static SimpleModule module() {
    return new SimpleModule("catalog-ext-raw-json")
        .addDeserializer(RawJson.class, new JsonDeserializer<RawJson>() {
          @Override
          public RawJson deserialize(JsonParser parser, DeserializationContext ctx) throws IOException {
            return new RawJson(parser.getCodec().readTree(parser));
          }
        });
  }
}
