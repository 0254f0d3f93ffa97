package io.catalogext.shim;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs a refresh call (the catalog, a Python source) with a time limit, on a small pool of daemon
 * threads: a hung call costs its caller {@code timeoutMs}, never more, and never stops the JVM.
 */
final class BoundedCalls {
  /** At most this many calls at once; more means the sources are stuck, and callers fail fast. */
  static final int MAX_CONCURRENT = 16;

  private static final ThreadPoolExecutor POOL =
      new ThreadPoolExecutor(
          0,
          MAX_CONCURRENT,
          30,
          TimeUnit.SECONDS,
          new SynchronousQueue<>(),
          DaemonThreads.named("catalog-ext-refresh-call"));

  private BoundedCalls() {}

  static <T> T call(Callable<T> call, long timeoutMs, String what) throws Exception {
    Future<T> future;
    try {
      future = POOL.submit(call);
    } catch (RejectedExecutionException e) {
      throw new IllegalStateException(MAX_CONCURRENT + " refresh calls are already waiting; " + what + " not started");
    }
    try {
      return future.get(timeoutMs, TimeUnit.MILLISECONDS);
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
