package io.catalogext.shim.http;

import java.io.IOException;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.rest.ParserContext;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.auth.AuthSession;
import org.apache.iceberg.rest.responses.ErrorResponse;

/**
 * A {@link RESTClient} that forwards every call to {@code delegate}. The shim's decorators
 * ({@link ObservingRESTClient}, {@link EventingRESTClient}) extend it and override only the calls
 * they change. Iceberg's {@code Supplier}-of-headers overloads are interface defaults that call
 * the overloads below, so they need no forwarding of their own.
 */
abstract class ForwardingRESTClient implements RESTClient {
  protected final RESTClient delegate;

  ForwardingRESTClient(RESTClient delegate) {
    this.delegate = delegate;
  }

  /** The same decorator around another client: an auth-session client must stay decorated. */
  protected abstract RESTClient wrap(RESTClient client);

  /** Called before every forwarded request (not by the overrides of a subclass). */
  protected void onRequest() {}

  @Override
  public RESTClient withAuthSession(AuthSession session) {
    return wrap(delegate.withAuthSession(session));
  }

  @Override
  public void head(String path, Map<String, String> headers, Consumer<ErrorResponse> errorHandler) {
    onRequest();
    delegate.head(path, headers, errorHandler);
  }

  @Override
  public <T extends RESTResponse> T delete(
      String path, Class<T> responseType, Map<String, String> headers, Consumer<ErrorResponse> errorHandler) {
    onRequest();
    return delegate.delete(path, responseType, headers, errorHandler);
  }

  @Override
  public <T extends RESTResponse> T delete(
      String path,
      Map<String, String> queryParams,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler) {
    onRequest();
    return delegate.delete(path, queryParams, responseType, headers, errorHandler);
  }

  @Override
  public <T extends RESTResponse> T get(
      String path,
      Map<String, String> queryParams,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler) {
    onRequest();
    return delegate.get(path, queryParams, responseType, headers, errorHandler);
  }

  @Override
  public <T extends RESTResponse> T get(
      String path,
      Map<String, String> queryParams,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler,
      ParserContext parserContext) {
    onRequest();
    return delegate.get(path, queryParams, responseType, headers, errorHandler, parserContext);
  }

  /**
   * Iceberg 1.11 added this overload (a load that reads the answer's headers, for an ETag it sends
   * back later) with a default that throws; Iceberg 1.10 does not have it, hence no {@code @Override}.
   * It goes through the plain {@code get}, so a subclass's decoration applies, and hands back no
   * headers: without an ETag every load is a full load, which is what fresh credentials need
   * anyway (a 304 would keep the old, possibly expired ones).
   */
  public <T extends RESTResponse> T get(
      String path,
      Map<String, String> queryParams,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler,
      Consumer<Map<String, String>> responseHeaders) {
    return get(path, queryParams, responseType, headers, errorHandler);
  }

  @Override
  public <T extends RESTResponse> T post(
      String path,
      RESTRequest body,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler) {
    onRequest();
    return delegate.post(path, body, responseType, headers, errorHandler);
  }

  @Override
  public <T extends RESTResponse> T post(
      String path,
      RESTRequest body,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler,
      Consumer<Map<String, String>> responseHeaders) {
    onRequest();
    return delegate.post(path, body, responseType, headers, errorHandler, responseHeaders);
  }

  @Override
  public <T extends RESTResponse> T post(
      String path,
      RESTRequest body,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler,
      Consumer<Map<String, String>> responseHeaders,
      ParserContext parserContext) {
    onRequest();
    return delegate.post(path, body, responseType, headers, errorHandler, responseHeaders, parserContext);
  }

  @Override
  public <T extends RESTResponse> T postForm(
      String path,
      Map<String, String> formData,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler) {
    onRequest();
    return delegate.postForm(path, formData, responseType, headers, errorHandler);
  }

  @Override
  public void close() throws IOException {
    delegate.close();
  }
}
