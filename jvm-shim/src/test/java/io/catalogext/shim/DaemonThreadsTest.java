package io.catalogext.shim;

/** Threads the shim starts never keep a finished job's JVM alive. */
public class DaemonThreadsTest {
  public void testEveryShimThreadIsADaemon() throws Exception {
    CredentialRegistry.get(); // starts the ticker
    Check.equal("done", BoundedCalls.call("a test", () -> "done", 5_000, "a test call"), "bounded call");
    long shimThreads = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("catalog-ext-")) {
        shimThreads++;
        Check.isTrue(t.isDaemon(), t.getName() + " is not a daemon");
      }
    }
    Check.isTrue(shimThreads >= 2, "expected the ticker and a call thread, saw " + shimThreads);
  }
}
