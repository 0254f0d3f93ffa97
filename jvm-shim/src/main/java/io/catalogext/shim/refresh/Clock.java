package io.catalogext.shim.refresh;

/** The time the refresh goes by: the wall clock, or a test's. */
public interface Clock {
  long nowMs();

  /** Waits (a fake clock in tests just moves on). */
  default void sleepMs(long ms) throws InterruptedException {
    Thread.sleep(ms);
  }
}
