package org.apache.iceberg.rest;

import io.catalogext.shim.http.SafeMethodRetries;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.List;
import javax.net.ssl.SSLHandshakeException;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.HttpRequestRetryStrategy;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.ConnectionClosedException;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.NoHttpResponseException;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.message.BasicClassicHttpRequest;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.message.BasicClassicHttpResponse;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.protocol.HttpCoreContext;
import org.apache.iceberg.shaded.org.apache.hc.core5.util.TimeValue;
import org.junit.jupiter.api.Test;

/**
 * The shim's transport retries reads exactly as Iceberg's HTTP client does: its retry strategy is
 * package-private, so this test sits in Iceberg's package and asks both strategies the same
 * questions (every method, answer, failure and attempt count below); a change in Iceberg's rule for
 * GET or HEAD fails it. Mutations: Iceberg's may re-send them, the shim's never does.
 */
public class IcebergRetryParityTest {
  private static final int MAX_RETRIES = 5;
  private static final List<String> READS = List.of("GET", "HEAD");
  private static final List<String> MUTATIONS = List.of("POST", "DELETE", "PUT");
  private static final int[] STATUSES = {200, 204, 301, 304, 400, 401, 403, 404, 408, 409, 419, 429, 500, 501, 502, 503, 504};
  private static final List<IOException> FAILURES = List.of(new IOException("x"), new SocketException("reset"),
      new SocketTimeoutException("read"), new InterruptedIOException("i"), new ConnectException("c"),
      new UnknownHostException("h"), new NoRouteToHostException("r"), new SSLHandshakeException("t"),
      new ConnectionClosedException("closed"), new NoHttpResponseException("none"));

  private final HttpRequestRetryStrategy icebergs = new ExponentialHttpRequestRetryStrategy(MAX_RETRIES);
  private final HttpRequestRetryStrategy ours = new SafeMethodRetries(MAX_RETRIES);

  private static HttpCoreContext contextOf(BasicClassicHttpRequest request) {
    HttpCoreContext context = HttpCoreContext.create();
    context.setRequest(request);
    return context;
  }

  private static BasicClassicHttpResponse answer(int status, String retryAfter) {
    BasicClassicHttpResponse response = new BasicClassicHttpResponse(status);
    if (retryAfter != null) {
      response.addHeader("Retry-After", retryAfter);
    }
    return response;
  }

  @Test
  void testReadsAreRetriedOnTheSameAnswersAndFailuresAsIcebergs() {
    int asked = 0;
    for (String method : READS) {
      for (int count = 1; count <= MAX_RETRIES + 1; count++) {
        for (int status : STATUSES) {
          for (String retryAfter : new String[] {null, "1"}) {
            BasicClassicHttpRequest request = new BasicClassicHttpRequest(method, "/v1/x");
            assertEquals(icebergs.retryRequest(answer(status, retryAfter), count, contextOf(request)),
                ours.retryRequest(answer(status, retryAfter), count, contextOf(request)),
                method + " answered " + status + " (Retry-After " + retryAfter + "), attempt " + count);
            asked++;
          }
        }
        for (IOException failure : FAILURES) {
          BasicClassicHttpRequest request = new BasicClassicHttpRequest(method, "/v1/x");
          assertEquals(icebergs.retryRequest(request, failure, count, contextOf(request)),
              ours.retryRequest(request, failure, count, contextOf(request)),
              method + " failed with " + failure.getClass().getSimpleName() + ", attempt " + count);
          asked++;
        }
      }
    }
    assertTrue(asked > 400, "questions asked: " + asked);
  }

  @Test
  void testTheWaitIsIcebergsRetryAfterOrBackoff() {
    for (String retryAfter : new String[] {"3", "0", "soon"}) {
      assertEquals(icebergs.getRetryInterval(answer(503, retryAfter), 1, HttpCoreContext.create()).toMilliseconds() / 1000,
          ours.getRetryInterval(answer(503, retryAfter), 1, HttpCoreContext.create()).toMilliseconds() / 1000,
          "Retry-After " + retryAfter + " (whole seconds: the jitter differs)");
    }
    for (int count = 1; count <= 8; count++) {
      TimeValue theirs = icebergs.getRetryInterval(answer(503, null), count, HttpCoreContext.create());
      TimeValue mine = ours.getRetryInterval(answer(503, null), count, HttpCoreContext.create());
      long floor = 1000L * (long) Math.min(Math.pow(2, count - 1), 64);
      for (TimeValue wait : new TimeValue[] {theirs, mine}) {
        assertTrue(wait.toMilliseconds() >= floor && wait.toMilliseconds() <= floor * 11 / 10,
            "attempt " + count + ": " + wait + " not in Iceberg's backoff range from " + floor + " ms");
      }
    }
  }

  @Test
  void testMutationsAreNeverResentByTheTransport() {
    for (String method : MUTATIONS) {
      for (int status : STATUSES) {
        for (String key : new String[] {null, "0191bbc8-7e33-7c4a-9a5e-3c0fd9b2a1e0"}) {
          BasicClassicHttpRequest request = new BasicClassicHttpRequest(method, "/v1/x");
          if (key != null) {
            request.addHeader("Idempotency-Key", key);
          }
          assertFalse(ours.retryRequest(answer(status, "1"), 1, contextOf(request)), method + " answered " + status);
        }
      }
      for (IOException failure : FAILURES) {
        BasicClassicHttpRequest request = new BasicClassicHttpRequest(method, "/v1/x");
        assertFalse(ours.retryRequest(request, failure, 1, contextOf(request)), method + " failed with " + failure);
      }
    }
    // What the shim avoids: Iceberg's own re-sends a POST answered 429, or 503 with Retry-After.
    BasicClassicHttpRequest post = new BasicClassicHttpRequest("POST", "/v1/x");
    assertTrue(icebergs.retryRequest(answer(429, null), 1, contextOf(post)), "Iceberg re-sends a POST on 429");
  }
}
