package io.catalogext.shim.http;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.iceberg.Table;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A catalog that issues a login per table (Iceberg builds each loaded table's own auth session with
 * the catalog's AuthManager, {@code tableSession}): each table's credentials are refreshed under
 * that table's login, however many other tables were loaded or committed since. Real Iceberg REST
 * catalog; a loopback catalog that records who asked for which table's credentials; the per-table
 * logins come from {@link PerTableLogins}, an AuthManager the user would configure
 * ({@code rest.auth.type}).
 */
public class TableAuthSessionTest {
  private static final String CATALOG = "per-table-tokens"; // a name no other test of this JVM uses
  private HttpServer server;
  /** "t: Bearer ..." for each credentials request, in order. */
  private final List<String> credentialAsks = new CopyOnWriteArrayList<>();
  private final Map<String, Integer> keysHandedOut = new ConcurrentHashMap<>();

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  private void answer(HttpExchange exchange) throws IOException {
    exchange.getRequestBody().readAllBytes();
    String path = exchange.getRequestURI().getPath();
    if (path.endsWith("/v1/config")) {
      LoopbackCatalog.answer(exchange, 200, "{\"defaults\":{},\"overrides\":{}}");
      return;
    }
    String[] parts = path.split("/"); // "", "v1", "namespaces", "db", "tables", t[, "credentials"]
    String table = parts[5];
    if (path.endsWith("/credentials")) {
      credentialAsks.add(table + ": " + exchange.getRequestHeaders().getFirst("Authorization"));
      LoopbackCatalog.answer(exchange, 200, "{\"storage-credentials\":[{\"prefix\":\"s3://bucket/db/" + table + "\","
          + "\"config\":" + keys(table) + "}]}");
      return;
    }
    // A load or a commit, each answered with the table's keys.
    LoopbackCatalog.answer(exchange, 200, LoopbackCatalog.loadedTable("s3://bucket/db/" + table, keys(table)));
  }

  private String keys(String table) {
    int n = keysHandedOut.merge(table, 1, Integer::sum);
    return "{\"s3.access-key-id\":\"" + table.toUpperCase() + n + "\",\"s3.secret-access-key\":\"secret\","
        + "\"s3.session-token-expires-at-ms\":\"" + (System.currentTimeMillis() + 3_600_000) + "\"}";
  }

  /** Refreshes the registry's entry of table {@code table} of this test's catalog now. */
  private static void refresh(String table) throws Exception {
    for (JsonNode entry : Json.read(CredentialRegistry.get().describe())) {
      if (CATALOG.equals(entry.path("catalog").asText()) && table.equals(entry.path("table").asText())) {
        assertTrue(CredentialRegistry.get().refresh(entry.path("handle").asText(), entry.path("generation").asLong()),
            "the refresh of " + table + " fetched");
        return;
      }
    }
    throw new AssertionError("no entry for table " + table);
  }

  @Test
  void eachTableIsRefreshedUnderItsOwnTokenAfterOtherTablesWereLoadedAndCommitted() throws Exception {
    server = LoopbackCatalog.start("test-table-tokens", this::answer);
    Map<String, String> props = Map.of(
        "uri", LoopbackCatalog.uri(server, ""),
        "rest.auth.type", PerTableLogins.class.getName(),
        "io-impl", S3FileIO.class.getName(),
        "s3.endpoint", "http://127.0.0.1:9", // never called: no file is read
        "client.region", "us-east-1");
    try (ExtRESTCatalog catalog = new ExtRESTCatalog()) {
      catalog.initialize(CATALOG, props);
      Table a = catalog.loadTable(TableIdentifier.of("db", "a"));
      Table b = catalog.loadTable(TableIdentifier.of("db", "b")); // loaded after a
      b.updateProperties().set("owner", "bob").commit(); // and committed after a was loaded

      refresh("a");
      refresh("b");
      catalog.loadTable(TableIdentifier.of("db", "c"));
      refresh("a");
      assertEquals(List.of("a: Bearer token-of-a", "b: Bearer token-of-b", "a: Bearer token-of-a"), credentialAsks);
      a.io().close();
      b.io().close();
    }
  }
}
