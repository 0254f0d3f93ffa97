package io.catalogext.shim.http;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.errors.CatalogRedirectException;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.util.Urls;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.Test;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;

/**
 * Nothing below the commit guard re-sends a POST or follows a redirect: against a real HTTP server
 * on loopback that scripts the answers a gateway gives (503/429 with Retry-After, then a refusal;
 * 301/302/303/307/308) and records every request it receives.
 */
public class HiddenResendTest {
  private static final String TABLE_PATH = "/v1/namespaces/db/tables/t";
  private static final String ELSEWHERE = "/elsewhere";

  /** One scripted answer. */
  private static final class Scripted {
    final int status;
    final String header;
    final String value;

    Scripted(int status, String header, String value) {
      this.status = status;
      this.header = header;
      this.value = value;
    }
  }

  private final List<String> received = Collections.synchronizedList(new ArrayList<>());
  private final Map<String, Deque<Scripted>> script = new HashMap<>();
  private HttpServer server;

  /** The next answers to {@code method path}, replacing any left from before. */
  private void script(String method, String path, Scripted... answers) {
    synchronized (script) {
      script.remove(method + " " + path);
      script.computeIfAbsent(method + " " + path, k -> new ArrayDeque<>()).addAll(List.of(answers));
    }
  }

  private static Scripted retryAfter(int status) {
    return new Scripted(status, "Retry-After", "1");
  }

  private static Scripted refusal(int status) {
    return new Scripted(status, null, null);
  }

  private Scripted redirect(int status, String suffix) {
    return new Scripted(status, "Location", LoopbackCatalog.uri(server, ELSEWHERE + TABLE_PATH) + suffix);
  }

  private void start() throws IOException {
    String table = LoopbackCatalog.loadedTable("file:/tmp/catalog-ext-hidden-resend", "{}");
    server = LoopbackCatalog.start("test-hidden-resend", exchange -> {
      String method = exchange.getRequestMethod();
      String path = exchange.getRequestURI().getPath();
      received.add(method + " " + path);
      Scripted next;
      synchronized (script) {
        Deque<Scripted> queue = script.get(method + " " + path);
        next = queue == null ? null : queue.poll();
      }
      if (next != null) {
        answer(exchange, next);
      } else if (path.endsWith("/v1/config")) {
        LoopbackCatalog.answer(exchange, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else {
        // The table, to a load and to a commit alike: what a followed redirect would be "answered".
        LoopbackCatalog.answer(exchange, 200, table);
      }
    });
  }

  private static void answer(HttpExchange exchange, Scripted s) throws IOException {
    if (s.header != null) {
      exchange.getResponseHeaders().add(s.header, s.value);
    }
    LoopbackCatalog.answer(exchange, s.status,
        "{\"error\":{\"message\":\"scripted\",\"type\":\"Scripted\",\"code\":" + s.status + "}}");
  }

  private ExtRESTCatalog catalog(String maxAttempts) {
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(server, ""));
    props.put("rest.client.max-retries", "1"); // Iceberg's hidden re-sends, if any, stay quick
    props.put("catalog-ext.commit.max-attempts", maxAttempts);
    props.put("catalog-ext.commit.base-delay-ms", "10");
    ExtRESTCatalog catalog = new ExtRESTCatalog();
    catalog.initialize("hidden-resends", props);
    return catalog;
  }

  private long count(String request) {
    synchronized (received) {
      return received.stream().filter(request::equals).count();
    }
  }

  private boolean anyElsewhere() {
    synchronized (received) {
      return received.stream().anyMatch(r -> r.contains(ELSEWHERE));
    }
  }

  @Test
  void testCommitAnswered503WithRetryAfterThenRefusedIsUnknownNotForbidden() throws Exception {
    start();
    try (ExtRESTCatalog catalog = catalog("2")) {
      Table table = catalog.loadTable(TableIdentifier.of("db", "t"));
      // A gateway forwarded the commit, answered 503 + Retry-After; the next copy is refused.
      script("POST", TABLE_PATH, retryAfter(503), refusal(403));
      RuntimeException e = assertThrows(RuntimeException.class, () -> table.updateProperties().set("k", "v").commit());
      // The guard saw the 503 (maybe applied), so the 403 after it proves nothing: unknown, files
      // kept. A hidden re-send would have shown the guard only the 403: a ForbiddenException.
      assertTrue(e instanceof CommitStateUnknownException, e.toString());
      assertEquals(2L, count("POST " + TABLE_PATH), "POSTs: one per guard attempt");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testPostIsNotResentOn503Or429WithRetryAfter() throws Exception {
    start();
    try (ExtRESTCatalog catalog = catalog("1")) {
      Table table = catalog.loadTable(TableIdentifier.of("db", "t"));
      script("POST", "/v1/namespaces", retryAfter(429), refusal(403));
      assertThrows(RuntimeException.class, () -> catalog.createNamespace(org.apache.iceberg.catalog.Namespace.of("n")));
      assertEquals(1L, count("POST /v1/namespaces"), "POSTs after a 429 with Retry-After");

      script("POST", TABLE_PATH, retryAfter(503), refusal(403));
      RuntimeException unavailable =
          assertThrows(RuntimeException.class, () -> table.updateProperties().set("k", "v").commit());
      assertTrue(unavailable instanceof CommitStateUnknownException, unavailable.toString());
      assertEquals(1L, count("POST " + TABLE_PATH), "POSTs after a 503 with Retry-After");

      script("DELETE", TABLE_PATH, retryAfter(503), refusal(404));
      assertThrows(RuntimeException.class, () -> catalog.dropTable(TableIdentifier.of("db", "t"), false));
      assertEquals(1L, count("DELETE " + TABLE_PATH), "DELETEs after a 503 with Retry-After");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testGetIsStillRetriedOn503WithRetryAfter() throws Exception {
    start();
    try (ExtRESTCatalog catalog = catalog("1")) {
      script("GET", TABLE_PATH, retryAfter(503));
      Table table = catalog.loadTable(TableIdentifier.of("db", "t")); // Iceberg's own retry, kept
      assertEquals("t", table.name().substring(table.name().length() - 1), "loaded");
      assertEquals(2L, count("GET " + TABLE_PATH), "GETs: Iceberg's retry of a safe method stays");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testNoRedirectIsFollowedAndTheErrorNamesTheTarget() throws Exception {
    start();
    try (ExtRESTCatalog catalog = catalog("3")) {
      Table table = catalog.loadTable(TableIdentifier.of("db", "t"));
      for (int status : new int[] {301, 302, 303, 307, 308}) {
        script("POST", TABLE_PATH, redirect(status, "?token=s3cr3t#frag"));
        RuntimeException e = assertThrows(RuntimeException.class, () -> table.updateProperties().set("k", "v").commit());
        assertTrue(e instanceof CatalogRedirectException, status + ": " + e);
        String expected = "the catalog answered POST " + TABLE_PATH + " with HTTP " + status + ", a redirect to "
            + LoopbackCatalog.uri(server, ELSEWHERE + TABLE_PATH) + ";";
        assertTrue(e.getMessage().startsWith(expected), status + ": " + e.getMessage());
        assertTrue(!e.getMessage().contains("\n") && !e.getMessage().contains("s3cr3t"), e.getMessage());
        assertTrue(!anyElsewhere(), status + " was followed: " + received);
      }
      assertEquals(5L, count("POST " + TABLE_PATH), "one POST per redirect, never repeated");

      script("GET", TABLE_PATH, redirect(302, ""));
      RuntimeException load = assertThrows(RuntimeException.class, () -> catalog.loadTable(TableIdentifier.of("db", "t")));
      assertTrue(load instanceof CatalogRedirectException, load.toString());
      assertTrue(load.getMessage().contains("GET " + TABLE_PATH + " with HTTP 302"), load.getMessage());
      assertTrue(!anyElsewhere(), "a GET redirect was followed: " + received);
    } finally {
      server.stop(0);
    }
  }

  @Test
  void testShownTargetDropsUserInfoQueryAndFragment() {
    assertEquals("https://cat.example:8443/v1/x", Urls.shown("https://user:pw@cat.example:8443/v1/x?sig=1#f"),
        "absolute");
    assertEquals("/v1/x", Urls.shown("/v1/x?sig=1"), "relative");
    assertEquals("(no URL)", Urls.shown(null), "missing");
    assertEquals("(an unparseable URL)", Urls.shown("http://a b/%zz"), "garbage");
  }
}
