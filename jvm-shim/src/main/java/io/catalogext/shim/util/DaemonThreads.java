package io.catalogext.shim.util;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/** Threads the shim starts are daemons, so they never keep a finished job's JVM alive. */
public final class DaemonThreads {
  private DaemonThreads() {}

  /** A factory of daemon threads named {@code name-1}, {@code name-2}, ... */
  public static ThreadFactory named(String name) {
    AtomicInteger count = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + count.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
