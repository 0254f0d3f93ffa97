package io.catalogext.shim.refresh;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.OneLine;
import io.catalogext.shim.util.Prefixes;
import io.catalogext.shim.wire.Origin;
import io.catalogext.shim.wire.RestJson;
import io.catalogext.shim.wire.TablePath;

import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.Endpoint;
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
 * catalog holds for that table (the table's own auth session, token refresh, scope, TLS and headers). The strategies are
 * tried in order, a failing one falls through to the next, and the result names what was used.
 *
 * <p>Python twin: {@code pyspark_catalog_ext.refresh.strategies}.
 */
public final class CatalogRefresher {
  private CatalogRefresher() {}

  /**
   * Runs the applicable strategies for {@code entry} of catalog {@code session}, under the entry's
   * own login (the client that handed the table out, or the table's auth session), else the
   * catalog's.
   */
  static RefreshResult fetch(CatalogSession session, RefreshSubject entry) {
    RESTClient own = entry.catalogClient();
    RESTClient client = own != null ? own : session.refreshClient();
    String root = session.pathRoot();
    if (client == null || root == null) {
      throw new IllegalStateException("catalog " + session.name + " has handed out no table yet");
    }
    TableContext c = entry.context();
    String tables = TablePath.tables(root, c.namespace);
    String table = TablePath.table(root, c.namespace, c.table);
    List<String> failures = new ArrayList<>();
    for (RefreshStrategy strategy : plan(session, entry)) {
      try {
        RefreshResult result = run(strategy, client, session, entry, tables, table);
        String name =
            failures.isEmpty() ? strategy.label : strategy.label + " (after " + String.join("; ", failures) + ")";
        return new RefreshResult(result.configByPrefix, result.refreshTokens, name);
      } catch (RuntimeException e) {
        if (strategy == RefreshStrategy.CREDENTIALS_ENDPOINT && isMissingEndpoint(e)) {
          session.unsupported.add(Endpoint.V1_TABLE_CREDENTIALS); // the catalog has none: not asked for an hour
        }
        failures.add(strategy.label + " failed: " + OneLine.of(e));
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
  static List<RefreshStrategy> plan(CatalogSession session, RefreshSubject entry) {
    TableContext c = entry.context();
    List<RefreshStrategy> plan = new ArrayList<>();
    if (!entry.refreshTokens().isEmpty()) {
      plan.add(RefreshStrategy.REFRESH_TOKEN);
    }
    if (c.refreshEndpoint != null) {
      plan.add(RefreshStrategy.REFRESH_ENDPOINT);
    }
    if (c.staged && c.stageCreateRequestJson != null) {
      plan.add(RefreshStrategy.RESTAGE);
    }
    if (!c.staged) {
      if (!session.unsupported.contains(Endpoint.V1_TABLE_CREDENTIALS)) {
        plan.add(RefreshStrategy.CREDENTIALS_ENDPOINT);
      }
      plan.add(RefreshStrategy.RELOAD);
    }
    return plan;
  }

  private static RefreshResult run(
      RefreshStrategy strategy,
      RESTClient client,
      CatalogSession session,
      RefreshSubject entry,
      String tables,
      String table) {
    switch (strategy) {
      case REFRESH_TOKEN:
        String token = tokenFor(entry.refreshTokens(), entry.context().location);
        return fromCredentials(
            client.get(table + "/credentials", Map.of("storageRefreshToken", token), LoadCredentialsResponse.class,
                Map.of(), ErrorHandlers.tableErrorHandler()),
            strategy.label);
      case REFRESH_ENDPOINT:
        return fromCredentials(
            client.get(endpointPath(session, entry.context().refreshEndpoint), Map.of(), LoadCredentialsResponse.class,
                Map.of(), ErrorHandlers.defaultErrorHandler()),
            strategy.label);
      case RESTAGE:
        LoadTableResponse staged =
            client.post(tables, restageRequest(entry.context()), LoadTableResponse.class, Map.of(),
                ErrorHandlers.tableErrorHandler());
        String location = staged.tableMetadata().location();
        if (entry.context().location != null && location != null
            && !strip(location).equals(strip(entry.context().location))) {
          throw new IllegalStateException("re-staging moved the table from " + entry.context().location + " to "
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
      return RestJson.icebergs().readValue(c.stageCreateRequestJson, CreateTableRequest.class);
    } catch (Exception e) {
      throw new IllegalStateException("the recorded stage-create request cannot be read back", e);
    }
  }

  /**
   * A server-given endpoint: a path under the catalog URI, or an absolute URL on the catalog's own
   * origin (our auth headers must never go to another host).
   */
  static String endpointPath(CatalogSession session, String endpoint) {
    if (!Origin.isAbsolute(endpoint)) {
      return endpoint.replaceAll("^/+", "");
    }
    session.trust.check(URI.create(endpoint.trim()), "the refresh-endpoint request");
    return endpoint;
  }

  /** The spec's rule: the token of the longest prefix covering the table's location. */
  static String tokenFor(Map<String, String> tokens, String location) {
    String best = Prefixes.longest(tokens.keySet(), location);
    return tokens.get(best != null ? best : tokens.keySet().iterator().next());
  }

  static RefreshResult fromTable(LoadTableResponse response, String strategy) {
    Map<String, Map<String, String>> byPrefix = new LinkedHashMap<>();
    Map<String, String> tokens = new LinkedHashMap<>();
    Map<String, String> tableConfig = storageOnly(response.config());
    if (CredentialSnapshot.holdsKeys(tableConfig)) {
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
      byPrefix.put(credential.prefix(), storageOnly(config));
    }
  }

  private static RefreshResult checked(RefreshResult result) {
    boolean any = result.configByPrefix.values().stream().anyMatch(CredentialSnapshot::holdsKeys);
    if (!any) {
      throw new IllegalStateException("the catalog answered the " + result.strategy + " request without storage credentials");
    }
    return result;
  }

  /** The keys of a store's credentials: s3.*, and the GCS token or ADLS SAS tokens with their expiries. */
  private static Map<String, String> storageOnly(Map<String, String> config) {
    Map<String, String> out = new LinkedHashMap<>();
    config.forEach(
        (k, v) -> {
          if (k.startsWith("s3.") || StoreTokens.isTokenKey(k)) {
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

}
