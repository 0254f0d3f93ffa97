package io.catalogext.shim;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/** The facade Python calls answers in the shapes pyspark_catalog_ext.spark.shim_api parses. */
public class PythonApiTest {
  public void testDrainedEventsCarryTheHeaderPythonParses() {
    long before = Json.read(EventLog.stats()).get("last_seq").asLong();
    EventLog.emit("test.python_api", EventLog.fields().put("table", "lake.db.t"));
    JsonNode drained = Json.read(PythonApi.drainEventsAfter(before));
    JsonNode event = drained.get("events").get(drained.get("events").size() - 1);
    Check.equal("test.python_api", event.get("type").asText(), "type");
    Check.isTrue(event.get("seq").asLong() > before && event.has("time"), "seq and time: " + event);
    Check.equal("lake.db.t", event.get("table").asText(), "fields kept");
    Check.isTrue(drained.has("lost"), "lost count present");
  }

  public void testPluginStatsAndRegistryAreJson() {
    JsonNode stats = Json.read(PythonApi.pluginStats());
    Check.isTrue(stats.get("served").isNumber() && stats.get("refused").isNumber(), "served/refused: " + stats);
    Check.isTrue(Json.read(PythonApi.registryEntries()).isArray(), "registry entries are a JSON array");
  }

  public void testEveryPublicMethodIsStatic() {
    for (Method m : PythonApi.class.getDeclaredMethods()) {
      if (Modifier.isPublic(m.getModifiers())) {
        Check.isTrue(Modifier.isStatic(m.getModifiers()), m.getName() + " must be static: Python calls the class");
      }
    }
  }
}
