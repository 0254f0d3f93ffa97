package io.catalogext.shim.events;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Every event the tests emit matches resources/event-schemas.json: surefire sets system property
 * {@value EventSchemas#CHECK_PROPERTY}, so {@link EventLog} records each mismatch, and this
 * extension (registered for every test class through JUnit's extension auto-detection,
 * META-INF/services) fails the test that emitted it; after a class, what its setup and teardown
 * emitted.
 */
public final class EventSchemaExtension implements AfterEachCallback, AfterAllCallback {
  @Override
  public void afterEach(ExtensionContext context) {
    failOnViolations();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    failOnViolations();
  }

  private static void failOnViolations() {
    // test.*: the event pipeline's own probes (EventLogTest, PythonApiTest), as tests/conftest.py skips them
    List<String> found = EventLog.takeSchemaViolations().stream().filter(v -> !v.startsWith("test.")).collect(Collectors.toList());
    assertEquals(List.of(), found, "events that do not match resources/event-schemas.json");
  }
}
