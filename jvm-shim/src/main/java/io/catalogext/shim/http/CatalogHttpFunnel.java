package io.catalogext.shim.http;

import java.io.IOException;
import java.net.URI;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.rest.BaseHTTPClient;
import org.apache.iceberg.rest.HTTPHeaders;
import org.apache.iceberg.rest.HTTPRequest;
import org.apache.iceberg.rest.HTTPRequest.HTTPMethod;
import org.apache.iceberg.rest.ImmutableHTTPRequest;
import org.apache.iceberg.rest.ParserContext;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.auth.AuthSession;
import org.apache.iceberg.rest.responses.ErrorResponse;

/**
 * The catalog's HTTP client as the shim sees it: one funnel for every request. Iceberg's own
 * {@link BaseHTTPClient} turns each {@code RESTClient} overload (those of 1.10, 1.11's
 * header-reading GET, whatever a later release adds there) into one {@link HTTPRequest} and one
 * {@code execute}; the funnel runs that request through its {@link Interceptor}s, outermost first,
 * and the innermost step sends it with the {@link CatalogTransport} ({@code delegate}).
 */
public final class CatalogHttpFunnel extends BaseHTTPClient {
  /** One step around every request: answers with {@link Exchange#proceed} or on its own. */
  public interface Interceptor {
    <T extends RESTResponse> T intercept(Exchange<T> exchange);

    /**
     * Iceberg derived {@code transport} (the new auth session's client, without the steps): true
     * when this step takes it as the client of one table's own auth session, which makes the
     * derived funnel table-scoped ({@link Exchange#tableScoped}).
     */
    default boolean adoptsTableClient(RESTClient transport) {
      return false;
    }
  }

  private final CatalogTransport delegate;
  private final URI baseUri;
  private final List<Interceptor> interceptors;
  /** Derived for one table's auth session (Iceberg's table operations send through it). */
  private final boolean tableScoped;

  /** {@code interceptors} outermost first; {@code baseUri} is the catalog's {@code uri}. */
  public CatalogHttpFunnel(CatalogTransport delegate, String baseUri, List<Interceptor> interceptors) {
    this(delegate, baseUri == null ? null : URI.create(baseUri), List.copyOf(interceptors), false);
  }

  private CatalogHttpFunnel(CatalogTransport delegate, URI baseUri, List<Interceptor> interceptors, boolean tableScoped) {
    this.delegate = delegate;
    this.baseUri = baseUri;
    this.interceptors = interceptors;
    this.tableScoped = tableScoped;
  }

  @Override
  public RESTClient withAuthSession(AuthSession session) {
    // An auth-session client (one per table or context) goes through the same funnel.
    CatalogTransport child = delegate.withAuthSession(session);
    boolean forTable = false;
    for (Interceptor step : interceptors) {
      forTable |= step.adoptsTableClient(child);
    }
    return new CatalogHttpFunnel(child, baseUri, interceptors, forTable);
  }

  @Override
  protected HTTPRequest buildRequest(
      HTTPMethod method, String path, Map<String, String> queryParams, Map<String, String> headers, Object body) {
    return ImmutableHTTPRequest.builder()
        .baseUri(baseUri)
        .method(method)
        .path(path)
        .queryParameters(queryParams == null ? Map.of() : queryParams)
        .headers(HTTPHeaders.of(headers == null ? Map.of() : headers))
        .body(body)
        .build();
  }

  @Override
  protected <T extends RESTResponse> T execute(
      HTTPRequest request,
      Class<T> responseType,
      Consumer<ErrorResponse> errorHandler,
      Consumer<Map<String, String>> responseHeaders) {
    return execute(request, responseType, errorHandler, responseHeaders, null);
  }

  @Override
  protected <T extends RESTResponse> T execute(
      HTTPRequest request,
      Class<T> responseType,
      Consumer<ErrorResponse> errorHandler,
      Consumer<Map<String, String>> responseHeaders,
      ParserContext parserContext) {
    return new Exchange<>(this, 0, request, responseType, errorHandler, responseHeaders, parserContext).run();
  }

  @Override
  public void close() throws IOException {
    delegate.close();
  }

  /**
   * The innermost step: the transport authenticates the request as it now stands and sends it.
   * A GET's response headers are not handed back (Iceberg 1.11 reads an ETag from them to send
   * later): without one every load is a full load, which fresh credentials need anyway (a 304
   * would keep the old, possibly expired ones).
   */
  private <T extends RESTResponse> T send(Exchange<T> ex) {
    Consumer<Map<String, String>> headers = ex.request.method() == HTTPMethod.GET ? h -> { } : ex.responseHeaders;
    return delegate.execute(delegate.authenticated(ex.request), ex.responseType, ex.errorHandler, headers,
        ex.parserContext != null ? ex.parserContext : ParserContext.builder().build());
  }

  /** One request on its way through the interceptors. */
  public static final class Exchange<T extends RESTResponse> {
    private final CatalogHttpFunnel funnel;
    private final int index;
    private final HTTPRequest request;
    private final Class<T> responseType;
    private final Consumer<ErrorResponse> errorHandler;
    private final Consumer<Map<String, String>> responseHeaders;
    private final ParserContext parserContext;

    private Exchange(CatalogHttpFunnel funnel, int index, HTTPRequest request, Class<T> responseType,
        Consumer<ErrorResponse> errorHandler, Consumer<Map<String, String>> responseHeaders,
        ParserContext parserContext) {
      this.funnel = funnel;
      this.index = index;
      this.request = request;
      this.responseType = responseType;
      this.errorHandler = errorHandler;
      this.responseHeaders = responseHeaders;
      this.parserContext = parserContext;
    }

    private T run() {
      return index < funnel.interceptors.size() ? funnel.interceptors.get(index).intercept(this) : funnel.send(this);
    }

    /** The next step with this request. */
    public T proceed() {
      return proceed(request, errorHandler);
    }

    /** The next step with another request (headers, body) or error handler. */
    public T proceed(HTTPRequest changed, Consumer<ErrorResponse> handler) {
      return new Exchange<>(funnel, index + 1, changed, responseType, handler, responseHeaders, parserContext).run();
    }

    public HTTPRequest request() {
      return request;
    }

    public HTTPMethod method() {
      return request.method();
    }

    public String path() {
      return request.path();
    }

    /** The JSON body of a POST; null for a form (OAuth2 token requests) and other methods. */
    public RESTRequest body() {
      return request.body() instanceof RESTRequest ? (RESTRequest) request.body() : null;
    }

    /** A POST whose body is a form: OAuth2 token requests. */
    public boolean isForm() {
      return request.body() instanceof Map;
    }

    public Map<String, String> headers() {
      Map<String, String> headers = new HashMap<>();
      request.headers().entries().forEach(h -> headers.put(h.name(), h.value()));
      return headers;
    }

    public Consumer<ErrorResponse> errorHandler() {
      return errorHandler;
    }

    /** The transport without any interceptor: for reconciliation reads and the refresh. */
    public RESTClient undecorated() {
      return funnel.delegate;
    }

    /**
     * Sent by one table's own auth-session client (its table operations: commits, reloads), not by
     * the catalog's or a context's.
     */
    public boolean tableScoped() {
      return funnel.tableScoped;
    }

    /** This request with other headers. */
    public HTTPRequest withHeaders(Map<String, String> headers) {
      return ImmutableHTTPRequest.copyOf(request).withHeaders(HTTPHeaders.of(headers));
    }

    /** This request with another body. */
    public HTTPRequest withBody(Object body) {
      return ImmutableHTTPRequest.copyOf(request).withBody(body);
    }
  }
}
