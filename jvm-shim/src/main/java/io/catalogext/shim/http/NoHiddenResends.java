package io.catalogext.shim.http;

import io.catalogext.shim.commit.CommitGuard;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.URI;
import java.util.Locale;
import org.apache.iceberg.rest.HTTPClient;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.HttpRequestRetryStrategy;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.classic.HttpRequestRetryExec;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.classic.RedirectExec;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.protocol.RedirectStrategy;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.Header;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.HttpException;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.HttpRequest;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.HttpResponse;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.Method;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.ProtocolException;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.protocol.HttpCoreContext;
import org.apache.iceberg.shaded.org.apache.hc.core5.util.TimeValue;

/**
 * Makes Iceberg's catalog HTTP client send each POST/DELETE exactly once and follow no redirect,
 * so that {@link CommitGuard} sees every answer to a mutation.
 *
 * <p>Every layer that can re-send a request underneath the guard (Iceberg 1.10.2, its shaded
 * Apache HttpClient 5.5):
 *
 * <ol>
 *   <li>Iceberg's {@code ExponentialHttpRequestRetryStrategy} (HttpClient's {@code
 *       HttpRequestRetryExec}): any method on 429, and on 503 with {@code Retry-After}; idempotent
 *       methods (GET, HEAD, PUT, DELETE, ...) also on 408/500/502/504/503 and on IOExceptions other
 *       than timeouts, refused connections, unknown hosts, closed connections and TLS errors. A
 *       commit the catalog applied, answered 503 by a gateway and re-sent, comes back 401/403/404
 *       or 409: Iceberg's handler then throws and its cleanup deletes the files of a published
 *       table. <b>Here:</b> only safe methods (GET, HEAD) keep Iceberg's retries, unchanged.
 *   <li>IOException retries on a reused (stale) connection: in HttpClient 5 these are the same
 *       retry strategy as (1) (there is no separate stale-connection re-send), so (1) covers them.
 *   <li>Redirects ({@code RedirectExec}, on by default): 307/308 re-send a POST elsewhere, 301/302/303
 *       turn it into a GET whose answer Iceberg would parse as the commit's. <b>Here:</b> never
 *       followed; a 3xx becomes {@link Refused}, one line naming the target.
 *   <li>Authentication: HttpClient re-sends on a 401/407 challenge only with credentials for that
 *       host; Iceberg configures them only for a proxy (407: the proxy refused before forwarding,
 *       so the catalog never saw the first copy). Nothing to change.
 *   <li>{@link CommitGuard}'s own retries, which see every answer and decide by the commit decision
 *       table.
 * </ol>
 *
 * <p>Why reflection: Iceberg 1.10.2's {@code HTTPClient.Builder} has no hook for the retry or
 * redirect strategy (the private constructor builds the HttpClient itself), and no property turns
 * the retries off ({@code rest.client.max-retries} must be at least 1). The only alternative is a
 * copy of {@code HTTPClient} (request building, auth sessions, error parsing), which would drift
 * from Iceberg's. So the client Iceberg built is kept and two fields in its execution chain are
 * replaced: the retry strategy (wrapping Iceberg's own) and the redirect strategy. If the chain is
 * not as expected (another Iceberg or HttpClient version), the catalog refuses to start rather
 * than run commits that a hidden re-send could turn into deleted files.
 */
public final class NoHiddenResends {
  private NoHiddenResends() {}

  private static final String SHADED_CLASSIC = "org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.classic.";

  /**
   * Installs both strategies in {@code client}'s HttpClient. Call once, right after building it
   * (its auth-session children share the same HttpClient).
   *
   * @throws IllegalStateException one line, when this Iceberg's HTTP client is built differently
   */
  public static void install(HTTPClient client) {
    boolean retries = false;
    boolean redirects = false;
    try {
      Object http = read(HTTPClient.class, "httpClient", client);
      Class<?> internal = Class.forName(SHADED_CLASSIC + "InternalHttpClient");
      Class<?> element = Class.forName(SHADED_CLASSIC + "ExecChainElement");
      if (!internal.isInstance(http)) {
        throw new IllegalStateException("its HttpClient is a " + http.getClass().getName());
      }
      for (Object e = read(internal, "execChain", http); e != null; e = read(element, "next", e)) {
        Object handler = read(element, "handler", e);
        if (handler instanceof HttpRequestRetryExec) {
          HttpRequestRetryStrategy icebergs =
              (HttpRequestRetryStrategy) read(HttpRequestRetryExec.class, "retryStrategy", handler);
          if (!(icebergs instanceof SafeMethodsOnly)) {
            write(HttpRequestRetryExec.class, "retryStrategy", handler, new SafeMethodsOnly(icebergs));
          }
          retries = true;
        } else if (handler instanceof RedirectExec) {
          write(RedirectExec.class, "redirectStrategy", handler, new RefuseRedirects());
          redirects = true;
        }
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw notInstalled(e.toString());
    }
    if (!retries || !redirects) {
      throw notInstalled("no " + (retries ? "redirect" : "retry") + " step found in its HttpClient");
    }
  }

  private static IllegalStateException notInstalled(String why) {
    return new IllegalStateException(
        "catalog-ext cannot stop Iceberg's HTTP client from re-sending commits and following redirects ("
            + why + "); this shim supports Iceberg 1.10.x: use the iceberg-spark-runtime it installs");
  }

  private static Object read(Class<?> owner, String name, Object target) throws ReflectiveOperationException {
    Field f = owner.getDeclaredField(name);
    f.setAccessible(true);
    return f.get(target);
  }

  /** A final instance field of a class in the unnamed module (allowed by Java 11-25). */
  private static void write(Class<?> owner, String name, Object target, Object value)
      throws ReflectiveOperationException {
    Field f = owner.getDeclaredField(name);
    f.setAccessible(true);
    f.set(target, value);
  }

  /** Iceberg's retry strategy for GET/HEAD; nothing else is ever re-sent by the HTTP client. */
  static final class SafeMethodsOnly implements HttpRequestRetryStrategy {
    private final HttpRequestRetryStrategy icebergs;

    SafeMethodsOnly(HttpRequestRetryStrategy icebergs) {
      this.icebergs = icebergs;
    }

    /** GET/HEAD (OPTIONS, TRACE): re-sending cannot change anything on the catalog. */
    static boolean resendable(HttpRequest request) {
      return request != null && Method.isSafe(request.getMethod());
    }

    @Override
    public boolean retryRequest(HttpRequest request, IOException exception, int execCount, HttpContext context) {
      return resendable(request) && icebergs.retryRequest(request, exception, execCount, context);
    }

    @Override
    public boolean retryRequest(HttpResponse response, int execCount, HttpContext context) {
      // The request being answered; unknown means not re-sent.
      HttpRequest request = context instanceof HttpCoreContext ? ((HttpCoreContext) context).getRequest() : null;
      return resendable(request) && icebergs.retryRequest(response, execCount, context);
    }

    @Override
    public TimeValue getRetryInterval(HttpRequest request, IOException exception, int execCount, HttpContext context) {
      return icebergs.getRetryInterval(request, exception, execCount, context);
    }

    @Override
    public TimeValue getRetryInterval(HttpResponse response, int execCount, HttpContext context) {
      return icebergs.getRetryInterval(response, execCount, context);
    }
  }

  /** A redirect is never followed: it ends the request as {@link Refused}. */
  static final class RefuseRedirects implements RedirectStrategy {
    @Override
    public boolean isRedirected(HttpRequest request, HttpResponse response, HttpContext context) throws HttpException {
      if (isRedirect(response.getCode())) {
        Header location = response.getFirstHeader("Location");
        throw new Refused(response.getCode(), request.getMethod(), request.getPath(),
            location == null ? null : location.getValue());
      }
      return false; // 300/304/305: Iceberg's own handling of a non-2xx answer
    }

    @Override
    public URI getLocationURI(HttpRequest request, HttpResponse response, HttpContext context) throws HttpException {
      throw new ProtocolException("redirects are not followed");
    }
  }

  /** The statuses HttpClient would follow. */
  public static boolean isRedirect(int code) {
    return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
  }

  /** A redirect answer, refused inside the HTTP client (it surfaces wrapped in Iceberg's RESTException). */
  public static final class Refused extends ProtocolException {
    private static final long serialVersionUID = 1L;
    public final int status;
    public final String target;

    public Refused(int status, String method, String path, String location) {
      super(message(status, method, path, location));
      this.status = status;
      this.target = shown(location);
    }

    private static String message(int status, String method, String path, String location) {
      return "the catalog answered " + method + " " + shown(path) + " with HTTP " + status + ", a redirect to "
          + shown(location) + "; catalog-ext never follows a catalog's redirects (a commit sent twice or turned"
          + " into a GET could be misread): set the catalog's uri to the right address";
    }
  }

  /** A URL as shown in errors: no user info, query or fragment (they may hold tokens). */
  static String shown(String url) {
    if (url == null || url.isBlank()) {
      return "(no Location header)";
    }
    try {
      URI u = new URI(url.trim());
      String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT) + "://";
      String host = u.getHost() == null ? "" : u.getHost() + (u.getPort() < 0 ? "" : ":" + u.getPort());
      return scheme + host + (u.getRawPath() == null ? "" : u.getRawPath());
    } catch (Exception e) {
      return "(an unparseable Location)";
    }
  }

  /** The refused redirect behind {@code e}, or null. */
  public static Refused refusedIn(Throwable e) {
    int depth = 0;
    for (Throwable t = e; t != null && depth < 16; t = t.getCause(), depth++) {
      if (t instanceof Refused) {
        return (Refused) t;
      }
    }
    return null;
  }
}
