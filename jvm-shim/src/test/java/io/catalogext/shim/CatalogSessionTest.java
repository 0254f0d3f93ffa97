package io.catalogext.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.util.Map;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * Each initialised {@link ExtRESTCatalog} gets its own {@link CatalogSession}: its own guard (fed by
 * its own {@code /v1/config}), its own refresh policy; and the static helpers Python and the Spark
 * tests call ({@link CommitGuard#describe}, {@link CommitGuard#resetEvidence}) reach every session.
 * Against a real HTTP server on loopback whose {@code /a}, {@code /b} and {@code /c} catalogs
 * advertise different idempotency-key lifetimes.
 */
public class CatalogSessionTest {
  private static HttpServer configServer() throws Exception {
    return LoopbackCatalog.start(
        "test-config-catalog",
        exchange -> {
          String path = exchange.getRequestURI().getPath();
          String lifetime = path.startsWith("/a/") ? ",\"idempotency-key-lifetime\":\"PT30M\""
              : path.startsWith("/c/") ? ",\"idempotency-key-lifetime\":\"soon\"" : "";
          LoopbackCatalog.answer(exchange, path.endsWith("/v1/config") ? 200 : 404,
              "{\"defaults\":{},\"overrides\":{}" + lifetime + "}");
        });
  }

  private static ExtRESTCatalog catalog(HttpServer server, String name, String root, Map<String, String> extra) {
    Map<String, String> props = new java.util.HashMap<>(extra);
    props.put("uri", LoopbackCatalog.uri(server, root));
    ExtRESTCatalog catalog = new ExtRESTCatalog();
    catalog.initialize(name, props);
    return catalog;
  }

  private static CatalogSession session(String name) {
    return CredentialRegistry.get().sessions().stream().filter(s -> s.name.equals(name)).findFirst()
        .orElseThrow(() -> new AssertionError("no session " + name));
  }

  @Test
  void testEachCatalogHasItsOwnSessionGuardAndPolicy() throws Exception {
    HttpServer server = configServer();
    try (ExtRESTCatalog a = catalog(server, "session-test-a", "/a", Map.of("catalog-ext.refresh.timeout-ms", "7000"));
        ExtRESTCatalog b = catalog(server, "session-test-b", "/b", Map.of())) {
      CatalogSession sa = session(a.name());
      CatalogSession sb = session(b.name());
      assertTrue(sa.guard != sb.guard, "one guard per catalog");
      assertTrue(sa.guard.deduplicating() && !sb.guard.idempotencyEnabled(), "each guard heard its own /v1/config");
      assertEquals(7000L, sa.policy.timeoutMs, "a's refresh settings");
      assertEquals(RefreshPolicy.defaults().timeoutMs, sb.policy.timeoutMs, "b keeps the defaults");
      assertTrue(sa.uri.endsWith("/a") && sa.pathRoot() == null, "its URI; no path root before a table op");

      JsonNode described = Json.read(CommitGuard.describe());
      assertEquals("PT30M", described.path("session-test-a").path("idempotency_key_lifetime").asText(), "describe a");
      assertTrue(described.path("session-test-a").path("idempotency").asBoolean(), "a sends keys");
      assertTrue(described.path("session-test-b").path("idempotency_key_lifetime").isNull(), "describe b");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testResetEvidenceReachesEverySession() throws Exception {
    HttpServer server = configServer();
    try (ExtRESTCatalog c = catalog(server, "session-test-c", "/c", Map.of())) {
      JsonNode before = Json.read(CommitGuard.describe()).path(c.name()).path("events");
      assertTrue(before.toString().contains("unparseable idempotency-key-lifetime 'soon'"), "evidence: " + before);
      CommitGuard.resetEvidence();
      JsonNode after = Json.read(CommitGuard.describe()).path("session-test-c").path("events");
      assertTrue(after.isMissingNode() || after.size() == 0, "forgotten: " + after);
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testAReinitialisedCatalogNameGetsAFreshSession() throws Exception {
    HttpServer server = configServer();
    try (ExtRESTCatalog first = catalog(server, "session-test-d", "/a", Map.of())) {
      CatalogSession old = session(first.name());
      try (ExtRESTCatalog second = catalog(server, "session-test-d", "/b", Map.of())) {
        CatalogSession now = session(second.name());
        assertTrue(now != old, "a new session for the new catalog");
        assertTrue(old.guard.deduplicating() && !now.guard.idempotencyEnabled(), "nothing carried over");
      }
    } finally {
      server.stop(0);
    }
  }
}
