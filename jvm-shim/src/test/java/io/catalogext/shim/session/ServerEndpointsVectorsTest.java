package io.catalogext.shim.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.catalogext.shim.config.TrustRules;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * The endpoint vectors of {@code trust-rules.json} replayed in the JVM, as
 * {@code tests/unit/catalog/test_server_settings.py} replays them in Python: where each endpoint setting
 * sends, and which stores a table answer issues credentials for.
 */
public class ServerEndpointsVectorsTest {
  private static final JsonNode SPEC = TrustRules.spec().path("endpoint-vectors");

  private static Map<String, String> strings(JsonNode object) {
    Map<String, String> out = new LinkedHashMap<>();
    object.fieldNames().forEachRemaining(name -> out.put(name, object.get(name).asText()));
    return out;
  }

  @Test
  void testWhereEachEndpointSettingSends() {
    assertTrue(SPEC.path("urls").size() >= 10, "the vectors are there");
    for (JsonNode c : SPEC.path("urls")) {
      String key = c.path("key").asText();
      String value = c.path("value").asText();
      Map<String, String> props = strings(c.path("props"));
      props.put(key, value);
      List<String> wanted = new ArrayList<>();
      c.path("urls").forEach(u -> wanted.add(u.asText()));
      assertEquals(wanted, ServerEndpoints.endpointUrls(key, value, props), c.toString());
    }
  }

  @Test
  void testWhichStoresAnAnswerIssues() {
    assertTrue(SPEC.path("issued").size() >= 10, "the vectors are there");
    for (JsonNode c : SPEC.path("issued")) {
      List<String> wanted = new ArrayList<>();
      c.path("stores").forEach(s -> wanted.add(s.asText()));
      Map<String, String> answer = strings(c.path("answer"));
      assertEquals(wanted, new ArrayList<>(new TreeSet<>(ServerEndpoints.issuedStores(answer, List.of()))), c.toString());
    }
  }
}
