package io.catalogext.shim.refresh;

import io.catalogext.shim.util.DaemonThreads;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import software.amazon.awssdk.core.SdkRequest;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;

/**
 * {@link RejectionRetries} for the {@link S3AsyncClient}, which S3FileIO reads through when
 * {@code s3.analytics-accelerator.enabled} is set (Iceberg 1.10+; the accelerator library ships in
 * {@code iceberg-aws-bundle}): a call whose future fails because S3 says the keys are no longer
 * valid marks them stale, waits for new ones and is sent again, and the caller's future completes
 * with the retry's answer. Same codes, same HEAD probe, same bounds as the sync client.
 *
 * <p>Waiting for new keys blocks (up to timeout-ms), so it never runs on the SDK's completion
 * thread (a Netty event loop): it runs on a small pool of daemon threads, shared by every async
 * client of the JVM. Calls that upload a body ({@link AsyncRequestBody}) are not sent again (a body
 * publisher may not be replayable); S3FileIO writes through the sync client anyway.
 */
public final class AsyncRejectionRetries implements InvocationHandler {
  /** Threads that wait for new keys; a rejection wave is one refresh, so a few suffice. */
  private static final int WAITERS = 8;
  /**
   * Rejected calls waiting for a waiter thread. Beyond this many the call fails as S3 answered
   * (a bounded queue; an accelerated read has a few dozen calls in flight per stream).
   */
  private static final int WAITING_CALLS = 4096;
  private static final ThreadPoolExecutor POOL = pool();

  private final S3AsyncClient real;
  private final TableCredentialsProvider provider;
  private final Map<Method, Boolean> implemented = new ConcurrentHashMap<>();

  private AsyncRejectionRetries(S3AsyncClient real, TableCredentialsProvider provider) {
    this.real = real;
    this.provider = provider;
  }

  public static S3AsyncClient wrap(S3AsyncClient real, TableCredentialsProvider provider) {
    return (S3AsyncClient) Proxy.newProxyInstance(
        AsyncRejectionRetries.class.getClassLoader(), new Class<?>[] {S3AsyncClient.class},
        new AsyncRejectionRetries(real, provider));
  }

  private static ThreadPoolExecutor pool() {
    ThreadPoolExecutor pool = new ThreadPoolExecutor(WAITERS, WAITERS, 30, TimeUnit.SECONDS,
        new LinkedBlockingQueue<>(WAITING_CALLS), DaemonThreads.named("catalog-ext-async-rejection"));
    pool.allowCoreThreadTimeOut(true); // no thread at all while nothing is rejected
    return pool;
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    if (method.getDeclaringClass() == Object.class) {
      return RejectionRetries.objectMethod(proxy, method, args, "AsyncRejectionRetries{" + provider + "}");
    }
    if (!RejectionRetries.implementedBy(real, method, implemented)) {
      // convenience forms (a Consumer of a request builder, a Path, ...) call the form the client
      // implements: run them on the proxy so that call comes back here
      return RejectionRetries.defaultOn(proxy, method, args);
    }
    if (!retriable(method, args)) {
      return call(method, args);
    }
    CompletableFuture<Object> result = new CompletableFuture<>();
    AtomicReference<CompletableFuture<?>> inFlight = new AtomicReference<>();
    result.whenComplete((value, failure) -> {
      CompletableFuture<?> current = inFlight.get();
      if (result.isCancelled() && current != null) {
        current.cancel(true);
      }
    });
    send(method, args, 1, 0L, result, inFlight);
    return result;
  }

  /** A call with a request to repeat, answered by a future, uploading nothing. */
  private static boolean retriable(Method method, Object[] args) {
    if (args == null || args.length == 0 || !(args[0] instanceof SdkRequest)
        || !CompletableFuture.class.isAssignableFrom(method.getReturnType())) {
      return false;
    }
    for (Object arg : args) {
      if (arg instanceof AsyncRequestBody) {
        return false;
      }
    }
    return true;
  }

  private void send(Method method, Object[] args, int send, long firstRejectedNanos, CompletableFuture<Object> result,
      AtomicReference<CompletableFuture<?>> inFlight) {
    if (result.isDone()) {
      return; // cancelled meanwhile
    }
    CredentialSnapshot used = provider.current();
    CompletableFuture<?> future;
    try {
      future = (CompletableFuture<?>) call(method, args);
    } catch (Throwable t) {
      result.completeExceptionally(t);
      return;
    }
    inFlight.set(future);
    future.whenComplete((value, failure) -> {
      if (failure == null) {
        provider.accepted(used);
        if (firstRejectedNanos != 0) {
          provider.retried((System.nanoTime() - firstRejectedNanos) / 1_000_000L);
        }
        result.complete(value);
        return;
      }
      Throwable cause = unwrap(failure);
      if (RejectionRetries.expiryCode(cause) == null && !RejectionRetries.isCodeless403(cause)) {
        result.completeExceptionally(failure); // not about the keys: as S3 answered
        return;
      }
      try {
        POOL.execute(() -> afterRejection(method, args, send, firstRejectedNanos, result, inFlight, used, cause, failure));
      } catch (RuntimeException e) {
        result.completeExceptionally(failure);
      }
    });
  }

  /** On a pool thread: find out whether the keys died, wait for new ones, send again. */
  private void afterRejection(Method method, Object[] args, int send, long firstRejectedNanos,
      CompletableFuture<Object> result, AtomicReference<CompletableFuture<?>> inFlight, CredentialSnapshot used,
      Throwable cause, Throwable failure) {
    try {
      String code = RejectionRetries.expiryCode(cause);
      if (code == null) { // a codeless 403
        boolean sendsLeft = send < RejectionRetries.MAX_SENDS;
        if (provider.current() != used && sendsLeft) {
          send(method, args, send + 1, firstRejectedNanos, result, inFlight); // keys changed since it was signed
          return;
        }
        code = args[0] instanceof HeadObjectRequest ? probe((HeadObjectRequest) args[0]) : null;
        if (code == null && provider.current() != used && sendsLeft) {
          // The probe read fine, but signed with keys that replaced the rejected ones meanwhile:
          // send it again with them, as the sync client does.
          send(method, args, send + 1, firstRejectedNanos, result, inFlight);
          return;
        }
      }
      if (code != null && used != null && send >= RejectionRetries.MAX_SENDS) {
        result.completeExceptionally(provider.lastSendRejected(used, code, cause)); // one line, not S3's raw refusal
        return;
      }
      if (code == null || !provider.onRejected(used, code, cause)) {
        result.completeExceptionally(failure);
        return;
      }
      send(method, args, send + 1, firstRejectedNanos == 0 ? System.nanoTime() : firstRejectedNanos, result, inFlight);
    } catch (Throwable t) {
      result.completeExceptionally(t); // the one-line CredentialsRejected/Expired errors
    }
  }

  /** Asks S3 why a HEAD got 403: one GET of the key's first byte, whose answer has a body. */
  private String probe(HeadObjectRequest head) throws InterruptedException {
    try {
      real.getObject(
          GetObjectRequest.builder().bucket(head.bucket()).key(head.key()).versionId(head.versionId())
              .range("bytes=0-0").build(),
          AsyncResponseTransformer.toBytes())
          .get(provider.entry().policy.timeoutMs, TimeUnit.MILLISECONDS);
      return null; // readable now: the 403 was not about the keys
    } catch (ExecutionException e) {
      return RejectionRetries.expiryCode(unwrap(e));
    } catch (java.util.concurrent.TimeoutException e) {
      return null;
    }
  }

  private static Throwable unwrap(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  private Object call(Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(real, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
