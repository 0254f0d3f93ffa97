package io.catalogext.shim.session;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.PythonApi;
import io.catalogext.shim.commit.CommitGuard;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.Test;

import com.sun.net.httpserver.HttpServer;
import java.util.Map;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Each initialised {@link ExtRESTCatalog} gets its own {@link CatalogSession}: its own guard (fed by
 * its own {@code /v1/config}), its own refresh policy; and the static helpers Python and the Spark
 * tests call ({@link PythonApi#commitEvidence}, {@link PythonApi#resetCommitEvidence}) reach every session.
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
    return CredentialRegistry.get().catalogs().all().stream().filter(s -> s.name.equals(name)).findFirst()
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

      JsonNode described = Json.read(PythonApi.commitEvidence());
      assertEquals("PT30M", described.path("session-test-a").path("idempotency_key_lifetime").asText(), "describe a");
      assertTrue(described.path("session-test-a").path("idempotency").asBoolean(), "a sends keys");
      assertTrue(described.path("session-test-b").path("idempotency_key_lifetime").isNull(), "describe b");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testAPythonPolicyAppliesToTheCatalogItNamesOnly() throws Exception {
    HttpServer server = configServer();
    try (ExtRESTCatalog a = catalog(server, "session-test-pa", "/a", Map.of("catalog-ext.refresh.timeout-ms", "7000"));
        ExtRESTCatalog b = catalog(server, "session-test-pb", "/b", Map.of("catalog-ext.refresh.timeout-ms", "8000"))) {
      PythonApi.setRefreshPolicy(a.name(), "{\"catalog-ext.refresh.timeout-ms\": \"1234\", \"catalog-ext.refresh.lifetime-fraction\": \"0.5\"}");
      CredentialRegistry registry = CredentialRegistry.get();
      assertEquals(1234L, registry.sources().policyFor(session(a.name())).timeoutMs, "a: the policy Python set for it");
      assertEquals(0.5, registry.sources().policyFor(session(a.name())).fraction, "a: every knob of the map");
      assertEquals(8000L, registry.sources().policyFor(session(b.name())).timeoutMs, "b keeps its own properties");
      IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
          () -> PythonApi.setRefreshPolicy(b.name(), "{\"catalog-ext.refresh.timeout-ms\": \"soon\"}"));
      assertTrue(bad.getMessage().startsWith("Bad catalog property catalog-ext.refresh.timeout-ms='soon'"), bad.getMessage());
      assertEquals(8000L, registry.sources().policyFor(session(b.name())).timeoutMs, "a refused policy changes nothing");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testResetEvidenceReachesEverySession() throws Exception {
    HttpServer server = configServer();
    try (ExtRESTCatalog c = catalog(server, "session-test-c", "/c", Map.of())) {
      JsonNode before = Json.read(PythonApi.commitEvidence()).path(c.name()).path("events");
      assertTrue(before.toString().contains("unparseable idempotency-key-lifetime 'soon'"), "evidence: " + before);
      PythonApi.resetCommitEvidence();
      JsonNode after = Json.read(PythonApi.commitEvidence()).path("session-test-c").path("events");
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
