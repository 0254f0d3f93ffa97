package io.catalogext.shim.http;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import javax.net.ssl.SSLException;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.HttpRequestRetryStrategy;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.utils.DateUtils;
import org.apache.iceberg.shaded.org.apache.hc.core5.concurrent.CancellableDependency;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.ConnectionClosedException;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.Header;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.HttpRequest;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.HttpResponse;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.Method;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.protocol.HttpCoreContext;
import org.apache.iceberg.shaded.org.apache.hc.core5.util.TimeValue;

/**
 * The catalog transport's retries: Iceberg's own rule for reads, nothing for anything else. A GET or
 * HEAD (a safe method: re-sending it changes nothing on the catalog) is retried as Iceberg's HTTP
 * client retries it (its {@code ExponentialHttpRequestRetryStrategy}: up to
 * {@code rest.client.max-retries}, on 408/429/500/502/503/504 and on I/O errors other than
 * timeouts, refused or closed connections, unknown hosts and TLS errors; after {@code Retry-After}
 * or 1 s, 2 s, 4 s ... 64 s plus up to 10% jitter). A POST or DELETE is never re-sent here: the
 * commit guard decides every repeat of a mutation, and sees every answer.
 *
 * <p>Why not Iceberg's class: it is package-private, and it re-sends a POST on 429, on 503 with
 * Retry-After and (from 1.12) on 5xx when it carries an Idempotency-Key. Its rule for reads is
 * restated here; IcebergRetryParityTest holds the two against each other on every answer and
 * failure for GET and HEAD, so a change in Iceberg's fails that test.
 */
public final class SafeMethodRetries implements HttpRequestRetryStrategy {
  private static final Set<Integer> RETRIED_STATUSES = Set.of(429, 503, 500, 502, 504, 408);
  private static final List<Class<? extends IOException>> FINAL_FAILURES = List.of(
      InterruptedIOException.class, UnknownHostException.class, ConnectException.class,
      ConnectionClosedException.class, NoRouteToHostException.class, SSLException.class);

  private final int maxRetries;

  public SafeMethodRetries(int maxRetries) {
    if (maxRetries <= 0) {
      throw new IllegalArgumentException("Cannot set retries to " + maxRetries + ", the value must be positive");
    }
    this.maxRetries = maxRetries;
  }

  /** GET and HEAD (and OPTIONS, TRACE): methods whose repetition cannot change anything. */
  static boolean safe(HttpRequest request) {
    return request != null && Method.isSafe(request.getMethod());
  }

  @Override
  public boolean retryRequest(HttpRequest request, IOException exception, int execCount, HttpContext context) {
    if (!safe(request) || execCount > maxRetries) {
      return false;
    }
    for (Class<? extends IOException> finalFailure : FINAL_FAILURES) {
      if (finalFailure.isInstance(exception)) {
        return false;
      }
    }
    return !(request instanceof CancellableDependency && ((CancellableDependency) request).isCancelled());
  }

  @Override
  public boolean retryRequest(HttpResponse response, int execCount, HttpContext context) {
    HttpRequest request = context instanceof HttpCoreContext ? ((HttpCoreContext) context).getRequest() : null;
    return safe(request) && execCount <= maxRetries && RETRIED_STATUSES.contains(response.getCode());
  }

  @Override
  public TimeValue getRetryInterval(HttpResponse response, int execCount, HttpContext context) {
    Header header = response.getFirstHeader("Retry-After");
    if (header != null) {
      TimeValue retryAfter = null;
      try {
        retryAfter = TimeValue.ofSeconds(Long.parseLong(header.getValue()));
      } catch (NumberFormatException notSeconds) {
        Instant date = DateUtils.parseStandardDate(header.getValue());
        if (date != null) {
          retryAfter = TimeValue.ofMilliseconds(date.toEpochMilli() - System.currentTimeMillis());
        }
      }
      if (TimeValue.isPositive(retryAfter)) {
        return retryAfter;
      }
    }
    int delayMs = 1000 * (int) Math.min(Math.pow(2.0, execCount - 1.0), 64.0);
    int jitterMs = ThreadLocalRandom.current().nextInt(Math.max(1, (int) (delayMs * 0.1)));
    return TimeValue.ofMilliseconds(delayMs + jitterMs);
  }
}
