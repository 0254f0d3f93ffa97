package io.catalogext.shim.spark;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.Json;
import io.catalogext.shim.util.OneLine;
import io.catalogext.shim.wire.RawJson;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.ErrorHandler;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.ErrorResponseParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.spark.source.HasIcebergCatalog;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;

/**
 * Read-only access to a Spark catalog for Python's tools (maintenance, notifications): namespaces,
 * tables and table metadata through the Spark catalog itself, and one GET of a catalog route
 * (Polaris's policy API) through the catalog's own authenticated HTTP client. Python never holds
 * the catalog's credentials: every read runs on the session Spark already has.
 *
 * <p>Listing and loading use Spark's catalog API and Iceberg's {@link Catalog}, so they work for
 * any Iceberg Spark catalog, with or without the shim. The raw GET needs the shim's
 * {@link CatalogSession}, which records the auth-bound client of the catalog's table operations.
 */
public final class CatalogReads {
  private CatalogReads() {}

  /** Longest server message kept in an error: enough to act on, never a whole HTML page. */
  static final int MAX_MESSAGE_CHARS = 300;

  // ---- the Spark catalog

  /** The session's catalog {@code name}, initialised; one line if there is none. */
  static CatalogPlugin plugin(SparkSession spark, String name) {
    try {
      return spark.sessionState().catalogManager().catalog(name);
    } catch (Exception e) { // Spark throws its checked CatalogNotFoundException from Scala
      if (e.getClass().getSimpleName().equals("CatalogNotFoundException")) {
        throw new IllegalArgumentException(
            "no Spark catalog '" + name + "' in this session; check the name (spark.sql.catalog." + name + ")");
      }
      if (e instanceof RuntimeException) {
        throw (RuntimeException) e;
      }
      throw new IllegalStateException(OneLine.of(e), e);
    }
  }

  /** Spark catalog {@code name} if it is one of Iceberg's (SparkCatalog, SparkSessionCatalog); else one line. */
  static HasIcebergCatalog sparkCatalog(SparkSession spark, String name) {
    CatalogPlugin plugin = plugin(spark, name);
    if (!(plugin instanceof HasIcebergCatalog) || !(plugin instanceof SupportsNamespaces)) {
      throw new IllegalArgumentException(
          "Spark catalog '" + name + "' is not an Iceberg catalog (" + plugin.getClass().getName()
              + "); configure it as org.apache.iceberg.spark.SparkCatalog");
    }
    return (HasIcebergCatalog) plugin;
  }

  /** The Iceberg catalog behind Spark catalog {@code name} (a CachingCatalog when Spark caches). */
  static Catalog iceberg(SparkSession spark, String name) {
    return sparkCatalog(spark, name).icebergCatalog();
  }

  /** Namespaces through Spark's API: a CachingCatalog has none of its own, Spark's catalog delegates. */
  private static SupportsNamespaces namespaces(SparkSession spark, String name) {
    return (SupportsNamespaces) sparkCatalog(spark, name);
  }

  /**
   * JSON {"uri", "warehouse", "shim"}: the catalog's URI without user info or query (never a
   * secret), its warehouse, and whether it runs on the shim's catalog ({@link ShimKeys#CATALOG_IMPL}).
   */
  public static String describe(SparkSession spark, String name) {
    sparkCatalog(spark, name);
    String prefix = "spark.sql.catalog." + name + ".";
    ObjectNode out = Json.object();
    out.put("uri", withoutSecrets(conf(spark, prefix + "uri")));
    out.put("warehouse", conf(spark, prefix + "warehouse"));
    out.put("shim", usesShim(spark, name));
    return Json.write(out);
  }

  /** Whether Spark catalog {@code name} runs on the shim's catalog ({@code catalog-impl}). */
  private static boolean usesShim(SparkSession spark, String name) {
    return ShimKeys.CATALOG_IMPL.equals(conf(spark, "spark.sql.catalog." + name + ".catalog-impl"));
  }

  private static String conf(SparkSession spark, String key) {
    return spark.sessionState().conf().getConfString(key, null);
  }

  /** scheme://host[:port]/path of a URI: user info, query and fragment can carry secrets. */
  static String withoutSecrets(String uri) {
    if (uri == null) {
      return null;
    }
    try {
      java.net.URI u = new java.net.URI(uri);
      if (u.getScheme() == null || u.getHost() == null) {
        return "<invalid uri>";
      }
      // The raw path, as given: maintenance's state keys must match those of Python's CatalogRest.
      return u.getScheme() + "://" + u.getHost() + (u.getPort() < 0 ? "" : ":" + u.getPort())
          + (u.getRawPath() == null ? "" : u.getRawPath());
    } catch (java.net.URISyntaxException e) {
      return "<invalid uri>";
    }
  }

  /** JSON array of namespaces (each an array of levels) directly under {@code parent}. */
  public static String listNamespaces(SparkSession spark, String name, List<String> parent) throws Exception {
    SupportsNamespaces catalog = namespaces(spark, name);
    String[][] found = parent.isEmpty() ? catalog.listNamespaces() : catalog.listNamespaces(levels(parent));
    ArrayNode out = Json.MAPPER.createArrayNode();
    for (String[] ns : found) {
      ArrayNode levels = out.addArray();
      Arrays.stream(ns).forEach(levels::add);
    }
    return Json.write(out);
  }

  public static boolean namespaceExists(SparkSession spark, String name, List<String> namespace) {
    return namespaces(spark, name).namespaceExists(levels(namespace));
  }

  /** JSON array of table identifiers (namespace levels, then the name) in {@code namespace}. */
  public static String listTables(SparkSession spark, String name, List<String> namespace) throws Exception {
    Identifier[] found = sparkCatalog(spark, name).listTables(levels(namespace));
    ArrayNode out = Json.MAPPER.createArrayNode();
    for (Identifier ident : found) {
      ArrayNode parts = out.addArray();
      Arrays.stream(ident.namespace()).forEach(parts::add);
      parts.add(ident.name());
    }
    return Json.write(out);
  }

  public static boolean tableExists(SparkSession spark, String name, List<String> identifier) {
    return iceberg(spark, name).tableExists(identifier(identifier));
  }

  /**
   * JSON {"metadata-location", "metadata"} of the table as the catalog has it now. Spark's catalog
   * caches loaded tables, so the entry is invalidated first: a compaction or expiry that just
   * committed must show. No config or storage credentials: the answer has no secret.
   */
  public static String loadTable(SparkSession spark, String name, List<String> identifier) {
    Catalog catalog = iceberg(spark, name);
    TableIdentifier ident = identifier(identifier);
    catalog.invalidateTable(ident);
    return metadataJson(catalog.loadTable(ident));
  }

  static String metadataJson(Table table) {
    if (!(table instanceof HasTableOperations)) {
      throw new IllegalArgumentException(table.name() + " is not a catalog table (no table operations)");
    }
    TableMetadata metadata = ((HasTableOperations) table).operations().current();
    ObjectNode out = Json.object();
    out.put("metadata-location", metadata.metadataFileLocation());
    out.set("metadata", Json.read(TableMetadataParser.toJson(metadata)));
    return Json.write(out);
  }

  private static String[] levels(List<String> levels) {
    return levels.toArray(new String[0]);
  }

  private static TableIdentifier identifier(List<String> parts) {
    if (parts.size() < 2) {
      throw new IllegalArgumentException(
          "table identifier " + String.join(".", parts) + " needs a namespace and a name (ns.table)");
    }
    return TableIdentifier.of(parts.toArray(new String[0]));
  }

  // ---- one GET of a catalog route, on the catalog's own session

  /** The shim session of Spark catalog {@code name}; one line if the catalog does not use the shim. */
  public static CatalogSession session(SparkSession spark, String name) {
    sparkCatalog(spark, name); // initialises the catalog, so its session exists
    if (!usesShim(spark, name)) {
      throw new IllegalArgumentException(
          "Spark catalog '" + name + "' does not use catalog-impl=" + ShimKeys.CATALOG_IMPL
              + ", so only Iceberg's own API can be read through it; configure it with pyspark_catalog_ext.configure");
    }
    // This Spark session's own catalog of that name; else (initialised on a thread where another
    // session was current) the JVM's latest of that name, if it has this session's URI.
    CatalogSession own = CredentialRegistry.get().catalogs().named(name, spark);
    if (own != null) {
      return own;
    }
    CatalogSession session = CredentialRegistry.get().catalogs().named(name);
    String uri = conf(spark, "spark.sql.catalog." + name + ".uri");
    if (session == null || uri == null || !uri.equals(session.uri)) {
      // Another catalog of that name was initialised later in this JVM (another SparkSession).
      throw new IllegalStateException(
          "the shim's catalog '" + name + "' in this JVM is not this session's (another session re-used the name)");
    }
    return session;
  }

  /**
   * GET {@code route} ("v1/{prefix}/..." or "polaris/v1/{prefix}/...", relative to the catalog's
   * URI) with {@code params}, through {@code session}'s authenticated client: JSON text of the
   * answer, or "null" for an empty one. The route is never an absolute URL, so the catalog's
   * token goes nowhere but the catalog.
   */
  public static String get(CatalogSession session, String route, Map<String, String> params) {
    RESTClient client = session.refreshClient();
    String root = session.pathRoot();
    if (client == null || root == null) {
      throw new IllegalStateException(
          "catalog " + session.name + " has loaded no table yet: its routes are read with the client of its table loads");
    }
    String path = resolve(route, root);
    RawJson answer =
        client.get(path, params, RawJson.class, Map.of(), new ReadErrors("GET " + route));
    return answer == null ? "null" : Json.write(answer.body);
  }

  private static final String V1 = "v1/{prefix}/";
  private static final String POLARIS = "polaris/" + V1;

  /** The request path of {@code route} under the catalog's path root ({@code v1/{prefix}/}). */
  static String resolve(String route, String root) {
    String r = route.replaceAll("^/+", "");
    String head;
    String tail;
    if (r.startsWith(V1)) {
      head = "";
      tail = r.substring(V1.length());
    } else if (r.startsWith(POLARIS)) {
      head = "polaris/";
      tail = r.substring(POLARIS.length());
    } else {
      throw new IllegalArgumentException(
          "catalog route '" + route + "' must start with " + V1 + " or " + POLARIS + " (a route of the catalog's own URI)");
    }
    if (!tail.matches("[A-Za-z0-9._~%-]+(/[A-Za-z0-9._~%-]+)*")) {
      throw new IllegalArgumentException(
          "catalog route '" + route + "' may only have plain path segments (no query, no empty segment)");
    }
    for (String segment : tail.split("/")) {
      String decoded = RESTUtil.decodeString(segment);
      if (decoded.equals(".") || decoded.equals("..") || decoded.contains("/")) {
        throw new IllegalArgumentException("catalog route '" + route + "' has a '.', '..' or encoded '/' segment");
      }
    }
    if (!root.startsWith("v1/")) {
      throw new IllegalStateException("the catalog's table paths start with '" + root + "', not v1/");
    }
    return head + root + tail;
  }

  /**
   * Errors of a raw GET in Iceberg's exception types (Python's java_errors table maps them): a 404
   * naming a missing table or namespace stays "not found"; any other 404, and 405/406, mean the
   * catalog has no such route, as Iceberg's own check says ("Server does not support endpoint");
   * the rest is Iceberg's default handling (400, 401, 403, 5xx).
   */
  static final class ReadErrors extends ErrorHandler {
    private final String request;

    ReadErrors(String request) {
      this.request = request;
    }

    @Override
    public ErrorResponse parseResponse(int code, String json) {
      try {
        return ErrorResponseParser.fromJson(json);
      } catch (RuntimeException e) {
        // A plain web server's page, not an ErrorModel: answered here, because Iceberg would log
        // its parse failure with a stack trace at ERROR, on the console of every `maintain` run.
        return ErrorResponse.builder().responseCode(code).withType("NotAnErrorModel")
            .withMessage("the answer is not an Iceberg error body").build();
      }
    }

    @Override
    public void accept(ErrorResponse error) {
      int code = error.code() == null ? 0 : error.code();
      String detail = "HTTP " + code + " " + error.type() + ": " + shortMessage(error.message());
      if (code == 404 && "NoSuchTableException".equals(error.type())) {
        throw new NoSuchTableException("%s answered %s", request, detail);
      }
      if (code == 404 && "NoSuchNamespaceException".equals(error.type())) {
        throw new NoSuchNamespaceException("%s answered %s", request, detail);
      }
      if (code == 404 || code == 405 || code == 406) {
        throw new UnsupportedOperationException("Server does not support endpoint: " + request + " (" + detail + ")");
      }
      ErrorHandlers.defaultErrorHandler().accept(error);
    }
  }

  static String shortMessage(String message) {
    String text = message == null ? "" : message.replaceAll("\\s+", " ").trim();
    return text.length() > MAX_MESSAGE_CHARS ? text.substring(0, MAX_MESSAGE_CHARS) + "..." : text;
  }

  /** A JSON array of strings ("[\"db\", \"t\"]") as a list; one line if it is anything else. */
  public static List<String> strings(String json) {
    JsonNode node = Json.read(json);
    if (!node.isArray()) {
      throw new IllegalArgumentException("expected a JSON array of names, got " + node.getNodeType());
    }
    List<String> out = new ArrayList<>();
    node.forEach(n -> out.add(n.asText()));
    return out;
  }

  /** A JSON object of strings as a map (query parameters). */
  public static Map<String, String> params(String json) {
    return json == null || json.isEmpty() ? new LinkedHashMap<>() : Json.stringMap(Json.read(json));
  }
}
