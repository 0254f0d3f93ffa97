package io.catalogext.shim;

/** A clock that only moves when a test moves it (starts at the real time, like credentials do). */
final class FakeClock implements TableEntry.Clock {
  private long now = System.currentTimeMillis();

  @Override
  public synchronized long nowMs() {
    return now;
  }

  @Override
  public void sleepMs(long ms) {
    advance(ms);
  }

  synchronized void advance(long ms) {
    now += ms;
  }
}
