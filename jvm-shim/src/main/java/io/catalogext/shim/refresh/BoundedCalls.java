package io.catalogext.shim.refresh;

import io.catalogext.shim.util.DaemonThreads;

import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.Semaphore;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs a refresh call (a catalog, a Python source, an executor's ask of the driver) with a time
 * limit, on daemon threads: a hung call costs its caller {@code timeoutMs}, never more, and never
 * stops the JVM.
 *
 * <p>Calls are limited per <em>key</em> (a catalog name, or the driver for an executor): a hung
 * call keeps its thread, and its permit, until the socket gives up, so one stuck catalog can use up
 * only its own permits and never starves another catalog's refreshes. The threads are therefore
 * bounded by {@link #MAX_PER_KEY} x the keys in use, and the keys by {@link #MAX_KEYS}.
 */
public final class BoundedCalls {
  /** Calls of one key running at once; more wait (within their timeout) for one to end. */
  static final int MAX_PER_KEY = 8;
  /** Distinct keys (catalogs are configured, not data-driven); any beyond share one set of permits. */
  static final int MAX_KEYS = 256;

  private static final String OVERFLOW_KEY = "(other catalogs)";
  // Process-wide, by catalog name: a hung call keeps its permit past its session's life (a
  // re-initialised catalog of the same name must not get 8 fresh threads per hang).
  private static final Map<String, Semaphore> PERMITS = new ConcurrentHashMap<>();

  /** Unbounded in itself: every task holds one of its key's permits, which bound the threads. */
  private static final ThreadPoolExecutor POOL =
      new ThreadPoolExecutor(
          0,
          Integer.MAX_VALUE,
          30,
          TimeUnit.SECONDS,
          new SynchronousQueue<>(),
          DaemonThreads.named("catalog-ext-refresh-call"));

  private BoundedCalls() {}

  private static Semaphore permits(String key) {
    Semaphore s = PERMITS.get(key);
    if (s != null) {
      return s;
    }
    String k = PERMITS.size() < MAX_KEYS ? key : OVERFLOW_KEY;
    return PERMITS.computeIfAbsent(k, x -> new Semaphore(MAX_PER_KEY));
  }

  /**
   * Runs {@code call} under {@code key}'s permits (a name for messages: "catalog lake") and waits at most {@code timeoutMs} in all (for a
   * permit and for the answer). Throws the call's own exception, or one naming {@code what} and
   * the timeout property.
   */
  public static <T> T call(String key, Callable<T> call, long timeoutMs, String what) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    Semaphore permits = permits(key);
    if (!permits.tryAcquire(timeoutMs, TimeUnit.MILLISECONDS)) {
      throw new IllegalStateException(
          MAX_PER_KEY + " refresh calls to " + key + " are still running (hung?); " + what
              + " not started within " + timeoutMs + " ms (catalog-ext.refresh.timeout-ms)");
    }
    FutureTask<T> future = new FutureTask<>(call);
    try {
      POOL.execute(
          () -> {
            try {
              future.run(); // does nothing if its caller already gave up
            } finally {
              permits.release(); // only when the call really ends, not when its caller gives up
            }
          });
    } catch (RuntimeException | Error e) {
      permits.release();
      throw e;
    }
    try {
      return future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      throw new IllegalStateException(what + " timed out after " + timeoutMs + " ms (catalog-ext.refresh.timeout-ms)");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof Exception) {
        throw (Exception) cause;
      }
      throw new IllegalStateException(what + " failed: " + cause, cause);
    }
  }
}
