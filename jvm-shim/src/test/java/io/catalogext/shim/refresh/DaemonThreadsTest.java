package io.catalogext.shim.refresh;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.Test;

/** Threads the shim starts never keep a finished job's JVM alive. */
public class DaemonThreadsTest {
  @Test
  void testEveryShimThreadIsADaemon() throws Exception {
    CredentialRegistry.get(); // starts the ticker
    assertEquals("done", BoundedCalls.call("a test", () -> "done", 5_000, "a test call"), "bounded call");
    long shimThreads = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("catalog-ext-")) {
        shimThreads++;
        assertTrue(t.isDaemon(), t.getName() + " is not a daemon");
      }
    }
    assertTrue(shimThreads >= 2, "expected the ticker and a call thread, saw " + shimThreads);
  }
}
