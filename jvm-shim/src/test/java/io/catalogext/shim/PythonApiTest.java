package io.catalogext.shim;

import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/** The facade Python calls answers in the shapes pyspark_catalog_ext.spark.shim_api parses. */
public class PythonApiTest {
  @Test
  void testDrainedEventsCarryTheHeaderPythonParses() {
    long before = Json.read(EventLog.stats()).get("last_seq").asLong();
    EventLog.emit("test.python_api", EventLog.fields().put("table", "lake.db.t"));
    JsonNode drained = Json.read(PythonApi.drainEventsAfter(before));
    JsonNode event = drained.get("events").get(drained.get("events").size() - 1);
    assertEquals("test.python_api", event.get("type").asText(), "type");
    assertTrue(event.get("seq").asLong() > before && event.has("time"), "seq and time: " + event);
    assertEquals("lake.db.t", event.get("table").asText(), "fields kept");
    assertTrue(drained.has("lost"), "lost count present");
  }

  @Test
  void testPluginStatsAndRegistryAreJson() {
    JsonNode stats = Json.read(PythonApi.pluginStats());
    assertTrue(stats.get("served").isNumber() && stats.get("refused").isNumber(), "served/refused: " + stats);
    assertTrue(Json.read(PythonApi.registryEntries()).isArray(), "registry entries are a JSON array");
  }

  @Test
  void testEveryPublicMethodIsStatic() {
    for (Method m : PythonApi.class.getDeclaredMethods()) {
      if (Modifier.isPublic(m.getModifiers())) {
        assertTrue(Modifier.isStatic(m.getModifiers()), m.getName() + " must be static: Python calls the class");
      }
    }
  }
}
