package io.catalogext.shim.config;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * The {@code catalog-ext.*} catalog properties, read from the spec both runtimes share
 * ({@code pyspark_catalog_ext/resources/catalog-ext-knobs.json}, copied into this jar under the shim's root
 * package by the build). Defaults, ranges and the one-line error for a bad value come from it, so a
 * setting means the same here and in PyIceberg ({@code pyspark_catalog_ext.knobs}).
 */
public final class Knobs {
  static final String RESOURCE = "/io/catalogext/shim/catalog-ext-knobs.json";
  private static final Map<String, JsonNode> SPEC = load();

  private Knobs() {}

  private static Map<String, JsonNode> load() {
    Map<String, JsonNode> byName = new LinkedHashMap<>();
    for (JsonNode k : SharedSpecs.read(RESOURCE).get("knobs")) {
      byName.put(k.get("name").asText(), k);
    }
    return Collections.unmodifiableMap(byName);
  }

  static JsonNode knob(String name) {
    JsonNode k = SPEC.get(name);
    if (k == null) {
      throw new IllegalStateException(name + " is not in " + RESOURCE); // a bug: every knob is in the spec
    }
    return k;
  }

  /** Every knob name under {@code catalog-ext.<group>.}. */
  public static Set<String> names(String group) {
    Set<String> out = new TreeSet<>();
    for (String name : SPEC.keySet()) {
      if (name.startsWith("catalog-ext." + group + ".")) {
        out.add(name);
      }
    }
    return out;
  }

  /** The one-line error for a bad value, word for word what Python says (knobs.bad_value_message). */
  static String badValue(String name, String raw) {
    JsonNode k = knob(name);
    String allowed;
    switch (k.get("type").asText()) {
      case "int":
        allowed = "use a whole number from " + k.get("min").asLong() + " to " + k.get("max").asLong();
        break;
      case "fraction":
        allowed = "use a number from " + number(k.get("min")) + " up to (not including) " + number(k.get("max"));
        break;
      default:
        StringBuilder b = new StringBuilder("use ");
        JsonNode choices = k.get("choices");
        for (int i = 0; i < choices.size(); i++) {
          b.append(i == 0 ? "" : i == choices.size() - 1 ? " or " : ", ").append(choices.get(i).asText());
        }
        allowed = b.toString();
    }
    return "Bad catalog property " + name + "='" + raw + "': " + allowed;
  }

  private static String number(JsonNode n) {
    double d = n.asDouble();
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }

  private static String raw(Map<String, String> props, String name) {
    String v = props.get(name);
    return v == null || v.trim().isEmpty() ? null : v.trim();
  }

  /** An int knob: its value, or the spec's default when unset. */
  public static long longValue(Map<String, String> props, String name) {
    JsonNode k = knob(name);
    String v = raw(props, name);
    if (v == null) {
      return k.get("default").asLong();
    }
    try {
      long parsed = Long.parseLong(v);
      checkRange(name, v, parsed >= k.get("min").asLong() && parsed <= k.get("max").asLong());
      return parsed;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(badValue(name, v));
    }
  }

  /** A fraction knob in [min, max). */
  public static double fractionValue(Map<String, String> props, String name) {
    JsonNode k = knob(name);
    String v = raw(props, name);
    if (v == null) {
      return k.get("default").asDouble();
    }
    try {
      double parsed = Double.parseDouble(v);
      checkRange(name, v, parsed >= k.get("min").asDouble() && parsed < k.get("max").asDouble());
      return parsed;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(badValue(name, v));
    }
  }

  private static void checkRange(String name, String raw, boolean inRange) {
    if (!inRange) {
      throw new IllegalArgumentException(badValue(name, raw));
    }
  }

  /** A choice knob, case-insensitive; returns the spec's spelling. */
  public static String choice(Map<String, String> props, String name) {
    JsonNode k = knob(name);
    String v = raw(props, name);
    if (v == null) {
      return k.get("default").asText();
    }
    for (JsonNode c : k.get("choices")) {
      if (c.asText().equals(v.toLowerCase(Locale.ROOT))) {
        return c.asText();
      }
    }
    throw new IllegalArgumentException(badValue(name, v));
  }
}
