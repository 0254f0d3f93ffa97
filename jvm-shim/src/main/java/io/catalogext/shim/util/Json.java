package io.catalogext.shim.util;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * JSON through the Jackson that the Iceberg runtime shades, so the shim adds no dependency of its
 * own: every runtime jar (PyPI wheel or Maven) carries the same relocated classes.
 */
public final class Json {
  private Json() {}

  /** A plain mapper for the shim's own messages (Python bridge, driver channel); the catalog's
   * REST answers are read with {@code wire.RestJson}, Iceberg's own mapper. */
  public static final ObjectMapper MAPPER = new ObjectMapper();

  public static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  public static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (Exception e) {
      throw new IllegalStateException("cannot serialize " + value.getClass().getSimpleName(), e);
    }
  }

  public static JsonNode read(String json) {
    try {
      return MAPPER.readTree(json);
    } catch (Exception e) {
      // The parser's message can echo input; keep only the type.
      throw new IllegalArgumentException("malformed JSON (" + e.getClass().getSimpleName() + ")");
    }
  }

  /** A message's UTF-8 bytes, parsed in place: no String copy of a message read on every ask. */
  public static JsonNode read(byte[] json) {
    try {
      return MAPPER.readTree(json);
    } catch (Exception e) {
      throw new IllegalArgumentException("malformed JSON (" + e.getClass().getSimpleName() + ")");
    }
  }

  public static Map<String, String> stringMap(JsonNode node) {
    Map<String, String> out = new LinkedHashMap<>();
    if (node != null && node.isObject()) {
      // properties(), not fields(): fields() is deprecated in the Jackson that Iceberg 1.12 shades.
      for (Map.Entry<String, JsonNode> field : node.properties()) {
        if (!field.getValue().isNull()) {
          out.put(field.getKey(), field.getValue().asText());
        }
      }
    }
    return out;
  }

  public static ObjectNode fromMap(Map<String, String> map) {
    ObjectNode node = object();
    map.forEach(node::put);
    return node;
  }
}
