package io.catalogext.shim.config;

import io.catalogext.shim.commit.CommitPolicy;
import io.catalogext.shim.events.EventLog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * The JVM reads every {@code catalog-ext.*} knob as the shared spec says, in the words Python uses
 * (tests/unit/core/test_knobs.py checks the Python side against the same spec and the same format).
 */
public class KnobsTest {
  private static final String[] GROUPS = {"commit", "refresh", "events"};

  @Test
  void testIntKnobsRefuseOutOfRangeWithTheSharedMessage() {
    int checked = 0;
    for (String group : GROUPS) {
      for (String name : Knobs.names(group)) {
        JsonNode k = Knobs.knob(name);
        if (!k.get("type").asText().equals("int")) {
          continue;
        }
        long min = k.get("min").asLong();
        long max = k.get("max").asLong();
        String[] bad = max == Long.MAX_VALUE ? new String[] {Long.toString(min - 1), "fast"}
            : new String[] {Long.toString(min - 1), Long.toString(max + 1), "fast", "1.5"};
        for (String raw : bad) {
          IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
              () -> Knobs.longValue(Map.of(name, raw), name));
          assertEquals("Bad catalog property " + name + "='" + raw + "': use a whole number from " + min + " to " + max,
              e.getMessage(), name);
        }
        assertEquals(min, Knobs.longValue(Map.of(name, Long.toString(min)), name), name + " min");
        assertEquals(k.get("default").asLong(), Knobs.longValue(Map.of(), name), name + " default");
        checked++;
      }
    }
    assertTrue(checked >= 10, "int knobs checked: " + checked);
  }

  @Test
  void testChoicesAndFractions() {
    String mode = "catalog-ext.commit.idempotency";
    assertEquals("always", Knobs.choice(Map.of(mode, "ALWAYS"), mode), "case-insensitive");
    assertEquals("Bad catalog property " + mode + "='sometimes': use auto, always or never",
        assertThrows(IllegalArgumentException.class, () -> Knobs.choice(Map.of(mode, "sometimes"), mode)).getMessage(), "choice");
    String f = "catalog-ext.refresh.lifetime-fraction";
    assertEquals("Bad catalog property " + f + "='1': use a number from 0 up to (not including) 1",
        assertThrows(IllegalArgumentException.class, () -> Knobs.fractionValue(Map.of(f, "1"), f)).getMessage(), "fraction");
  }

  @Test
  void testTheRuntimeDefaultsAreTheSpecDefaults() {
    RefreshPolicy p = RefreshPolicy.fromProperties(Map.of());
    assertEquals(Knobs.knob("catalog-ext.refresh.min-ahead-ms").get("default").asLong(), p.minAheadMs, "min-ahead");
    assertEquals(Knobs.knob("catalog-ext.refresh.lifetime-fraction").get("default").asDouble(), p.fraction, "fraction");
    assertEquals(Knobs.knob("catalog-ext.refresh.timeout-ms").get("default").asLong(), p.timeoutMs, "timeout");
    assertEquals(Knobs.knob("catalog-ext.events.jsonl-max-bytes").get("default").asLong(), EventLog.DEFAULT_MAX_BYTES, "events");
  }

  @Test
  void testZeroBaseDelayIsAcceptedAsInPython() {
    Map<String, String> props = new HashMap<>();
    props.put("catalog-ext.commit.base-delay-ms", "0");
    CommitPolicy.fromProperties(props); // no exception: 0 = no wait
  }

  @Test
  void testABadRefreshPropertyFailsWithTheSharedMessage() {
    String name = "catalog-ext.refresh.check-interval-ms";
    assertEquals("Bad catalog property " + name + "='0': use a whole number from 1 to 3600000",
        assertThrows(IllegalArgumentException.class, () -> RefreshPolicy.fromProperties(Map.of(name, "0"))).getMessage(),
        "refresh");
  }
}
