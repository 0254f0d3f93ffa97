package io.catalogext.shim.refresh;

/** A clock that only moves when a test moves it (starts at the real time, like credentials do). */
public final class FakeClock implements Clock {
  private long now = System.currentTimeMillis();

  @Override
  public synchronized long nowMs() {
    return now;
  }

  @Override
  public void sleepMs(long ms) {
    advance(ms);
  }

  public synchronized void advance(long ms) {
    now += ms;
  }
}
