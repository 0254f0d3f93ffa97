package io.catalogext.shim.refresh;

import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.wire.TablePath;
import io.catalogext.shim.util.Json;

import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.ErrorHandler;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.credentials.Credential;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.LoadCredentialsResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;

/**
 * Fresh credentials for a driver entry from the catalog itself, through the HTTP client Spark's
 * catalog holds (same auth session, token refresh, scope, TLS and headers). The strategies are
 * tried in order, a failing one falls through to the next, and the result names what was used.
 */
public final class CatalogRefresher {
  /** The catalog strategies, in the documented order; {@link #label} is what status and logs show. */
  public enum Strategy {
    REFRESH_TOKEN("storage-refresh-token"),
    REFRESH_ENDPOINT("refresh-endpoint"),
    RESTAGE("re-stage"),
    CREDENTIALS_ENDPOINT("credentials-endpoint"),
    RELOAD("reload");

    final String label;

    Strategy(String label) {
      this.label = label;
    }

    @Override
    public String toString() {
      return label;
    }
  }

  private CatalogRefresher() {}

  /** Runs the applicable strategies for {@code entry} of catalog {@code session}. */
  static RefreshResult fetch(CatalogSession session, TableEntry entry) {
    RESTClient client = session.refreshClient();
    String root = session.pathRoot();
    if (client == null || root == null) {
      throw new IllegalStateException("catalog " + session.name + " has handed out no table yet");
    }
    TableContext c = entry.context;
    String tables = TablePath.tables(root, c.namespace);
    String table = TablePath.table(root, c.namespace, c.table);
    List<String> failures = new ArrayList<>();
    for (Strategy strategy : plan(session, entry)) {
      try {
        RefreshResult result = run(strategy, client, session, entry, tables, table);
        String name =
            failures.isEmpty() ? strategy.label : strategy.label + " (after " + String.join("; ", failures) + ")";
        return new RefreshResult(result.configByPrefix, result.refreshTokens, name);
      } catch (RuntimeException e) {
        if (strategy == Strategy.CREDENTIALS_ENDPOINT && isMissingEndpoint(e)) {
          session.unsupported.add(strategy); // the catalog has no such endpoint: not asked for an hour
        }
        failures.add(strategy.label + " failed: " + oneLine(e));
      }
    }
    if (failures.isEmpty()) {
      throw new IllegalStateException(
          "no refresh strategy applies to table " + c.qualifiedName() + " (staged=" + c.staged + ")");
    }
    throw new IllegalStateException(
        "cannot refresh storage credentials for table " + c.qualifiedName() + ": " + String.join("; ", failures));
  }

  /** The applicable strategies, in the documented order. */
  static List<Strategy> plan(CatalogSession session, TableEntry entry) {
    TableContext c = entry.context;
    List<Strategy> plan = new ArrayList<>();
    if (!entry.refreshTokens().isEmpty()) {
      plan.add(Strategy.REFRESH_TOKEN);
    }
    if (c.refreshEndpoint != null) {
      plan.add(Strategy.REFRESH_ENDPOINT);
    }
    if (c.staged && c.stageCreateRequestJson != null) {
      plan.add(Strategy.RESTAGE);
    }
    if (!c.staged) {
      if (!session.unsupported.contains(Strategy.CREDENTIALS_ENDPOINT)) {
        plan.add(Strategy.CREDENTIALS_ENDPOINT);
      }
      plan.add(Strategy.RELOAD);
    }
    return plan;
  }

  private static RefreshResult run(
      Strategy strategy,
      RESTClient client,
      CatalogSession session,
      TableEntry entry,
      String tables,
      String table) {
    switch (strategy) {
      case REFRESH_TOKEN:
        String token = tokenFor(entry.refreshTokens(), entry.context.location);
        return fromCredentials(
            client.get(table + "/credentials", Map.of("storageRefreshToken", token), LoadCredentialsResponse.class,
                Map.of(), ErrorHandlers.tableErrorHandler()),
            strategy.label);
      case REFRESH_ENDPOINT:
        return fromCredentials(
            client.get(endpointPath(session, entry.context.refreshEndpoint), Map.of(), LoadCredentialsResponse.class,
                Map.of(), ErrorHandlers.defaultErrorHandler()),
            strategy.label);
      case RESTAGE:
        LoadTableResponse staged =
            client.post(tables, restageRequest(entry.context), LoadTableResponse.class, Map.of(),
                ErrorHandlers.tableErrorHandler());
        String location = staged.tableMetadata().location();
        if (entry.context.location != null && location != null
            && !strip(location).equals(strip(entry.context.location))) {
          throw new IllegalStateException("re-staging moved the table from " + entry.context.location + " to "
              + location + "; the catalog does not keep staged locations");
        }
        return fromTable(staged, strategy.label);
      case CREDENTIALS_ENDPOINT:
        return fromCredentials(
            client.get(table + "/credentials", Map.of(), LoadCredentialsResponse.class, Map.of(),
                MissingAsUnsupported.TABLE),
            strategy.label);
      case RELOAD:
        return fromTable(
            client.get(table, Map.of(), LoadTableResponse.class, Map.of(), ErrorHandlers.tableErrorHandler()),
            strategy.label);
      default:
        throw new IllegalArgumentException("unknown strategy " + strategy);
    }
  }

  private static CreateTableRequest restageRequest(TableContext c) {
    try {
      return Json.restMapper().readValue(c.stageCreateRequestJson, CreateTableRequest.class);
    } catch (Exception e) {
      throw new IllegalStateException("the recorded stage-create request cannot be read back", e);
    }
  }

  /**
   * A server-given endpoint: a path under the catalog URI, or an absolute URL on the catalog's own
   * origin (our auth headers must never go to another host).
   */
  static String endpointPath(CatalogSession session, String endpoint) {
    if (!endpoint.startsWith("http://") && !endpoint.startsWith("https://")) {
      return endpoint.replaceAll("^/+", "");
    }
    URI target = URI.create(endpoint);
    URI base = URI.create(session.uri);
    if (!(target.getScheme().equals(base.getScheme()) && String.valueOf(target.getHost()).equals(base.getHost())
        && target.getPort() == base.getPort())) {
      throw new IllegalStateException("refusing refresh endpoint on another origin than the catalog's");
    }
    return endpoint;
  }

  /** The spec's rule: the token of the longest prefix covering the table's location. */
  static String tokenFor(Map<String, String> tokens, String location) {
    String best = null;
    for (String prefix : tokens.keySet()) {
      if (location != null && location.startsWith(prefix) && (best == null || prefix.length() > best.length())) {
        best = prefix;
      }
    }
    return tokens.get(best != null ? best : tokens.keySet().iterator().next());
  }

  static RefreshResult fromTable(LoadTableResponse response, String strategy) {
    Map<String, Map<String, String>> byPrefix = new LinkedHashMap<>();
    Map<String, String> tokens = new LinkedHashMap<>();
    Map<String, String> tableConfig = s3Only(response.config());
    if (tableConfig.containsKey(ShimKeys.ACCESS_KEY_ID)) {
      byPrefix.put("", tableConfig);
    }
    addCredentials(response.credentials(), byPrefix, tokens);
    return checked(new RefreshResult(byPrefix, tokens, strategy));
  }

  static RefreshResult fromCredentials(LoadCredentialsResponse response, String strategy) {
    Map<String, Map<String, String>> byPrefix = new LinkedHashMap<>();
    Map<String, String> tokens = new LinkedHashMap<>();
    addCredentials(response.credentials(), byPrefix, tokens);
    return checked(new RefreshResult(byPrefix, tokens, strategy));
  }

  private static void addCredentials(
      List<Credential> credentials, Map<String, Map<String, String>> byPrefix, Map<String, String> tokens) {
    for (Credential credential : credentials) {
      Map<String, String> config = new LinkedHashMap<>(credential.config());
      String token = config.remove(ShimKeys.CAPTURED_REFRESH_TOKEN);
      if (token != null) {
        tokens.put(credential.prefix(), token);
      }
      byPrefix.put(credential.prefix(), s3Only(config));
    }
  }

  private static RefreshResult checked(RefreshResult result) {
    boolean any = result.configByPrefix.values().stream().anyMatch(c -> c.containsKey(ShimKeys.ACCESS_KEY_ID));
    if (!any) {
      throw new IllegalStateException("the catalog answered the " + result.strategy + " request without storage credentials");
    }
    return result;
  }

  private static Map<String, String> s3Only(Map<String, String> config) {
    Map<String, String> out = new LinkedHashMap<>();
    config.forEach(
        (k, v) -> {
          if (k.startsWith("s3.")) {
            out.put(k, v);
          }
        });
    return out;
  }

  /**
   * 404, 405 or 501 (as the Python side counts them), or the 400 Iceberg's REST servlet (its REST
   * fixture) answers for a path it has no route for; any other 400 is a bad request, not a missing
   * endpoint.
   */
  static boolean isMissingEndpoint(RuntimeException e) {
    return e instanceof NoSuchTableException || e instanceof org.apache.iceberg.exceptions.NotFoundException
        || e instanceof UnsupportedOperationException
        || (e instanceof BadRequestException && String.valueOf(e.getMessage()).contains("No route for request"));
  }

  /**
   * Iceberg's table error handler, except that a 405 (which it turns into a RESTException like any
   * other unexpected code) and a 501 end as UnsupportedOperationException: "this endpoint is not
   * here", whatever the body says.
   */
  static final class MissingAsUnsupported extends ErrorHandler {
    // Iceberg's handlers are all ErrorHandler subclasses (declared as Consumer): HTTPClient parses
    // the body only through an ErrorHandler, so the delegate's parser is kept.
    static final MissingAsUnsupported TABLE = new MissingAsUnsupported((ErrorHandler) ErrorHandlers.tableErrorHandler());
    private final ErrorHandler delegate;

    private MissingAsUnsupported(ErrorHandler delegate) {
      this.delegate = delegate;
    }

    @Override
    public ErrorResponse parseResponse(int code, String json) {
      return delegate.parseResponse(code, json);
    }

    @Override
    public void accept(ErrorResponse error) {
      if (error.code() == 405 || error.code() == 501) {
        throw new UnsupportedOperationException("HTTP " + error.code() + ": " + error.message());
      }
      delegate.accept(error);
    }
  }

  private static String strip(String location) {
    return location.replaceAll("/+$", "");
  }

  public static String oneLine(Throwable e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return message.replaceAll("\\s+", " ").trim();
  }
}
