package io.catalogext.shim.spark;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * The raw GET Python's maintenance uses for Polaris's policy API goes through the catalog's own
 * authenticated client, to the catalog's own routes only, and answers JSON or one-line errors in
 * the types Python translates. Against a real HTTP server on loopback with a "wh" prefix.
 */
public class CatalogReadsTest {
  /** "METHOD path?query Authorization" of every request the catalog got. */
  private final ConcurrentLinkedQueue<String> seen = new ConcurrentLinkedQueue<>();

  private HttpServer catalogServer() throws Exception {
    return LoopbackCatalog.start(
        "test-reads-catalog",
        exchange -> {
          String path = exchange.getRequestURI().getPath();
          String query = exchange.getRequestURI().getRawQuery();
          seen.add(exchange.getRequestMethod() + " " + path + (query == null ? "" : "?" + query) + " "
              + exchange.getRequestHeaders().getFirst("Authorization"));
          if (path.endsWith("/v1/config")) {
            LoopbackCatalog.answer(exchange, 200, "{\"defaults\":{},\"overrides\":{\"prefix\":\"wh\"}}");
          } else if (path.equals("/v1/wh/namespaces/db/tables/t")) {
            LoopbackCatalog.answer(exchange, 200,
                LoopbackCatalog.loadedTable("file:/tmp/catalog-ext-reads", "{\"s3.secret-access-key\":\"vended-secret\"}"));
          } else if (path.equals("/polaris/v1/wh/applicable-policies")) {
            LoopbackCatalog.answer(exchange, 200, "{\"applicable-policies\":[{\"name\":\"p\"}]}");
          } else if (path.equals("/polaris/v1/wh/gone")) {
            LoopbackCatalog.answer(exchange, 404,
                "{\"error\":{\"message\":\"table db.x does not exist\",\"type\":\"NoSuchTableException\",\"code\":404}}");
          } else if (path.equals("/polaris/v1/wh/denied")) {
            LoopbackCatalog.answer(exchange, 403,
                "{\"error\":{\"message\":\"principal lacks LIST_POLICY\",\"type\":\"ForbiddenException\",\"code\":403}}");
          } else if (path.equals("/polaris/v1/wh/post-only")) {
            LoopbackCatalog.answer(exchange, 405, "{\"error\":{\"message\":\"nope\",\"type\":\"MethodNotAllowed\",\"code\":405}}");
          } else {
            byte[] body = "<html>no such route</html>".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(404, body.length); // a plain web server's 404: no ErrorModel
            exchange.getResponseBody().write(body);
            exchange.close();
          }
        });
  }

  private static ExtRESTCatalog catalog(HttpServer server, String name) {
    ExtRESTCatalog catalog = new ExtRESTCatalog();
    catalog.initialize(name, Map.of("uri", LoopbackCatalog.uri(server, ""), "token", "the-token"));
    return catalog;
  }

  @Test
  void testRawGetUsesTheCatalogsOwnSessionPrefixAndParameters() throws Exception {
    HttpServer server = catalogServer();
    try (ExtRESTCatalog catalog = catalog(server, "reads-test-get")) {
      CatalogSession session = CredentialRegistry.get().catalogs().named("reads-test-get");
      IllegalStateException early =
          assertThrows(IllegalStateException.class,
              () -> CatalogReads.get(session, "/polaris/v1/{prefix}/applicable-policies", Map.of()));
      assertTrue(early.getMessage().contains("has loaded no table yet"), early.getMessage());

      Table table = catalog.loadTable(TableIdentifier.of("db", "t"));
      JsonNode loaded = Json.read(CatalogReads.metadataJson(table));
      assertEquals("file:/tmp/catalog-ext-reads/metadata/v1.metadata.json", loaded.get("metadata-location").asText(),
          "metadata location");
      assertEquals("file:/tmp/catalog-ext-reads", loaded.get("metadata").get("location").asText(), "metadata");
      assertTrue(!loaded.toString().contains("vended-secret") && !loaded.has("config"), "no config, no secret");

      seen.clear();
      String answer = CatalogReads.get(session, "/polaris/v1/{prefix}/applicable-policies",
          Map.of("namespace", "a\u001fb", "target-name", "t"));
      assertEquals("p", Json.read(answer).get("applicable-policies").get(0).get("name").asText(), "raw JSON answer");
      String request = seen.peek();
      assertTrue(request != null && request.startsWith("GET /polaris/v1/wh/applicable-policies?"), "route: " + request);
      assertTrue(request.contains("namespace=a%1Fb") && request.contains("target-name=t"), "params: " + request);
      assertTrue(request.endsWith(" Bearer the-token"), "the catalog's own auth: " + request);
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testErrorsArriveInTheTypesPythonTranslates() throws Exception {
    HttpServer server = catalogServer();
    try (ExtRESTCatalog catalog = catalog(server, "reads-test-errors")) {
      catalog.loadTable(TableIdentifier.of("db", "t"));
      CatalogSession session = CredentialRegistry.get().catalogs().named("reads-test-errors");
      NoSuchTableException gone =
          assertThrows(NoSuchTableException.class, () -> CatalogReads.get(session, "polaris/v1/{prefix}/gone", Map.of()));
      assertTrue(gone.getMessage().contains("HTTP 404 NoSuchTableException: table db.x does not exist"), gone.getMessage());
      for (String route : List.of("polaris/v1/{prefix}/missing", "polaris/v1/{prefix}/post-only")) {
        UnsupportedOperationException none =
            assertThrows(UnsupportedOperationException.class, () -> CatalogReads.get(session, route, Map.of()));
        assertTrue(none.getMessage().startsWith("Server does not support endpoint: GET " + route + " (HTTP 40"),
            none.getMessage());
        assertTrue(!none.getMessage().contains("\n"), "one line");
        if (route.endsWith("missing")) {
          assertTrue(none.getMessage().contains("(HTTP 404 NotAnErrorModel: the answer is not an Iceberg error body)"),
              "a plain 404 page: " + none.getMessage());
        }
      }
      ForbiddenException denied =
          assertThrows(ForbiddenException.class, () -> CatalogReads.get(session, "polaris/v1/{prefix}/denied", Map.of()));
      assertTrue(denied.getMessage().contains("principal lacks LIST_POLICY"), denied.getMessage());
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testOnlyRoutesOfTheCatalogsOwnRootAreAccepted() {
    assertEquals("polaris/v1/wh/applicable-policies",
        CatalogReads.resolve("/polaris/v1/{prefix}/applicable-policies", "v1/wh/"), "polaris route");
    assertEquals("v1/namespaces/a/tables/t/notifications",
        CatalogReads.resolve("v1/{prefix}/namespaces/a/tables/t/notifications", "v1/"), "no prefix");
    for (String bad : List.of("http://elsewhere/v1/{prefix}/x", "//elsewhere/polaris/v1/{prefix}/x",
        "v2/{prefix}/x", "v1/{prefix}/../../x", "v1/{prefix}/a/%2e%2e/x", "v1/{prefix}/a?token=1",
        "v1/{prefix}/a//b", "v1/{prefix}/", "polaris/v1/{prefix}/a/%2Fetc")) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> CatalogReads.resolve(bad, "v1/wh/"));
      assertTrue(e.getMessage().startsWith("catalog route '"), bad + ": " + e.getMessage());
    }
  }

  @Test
  void testUriLosesUserInfoAndQuery() {
    assertEquals("https://cat.example:8443/api/catalog",
        CatalogReads.withoutSecrets("https://user:pw@cat.example:8443/api/catalog?token=abc#x"), "stripped");
    assertEquals("http://127.0.0.1/x", CatalogReads.withoutSecrets("http://127.0.0.1/x"), "kept");
    assertEquals("http://[::1]:9/a%20b/", CatalogReads.withoutSecrets("http://u@[::1]:9/a%20b/"), "raw path, IPv6");
    assertEquals("<invalid uri>", CatalogReads.withoutSecrets("not a uri"), "no scheme or host");
  }
}
