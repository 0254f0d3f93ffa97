package io.catalogext.shim.http;

import io.catalogext.shim.errors.CatalogRedirectException;
import io.catalogext.shim.wire.Origin;
import io.catalogext.shim.wire.TrustedOrigins;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.iceberg.IcebergBuild;
import org.apache.iceberg.common.DynConstructors;
import org.apache.iceberg.exceptions.RESTException;
import org.apache.iceberg.rest.BaseHTTPClient;
import org.apache.iceberg.rest.ErrorHandler;
import org.apache.iceberg.rest.HTTPHeaders;
import org.apache.iceberg.rest.HTTPRequest;
import org.apache.iceberg.rest.HTTPRequest.HTTPMethod;
import org.apache.iceberg.rest.ImmutableHTTPRequest;
import org.apache.iceberg.rest.ParserContext;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.auth.AuthSession;
import org.apache.iceberg.rest.auth.TLSConfigurer;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectReader;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.auth.AuthScope;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.auth.UsernamePasswordCredentials;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.auth.BasicCredentialsProvider;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.protocol.HttpClientContext;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.ssl.DefaultClientTlsStrategy;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.ssl.HostnameVerificationPolicy;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.ContentType;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.Header;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.HttpHost;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.ParseException;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.impl.EnglishReasonPhraseCatalog;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.iceberg.shaded.org.apache.hc.core5.io.CloseMode;
import org.apache.iceberg.shaded.org.apache.hc.core5.reactor.ssl.SSLBufferMode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The wire under the catalog's HTTP client: Iceberg's {@code RESTClient}, sent through an Apache
 * HttpClient 5 (the one the Iceberg runtime shades) that the shim builds itself, so that nothing
 * under the commit guard re-sends or redirects a request, through public API alone:
 *
 * <ul>
 *   <li>only reads are retried, by Iceberg's rule ({@link SafeMethodRetries}); a POST or DELETE is
 *       sent exactly once per call;
 *   <li>a redirect is never followed: a 3xx answer ends the request as a one-line
 *       {@link CatalogRedirectException} naming its target;
 *   <li>every request goes only to an origin in the catalog's {@link TrustedOrigins}, checked on the
 *       request's final URL before anything is sent, whatever named it (the catalog URI, a
 *       {@code /v1/config} override, a refresh endpoint, an OAuth2 token URL);
 *   <li>everything else is Iceberg's {@code HTTPClient}, property for property: the auth session
 *       authenticates each request after the headers are final, {@code header.*} values and the
 *       client version headers, {@code rest.client.*} timeouts, connection limits, proxy, user agent
 *       and TLS configurer, error bodies parsed by Iceberg's {@link ErrorHandler}s, answers read with
 *       the catalog's mapper.
 * </ul>
 *
 * <p>Why not Iceberg's {@code HTTPClient}: it builds its HttpClient privately, with a retry strategy
 * that re-sends a POST on 429 and on 503 with Retry-After (and from 1.12 on 5xx under an
 * Idempotency-Key) and with redirects on, and offers no hook to change either. An upstream option
 * to hand {@code HTTPClient.Builder} a retry and redirect strategy (or an HttpClient) would retire
 * this class (docs/jvm-dependencies.md).
 */
public final class CatalogTransport extends BaseHTTPClient {
  private static final Logger LOG = LoggerFactory.getLogger(CatalogTransport.class);

  // Iceberg's HTTPClient property names (its constants are package-private).
  static final String MAX_RETRIES = "rest.client.max-retries";
  static final String MAX_CONNECTIONS = "rest.client.max-connections";
  static final String MAX_CONNECTIONS_PER_ROUTE = "rest.client.connections-per-route";
  static final String PROXY_HOSTNAME = "rest.client.proxy.hostname";
  static final String PROXY_PORT = "rest.client.proxy.port";
  static final String PROXY_USERNAME = "rest.client.proxy.username";
  static final String PROXY_PASSWORD = "rest.client.proxy.password";
  static final String USER_AGENT = "rest.client.user-agent";
  static final String CONNECTION_TIMEOUT_MS = "rest.client.connection-timeout-ms";
  static final String SOCKET_TIMEOUT_MS = "rest.client.socket-timeout-ms";
  static final String TLS_CONFIGURER = "rest.client.tls.configurer-impl";
  static final String CLIENT_VERSION_HEADER = "X-Client-Version";
  static final String CLIENT_GIT_COMMIT_SHORT_HEADER = "X-Client-Git-Commit-Short";

  private final URI baseUri;
  private final CloseableHttpClient http;
  private final Map<String, String> baseHeaders;
  private final ObjectMapper mapper;
  private final AuthSession authSession;
  private final TrustedOrigins trust;
  private final boolean root;
  private final ConcurrentMap<Class<?>, ObjectReader> readers;

  private CatalogTransport(URI baseUri, CloseableHttpClient http, Map<String, String> baseHeaders, ObjectMapper mapper,
      AuthSession authSession, TrustedOrigins trust, boolean root, ConcurrentMap<Class<?>, ObjectReader> readers) {
    this.baseUri = baseUri;
    this.http = http;
    this.baseHeaders = baseHeaders;
    this.mapper = mapper;
    this.authSession = authSession;
    this.trust = trust;
    this.root = root;
    this.readers = readers;
  }

  /**
   * The transport of a catalog: base URI {@code uri}, Iceberg's {@code rest.client.*} and
   * {@code header.*} settings from {@code properties}, answers read with {@code mapper}, requests
   * only to {@code trust}'s origins.
   */
  public static CatalogTransport build(Map<String, String> properties, String uri, ObjectMapper mapper,
      TrustedOrigins trust) {
    Map<String, String> headers = new LinkedHashMap<>(RESTUtil.configHeaders(properties));
    headers.put(CLIENT_VERSION_HEADER, IcebergBuild.fullVersion());
    headers.put(CLIENT_GIT_COMMIT_SHORT_HEADER, IcebergBuild.gitCommitShortId());
    URI base = uri == null ? null : URI.create(RESTUtil.stripTrailingSlash(uri));
    return new CatalogTransport(base, httpClient(properties), Map.copyOf(headers), mapper, null, trust, true,
        new ConcurrentHashMap<>());
  }

  @Override
  public CatalogTransport withAuthSession(AuthSession session) {
    if (session == null) {
      throw new IllegalArgumentException("Invalid auth session: null");
    }
    // Shares the HttpClient: no new connections, as Iceberg's child clients.
    return new CatalogTransport(baseUri, http, baseHeaders, mapper, session, trust, false, readers);
  }

  @Override
  protected HTTPRequest buildRequest(
      HTTPMethod method, String path, Map<String, String> queryParams, Map<String, String> headers, Object body) {
    return authenticated(ImmutableHTTPRequest.builder()
        .baseUri(baseUri)
        .method(method)
        .path(path)
        .queryParameters(queryParams == null ? Map.of() : queryParams)
        .headers(HTTPHeaders.of(headers == null ? Map.of() : headers))
        .body(body)
        .build());
  }

  /**
   * {@code request} as it is sent: on this catalog's base URI and mapper, with Iceberg's default
   * headers and the {@code header.*} values where it has none, then authenticated by the auth
   * session (last: a signing session signs the final headers and body).
   */
  HTTPRequest authenticated(HTTPRequest request) {
    Map<String, String> headers = new LinkedHashMap<>();
    request.headers().entries().forEach(h -> headers.put(h.name(), h.value()));
    headers.putIfAbsent("Accept", ContentType.APPLICATION_JSON.getMimeType());
    ContentType type = request.body() instanceof Map
        ? ContentType.APPLICATION_FORM_URLENCODED
        : ContentType.APPLICATION_JSON;
    headers.putIfAbsent("Content-Type", type.getMimeType());
    baseHeaders.forEach(headers::putIfAbsent);
    if (authSession == null) {
      throw new IllegalStateException("Invalid auth session: null");
    }
    return authSession.authenticate(ImmutableHTTPRequest.copyOf(request)
        .withBaseUri(baseUri)
        .withMapper(mapper)
        .withHeaders(HTTPHeaders.of(headers)));
  }

  @Override
  protected <T extends RESTResponse> T execute(
      HTTPRequest request,
      Class<T> responseType,
      Consumer<ErrorResponse> errorHandler,
      Consumer<Map<String, String>> responseHeaders) {
    return execute(request, responseType, errorHandler, responseHeaders, ParserContext.builder().build());
  }

  @Override
  protected <T extends RESTResponse> T execute(
      HTTPRequest request,
      Class<T> responseType,
      Consumer<ErrorResponse> errorHandler,
      Consumer<Map<String, String>> responseHeaders,
      ParserContext parserContext) {
    URI target = request.requestUri();
    trust.check(target, describe(request));
    HttpUriRequestBase sent = new HttpUriRequestBase(request.method().name(), target);
    request.headers().entries().forEach(h -> sent.addHeader(h.name(), h.value()));
    String body = request.encodedBody();
    if (body != null) {
      // UTF-8, as JSON is (Iceberg's client leaves StringEntity's ISO-8859-1 default, which turns
      // characters beyond Latin-1 into '?')
      sent.setEntity(new StringEntity(body, StandardCharsets.UTF_8));
    }
    try {
      return http.execute(sent, HttpClientContext.create(),
          response -> answer(request, target, response, responseType, errorHandler, responseHeaders, parserContext));
    } catch (IOException e) {
      throw new RESTException(e, "Error occurred while processing %s request", request.method());
    }
  }

  /** "POST of the OAuth2 token request", "GET of v1/namespaces": what a refusal names. */
  private static String describe(HTTPRequest request) {
    if (request.body() instanceof Map) {
      return "the OAuth2 token request (POST)";
    }
    return request.method() + " " + (Origin.isAbsolute(request.path()) ? "(a URL named by the catalog or a property)" : request.path());
  }

  private <T extends RESTResponse> T answer(HTTPRequest request, URI target, ClassicHttpResponse response,
      Class<T> responseType, Consumer<ErrorResponse> errorHandler, Consumer<Map<String, String>> responseHeaders,
      ParserContext parserContext) throws IOException {
    int code = response.getCode();
    if (CatalogRedirectException.isRedirect(code)) {
      Header location = response.getFirstHeader("Location");
      throw new CatalogRedirectException(code, request.method().name(), target.getRawPath(),
          location == null ? null : location.getValue());
    }
    Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    for (Header header : response.getHeaders()) {
      headers.put(header.getName(), header.getValue());
    }
    responseHeaders.accept(headers);
    boolean success = code == 200 || code == 202 || code == 204;
    if (code == 304) {
      // Only an ETag sent in If-None-Match earns a 304, and the shim sends none (every load fetches
      // fresh credentials): as Iceberg 1.11+ says of an unasked 304.
      throw new RESTException("Invalid (NOT_MODIFIED) response for request: method=%s, path=%s",
          request.method(), request.path());
    }
    if (code == 204 || (responseType == null && success)) {
      return null;
    }
    String body = bodyOf(response);
    if (!success) {
      throwFailure(code, response.getReasonPhrase(), body, errorHandler);
    }
    if (body == null) {
      throw new RESTException(
          "Invalid (null) response body for request (expected %s): method=%s, path=%s, status=%d",
          responseType.getSimpleName(), request.method(), request.path(), code);
    }
    try {
      ObjectReader reader = readers.computeIfAbsent(responseType, mapper::readerFor);
      if (parserContext != null && !parserContext.isEmpty()) {
        reader = reader.with(parserContext.toInjectableValues());
      }
      return reader.readValue(body);
    } catch (JsonProcessingException e) {
      throw new RESTException(e, "Received a success response code of %d, but failed to parse response body into %s",
          code, responseType.getSimpleName());
    }
  }

  private static String bodyOf(ClassicHttpResponse response) {
    try {
      return response.getEntity() == null ? null : EntityUtils.toString(response.getEntity(), StandardCharsets.UTF_8);
    } catch (IOException | ParseException e) {
      throw new RESTException(e, "Failed to convert HTTP response body to string");
    }
  }

  /**
   * An error answer through the caller's error handler, which throws the error's Iceberg type. As
   * Iceberg's client: the body is parsed by the handler when it is one of Iceberg's
   * {@link ErrorHandler}s; the handler not throwing is a RESTException.
   */
  private static void throwFailure(int code, String reason, String body, Consumer<ErrorResponse> errorHandler) {
    ErrorResponse error = null;
    if (body != null) {
      try {
        if (errorHandler instanceof ErrorHandler) {
          error = ((ErrorHandler) errorHandler).parseResponse(code, body);
        } else {
          LOG.warn("Unknown error handler {}, response body won't be parsed", errorHandler.getClass().getName());
          error = ErrorResponse.builder().responseCode(code).withMessage(body).build();
        }
      } catch (UncheckedIOException | IllegalArgumentException e) {
        LOG.error("Failed to parse an error response. Will create one instead.", e);
      }
    }
    if (error == null) {
      String message = reason != null && !reason.isEmpty() ? reason : EnglishReasonPhraseCatalog.INSTANCE.getReason(code, null);
      error = ErrorResponse.builder().responseCode(code).withMessage(message).withType("RESTException").build();
    }
    errorHandler.accept(error);
    throw new RESTException("Unhandled error: %s", error);
  }

  @Override
  public void close() throws IOException {
    if (root) { // the auth-session children share the HttpClient
      http.close(CloseMode.GRACEFUL);
    }
  }

  // ---------------------------------------------------------------- the HttpClient, as Iceberg's

  private static CloseableHttpClient httpClient(Map<String, String> properties) {
    HttpClientBuilder builder = HttpClients.custom()
        .setConnectionManager(connections(properties))
        .setRetryStrategy(new SafeMethodRetries(intProp(properties, MAX_RETRIES, 5)))
        .disableRedirectHandling();
    String userAgent = properties.get(USER_AGENT);
    if (userAgent != null) {
      builder.setUserAgent(userAgent);
    }
    String proxyHost = properties.get(PROXY_HOSTNAME);
    Integer proxyPort = properties.containsKey(PROXY_PORT) ? intProp(properties, PROXY_PORT, 0) : null;
    if (proxyHost != null && !proxyHost.isEmpty() && proxyPort != null) {
      builder.setProxy(new HttpHost(proxyHost, proxyPort));
      String user = properties.get(PROXY_USERNAME);
      String password = properties.get(PROXY_PASSWORD);
      if (user != null && !user.isEmpty() && password != null && !password.isEmpty()) {
        BasicCredentialsProvider credentials = new BasicCredentialsProvider(); // basic auth, as Iceberg's
        credentials.setCredentials(new AuthScope(proxyHost, proxyPort),
            new UsernamePasswordCredentials(user, password.toCharArray()));
        builder.setDefaultCredentialsProvider(credentials);
      }
    }
    return builder.build();
  }

  private static org.apache.iceberg.shaded.org.apache.hc.client5.http.io.HttpClientConnectionManager connections(
      Map<String, String> properties) {
    PoolingHttpClientConnectionManagerBuilder builder = PoolingHttpClientConnectionManagerBuilder.create();
    String connectMs = properties.get(CONNECTION_TIMEOUT_MS);
    String socketMs = properties.get(SOCKET_TIMEOUT_MS);
    if (connectMs != null || socketMs != null) {
      ConnectionConfig.Builder config = ConnectionConfig.custom();
      if (connectMs != null) {
        config.setConnectTimeout(Long.parseLong(connectMs.trim()), TimeUnit.MILLISECONDS);
      }
      if (socketMs != null) {
        config.setSocketTimeout(Integer.parseInt(socketMs.trim()), TimeUnit.MILLISECONDS);
      }
      builder.setDefaultConnectionConfig(config.build());
    }
    builder.useSystemProperties()
        .setMaxConnTotal(Integer.getInteger(MAX_CONNECTIONS, intProp(properties, MAX_CONNECTIONS, 100)))
        .setMaxConnPerRoute(intProp(properties, MAX_CONNECTIONS_PER_ROUTE, 100));
    TLSConfigurer tls = tlsConfigurer(properties);
    if (tls != null) {
      builder.setTlsSocketStrategy(new DefaultClientTlsStrategy(tls.sslContext(), tls.supportedProtocols(),
          tls.supportedCipherSuites(), SSLBufferMode.STATIC,
          tls.hostnameVerifier() != null ? HostnameVerificationPolicy.CLIENT : HostnameVerificationPolicy.BUILTIN,
          tls.hostnameVerifier()));
    }
    return builder.build();
  }

  private static TLSConfigurer tlsConfigurer(Map<String, String> properties) {
    String impl = properties.get(TLS_CONFIGURER);
    if (impl == null) {
      return null;
    }
    TLSConfigurer configurer;
    try {
      configurer = DynConstructors.builder(TLSConfigurer.class)
          .loader(CatalogTransport.class.getClassLoader())
          .impl(impl)
          .<TLSConfigurer>buildChecked()
          .newInstance();
    } catch (NoSuchMethodException e) {
      throw new IllegalArgumentException(
          String.format("Cannot initialize TLSConfigurer implementation %s: %s", impl, e.getMessage()), e);
    } catch (ClassCastException e) {
      throw new IllegalArgumentException(
          String.format("Cannot initialize TLSConfigurer, %s does not implement TLSConfigurer.", impl), e);
    }
    configurer.initialize(properties);
    return configurer;
  }

  private static int intProp(Map<String, String> properties, String key, int fallback) {
    String value = properties.get(key);
    if (value == null) {
      return fallback;
    }
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + " must be a whole number, not '" + value + "'");
    }
  }
}
