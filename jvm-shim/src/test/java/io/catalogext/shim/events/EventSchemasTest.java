package io.catalogext.shim.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** resources/event-schemas.json's check of JVM events, and that the test suite runs it on every emit. */
public class EventSchemasTest {
  private final EventSchemas schemas = EventSchemas.load();

  private static ObjectNode rejected() {
    ObjectNode e = EventLog.fields();
    e.put("table", "lake.db.t");
    e.put("catalog", "lake");
    e.put("error_code", "ExpiredToken");
    e.put("key_age_ms", 1200L);
    e.putNull("stated_lifetime_ms");
    e.put("reactive_refresh", true);
    return e;
  }

  private void assertOne(String problem, String type, ObjectNode fields) {
    List<String> found = schemas.violations(type, fields);
    assertTrue(found.size() == 1 && found.get(0).contains(problem), found.toString());
  }

  @Test
  void testAMatchingEventHasNoViolation() {
    assertEquals(List.of(), schemas.violations("credentials.rejected", rejected()));
    assertOne("field 'source' is the envelope's", "credentials.rejected", rejected().put("source", "s3"));
  }

  @Test
  void testEachKindOfMismatchIsFound() {
    assertOne("unknown event type", "credentials.refused", rejected());
    assertOne("emitted by jvm", "answer.keys-dropped", EventLog.fields());
    ObjectNode missing = rejected();
    missing.remove("stated_lifetime_ms");
    assertOne("missing required field 'stated_lifetime_ms'", "credentials.rejected", missing);
    assertOne("unexpected field 'reactive_refresh_started'", "credentials.rejected", rejected().put("reactive_refresh_started", true));
    assertOne("not integer", "credentials.rejected", rejected().put("key_age_ms", "1200"));
    assertOne("is null", "credentials.rejected", rejected().putNull("table"));
    assertOne("not one of", "clock.skew", EventLog.fields().put("catalog", "lake").put("server", "gcs").put("skew_ms", 9000L));
    ObjectNode ids = EventLog.fields().put("catalog_session", "s").put("table", "lake.db.t");
    ids.putArray("snapshot_ids").add("1");
    assertOne("holds an item that is not integer", "commit.started", ids);
  }

  @Test
  void testTheSuiteChecksEveryEmittedEvent() {
    assertTrue(Boolean.getBoolean(EventSchemas.CHECK_PROPERTY), "surefire sets " + EventSchemas.CHECK_PROPERTY);
    EventLog.emit("test.not-in-the-schema", EventLog.fields());
    List<String> found = EventLog.takeSchemaViolations(); // taken here, so EventSchemaExtension sees none
    assertEquals(List.of("test.not-in-the-schema: unknown event type (add it to resources/event-schemas.json)"), found);
  }

  @Test
  void testAJvmInASubprocessReportsThroughTheViolationsFile(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("violations.log"); // what tests/conftest.py reads after each test
    System.setProperty(EventSchemas.VIOLATIONS_FILE_PROPERTY, file.toString());
    try {
      EventLog.emit("test.not-in-the-schema", EventLog.fields());
    } finally {
      System.clearProperty(EventSchemas.VIOLATIONS_FILE_PROPERTY);
      EventLog.takeSchemaViolations();
    }
    EventLog.emit("test.not-in-the-schema", EventLog.fields()); // no file named: the list only
    assertEquals(1, EventLog.takeSchemaViolations().size());
    assertEquals(List.of("test.not-in-the-schema: unknown event type (add it to resources/event-schemas.json)"),
        Files.readAllLines(file, StandardCharsets.UTF_8));
  }
}
