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
 * and the innermost step sends it with Iceberg's {@code HTTPClient} ({@code delegate}).
 *
 * <p>Only the public {@code RESTClient} calls of the delegate are used (its {@code execute} is
 * protected), so the last step maps the request back onto the one call that sends it.
 */
public final class CatalogHttpFunnel extends BaseHTTPClient {
  /** One step around every request: answers with {@link Exchange#proceed} or on its own. */
  public interface Interceptor {
    <T extends RESTResponse> T intercept(Exchange<T> exchange);
  }

  private final RESTClient delegate;
  private final URI baseUri;
  private final List<Interceptor> interceptors;

  /** {@code interceptors} outermost first; {@code baseUri} is the catalog's {@code uri}. */
  public CatalogHttpFunnel(RESTClient delegate, String baseUri, List<Interceptor> interceptors) {
    this(delegate, baseUri == null ? null : URI.create(baseUri), List.copyOf(interceptors));
  }

  private CatalogHttpFunnel(RESTClient delegate, URI baseUri, List<Interceptor> interceptors) {
    this.delegate = delegate;
    this.baseUri = baseUri;
    this.interceptors = interceptors;
  }

  @Override
  public RESTClient withAuthSession(AuthSession session) {
    // An auth-session client (one per table or context) goes through the same funnel.
    return new CatalogHttpFunnel(delegate.withAuthSession(session), baseUri, interceptors);
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

  /** The innermost step: the one public call of Iceberg's client that sends this request. */
  private <T extends RESTResponse> T send(Exchange<T> ex) {
    HTTPRequest req = ex.request;
    Map<String, String> headers = ex.headers();
    switch (req.method()) {
      case HEAD:
        delegate.head(req.path(), headers, ex.errorHandler);
        return null;
      case DELETE:
        return delegate.delete(req.path(), req.queryParameters(), ex.responseType, headers, ex.errorHandler);
      case GET:
        if (ex.parserContext != null) {
          return delegate.get(
              req.path(), req.queryParameters(), ex.responseType, headers, ex.errorHandler, ex.parserContext);
        }
        // Response headers are not handed back (Iceberg 1.11 reads an ETag from them to send later):
        // without one every load is a full load, which fresh credentials need anyway (a 304 would
        // keep the old, possibly expired ones).
        return delegate.get(req.path(), req.queryParameters(), ex.responseType, headers, ex.errorHandler);
      case POST:
        if (req.body() instanceof Map) {
          @SuppressWarnings("unchecked")
          Map<String, String> form = (Map<String, String>) req.body();
          return delegate.postForm(req.path(), form, ex.responseType, headers, ex.errorHandler);
        }
        RESTRequest body = (RESTRequest) req.body();
        if (ex.parserContext != null) {
          return delegate.post(req.path(), body, ex.responseType, headers, ex.errorHandler, ex.responseHeaders,
              ex.parserContext);
        }
        return delegate.post(req.path(), body, ex.responseType, headers, ex.errorHandler, ex.responseHeaders);
      default:
        throw new IllegalStateException("unknown HTTP method " + req.method()); // a bug: BaseHTTPClient has four
    }
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

    /** Iceberg's client without any interceptor: for reconciliation reads and the refresh. */
    public RESTClient undecorated() {
      return funnel.delegate;
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
