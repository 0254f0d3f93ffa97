package io.catalogext.shim.events;

import io.catalogext.shim.config.SharedSpecs;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * The schema of every event either runtime emits ({@code resources/event-schemas.json}, shared with
 * the Python package's {@code pyspark_catalog_ext/event_schemas.py}, which renders it into
 * docs/events.md). {@link #violations} checks one JVM event against it; {@link EventLog} does so for
 * every event when system property {@value #CHECK_PROPERTY} is true (the test suites set it).
 *
 * <p>Python twin: {@code pyspark_catalog_ext.event_schemas}.
 */
public final class EventSchemas {
  /** System property: hold every emitted event to the schema and record what does not match (tests). */
  public static final String CHECK_PROPERTY = "catalogext.events.check-schema";
  /**
   * System property: a file each mismatch is also appended to, one line each, so a test reads what a
   * JVM it started in a subprocess (spark-submit, a Connect server, an executor) found.
   */
  public static final String VIOLATIONS_FILE_PROPERTY = "catalogext.events.violations-file";
  static final String RESOURCE = "/io/catalogext/shim/event-schemas.json";
  private static final String RUNTIME = "jvm";

  private final Map<String, JsonNode> byType = new HashMap<>();
  private final Set<String> envelope = new HashSet<>();

  EventSchemas(JsonNode spec) {
    for (JsonNode e : spec.get("events")) {
      byType.put(e.get("type").asText(), e);
    }
    spec.get("envelope").forEach(n -> envelope.add(n.asText()));
  }

  static EventSchemas load() {
    return new EventSchemas(SharedSpecs.read(RESOURCE));
  }

  /** What is wrong with JVM event {@code type} carrying {@code fields} (as emitted: no envelope), one line each. */
  public List<String> violations(String type, JsonNode fields) {
    List<String> found = new ArrayList<>();
    JsonNode schema = byType.get(type);
    if (schema == null) {
      found.add(type + ": unknown event type (add it to resources/event-schemas.json)");
      return found;
    }
    if (!contains(schema.get("runtimes"), RUNTIME)) {
      found.add(type + ": emitted by jvm, but the schema names only " + schema.get("runtimes"));
      return found;
    }
    Map<String, JsonNode> allowed = new HashMap<>();
    for (Iterator<String> it = schema.get("fields").fieldNames(); it.hasNext(); ) {
      String name = it.next();
      JsonNode spec = schema.get("fields").get(name);
      if (contains(spec.has("runtimes") ? spec.get("runtimes") : schema.get("runtimes"), RUNTIME)) {
        allowed.put(name, spec);
      }
    }
    for (Iterator<String> names = fields.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (envelope.contains(name)) { // EventLog sets it: an emitter's own would overwrite it, or be lost
        found.add(type + " (jvm): field '" + name + "' is the envelope's (each runtime sets it)");
      } else if (!allowed.containsKey(name)) {
        found.add(type + " (jvm): unexpected field '" + name + "'");
      }
    }
    for (Map.Entry<String, JsonNode> field : allowed.entrySet()) {
      String name = field.getKey();
      JsonNode spec = field.getValue();
      JsonNode value = fields.get(name);
      if (value == null) {
        if (spec.get("required").asBoolean()) {
          found.add(type + " (jvm): missing required field '" + name + "'");
        }
      } else if (value.isNull()) {
        if (!spec.get("nullable").asBoolean()) {
          found.add(type + " (jvm): field '" + name + "' is null, which the schema does not allow");
        }
      } else if (!is(value, spec.get("type").asText())) {
        found.add(type + " (jvm): field '" + name + "' is " + value.getNodeType() + " " + value + ", not " + spec.get("type").asText());
      } else if (spec.has("values") && !contains(spec.get("values"), value.asText())) {
        found.add(type + " (jvm): field '" + name + "' is " + value + ", not one of " + spec.get("values"));
      } else if (spec.has("items")) {
        for (JsonNode item : value) {
          if (!is(item, spec.get("items").get("type").asText())) {
            found.add(type + " (jvm): field '" + name + "' holds an item that is not " + spec.get("items").get("type").asText());
            break;
          }
        }
      }
    }
    return found;
  }

  private static boolean is(JsonNode value, String type) {
    switch (type) {
      case "string": return value.isTextual();
      case "integer": return value.isIntegralNumber();
      case "number": return value.isNumber();
      case "boolean": return value.isBoolean();
      case "array": return value.isArray();
      case "object": return value.isObject();
      default: return false;
    }
  }

  private static boolean contains(JsonNode array, String text) {
    for (JsonNode n : array) {
      if (n.asText().equals(text)) {
        return true;
      }
    }
    return false;
  }
}
