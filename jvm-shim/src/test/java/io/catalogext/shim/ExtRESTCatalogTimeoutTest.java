package io.catalogext.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.junit.jupiter.api.Test;

/**
 * The catalog's HTTP client has connect and read timeouts even when the user set none, so a
 * stalled catalog cannot hang a load, a commit or a refresh: against a real HTTP server on
 * loopback that answers {@code /v1/config} and then never answers.
 */
public class ExtRESTCatalogTimeoutTest {
  private final CountDownLatch release = new CountDownLatch(1);

  /**
   * Answers the config request and loads of table "loaded"; every other request stalls until the
   * test ends. The table's answer is built before the server starts: built on demand, under a loaded
   * machine it took longer than the tests' 500 ms read timeout and failed the load they start with.
   */
  private HttpServer stallingCatalog() throws Exception {
    String loaded = LoopbackCatalog.loadedTable("file:/tmp/catalog-ext-stalled", "{}"); // the commit test commits to it
    return LoopbackCatalog.start(
        "test-stalling-catalog",
        exchange -> {
          String path = exchange.getRequestURI().getPath();
          String answer =
              path.endsWith("/v1/config")
                  ? "{\"defaults\":{},\"overrides\":{}}"
                  : "GET".equals(exchange.getRequestMethod()) && path.endsWith("/tables/loaded") ? loaded : null;
          if (answer != null) {
            LoopbackCatalog.answer(exchange, 200, answer);
            return;
          }
          try {
            release.await(60, TimeUnit.SECONDS); // a catalog that took the request and went silent
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          exchange.close();
        });
  }

  /** Class and message of every cause, which is what a user sees in a stack trace. */
  private static String chain(Throwable e) {
    StringBuilder out = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      out.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append(" / ");
    }
    return out.toString();
  }

  private ExtRESTCatalog catalog(HttpServer server, Map<String, String> extra) {
    Map<String, String> props = new HashMap<>(extra);
    props.put("uri", LoopbackCatalog.uri(server, ""));
    ExtRESTCatalog catalog = new ExtRESTCatalog();
    catalog.initialize("timeouts", props);
    return catalog;
  }

  @Test
  void testTimeoutsDefaultWhenUnsetAndUserValuesWin() throws Exception {
    HttpServer server = stallingCatalog();
    try (ExtRESTCatalog plain = catalog(server, Map.of());
        ExtRESTCatalog tuned = catalog(server, Map.of(ExtRESTCatalog.SOCKET_TIMEOUT_MS, "120000"))) {
      assertEquals("10000", plain.properties().get("rest.client.connection-timeout-ms"), "default connect timeout");
      assertEquals("60000", plain.properties().get("rest.client.socket-timeout-ms"), "default read timeout");
      assertEquals("120000", tuned.properties().get("rest.client.socket-timeout-ms"), "the user's read timeout");
      assertEquals("10000", tuned.properties().get("rest.client.connection-timeout-ms"), "connect default beside it");
      IllegalArgumentException bad =
          assertThrows(
              IllegalArgumentException.class,
              () -> catalog(server, Map.of(ExtRESTCatalog.CONNECTION_TIMEOUT_MS, "10s")));
      assertEquals(
          "rest.client.connection-timeout-ms must be a whole number of milliseconds (0 = no limit), not '10s'",
          bad.getMessage(),
          "bad value");
    } finally {
      release.countDown();
      server.stop(0);
    }
  }

  @Test
  void testStalledCatalogFailsWithinTheReadTimeout() throws Exception {
    HttpServer server = stallingCatalog();
    // The same property the default fills, shortened so the test is quick.
    try (ExtRESTCatalog catalog = catalog(server, Map.of(ExtRESTCatalog.SOCKET_TIMEOUT_MS, "500"))) {
      long started = System.nanoTime();
      RuntimeException e =
          assertThrows(RuntimeException.class, () -> catalog.loadTable(TableIdentifier.of("db", "t")));
      long waitedMs = (System.nanoTime() - started) / 1_000_000;
      assertTrue(waitedMs < 3_000, "a stalled load took " + waitedMs + " ms");
      assertTrue(chain(e).contains("SocketTimeoutException: Read timed out"), chain(e));
    } finally {
      release.countDown();
      server.stop(0);
    }
  }

  @Test
  void testStalledCommitEndsAsUnknownWithinItsBound() throws Exception {
    HttpServer server = stallingCatalog();
    Map<String, String> props =
        Map.of(ExtRESTCatalog.SOCKET_TIMEOUT_MS, "500", "catalog-ext.commit.max-attempts", "2",
            "catalog-ext.commit.base-delay-ms", "50");
    try (ExtRESTCatalog catalog = catalog(server, props)) {
      Table table = catalog.loadTable(TableIdentifier.of("db", "loaded"));
      long started = System.nanoTime();
      RuntimeException e =
          assertThrows(RuntimeException.class, () -> table.updateProperties().set("k", "v").commit());
      long waitedMs = (System.nanoTime() - started) / 1_000_000;
      assertTrue(waitedMs < 10_000, "a stalled commit took " + waitedMs + " ms");
      // The read timeout is an answer that may have been applied: unknown, so Iceberg keeps files.
      assertTrue(e instanceof CommitStateUnknownException, e.toString());
      assertTrue(e.getMessage().contains("answer was lost (SocketTimeoutException"), e.getMessage());
    } finally {
      release.countDown();
      server.stop(0);
    }
  }

  @Test
  void testCatalogThatAcceptsNoConnectionFailsWithinTheDefaultConnectTimeout() throws Exception {
    // A listening socket whose accept queue is full: the kernel drops further SYNs, so a connect
    // hangs (as to a host behind a black-holing firewall). HttpClient alone would wait 3 min.
    java.util.List<java.net.Socket> fillers = new java.util.ArrayList<>();
    try (java.net.ServerSocket full = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      boolean hangs = false;
      for (int i = 0; i < 16 && !hangs; i++) {
        java.net.Socket s = new java.net.Socket();
        fillers.add(s);
        try {
          s.connect(full.getLocalSocketAddress(), 500);
        } catch (java.net.SocketTimeoutException e) {
          hangs = true;
        }
      }
      assertTrue(hangs, "could not fill the accept queue of a loopback socket");
      long started = System.nanoTime();
      ExtRESTCatalog catalog = new ExtRESTCatalog();
      RuntimeException e =
          assertThrows(
              RuntimeException.class,
              () -> catalog.initialize("unreachable", Map.of("uri", "http://127.0.0.1:" + full.getLocalPort())));
      long waitedMs = (System.nanoTime() - started) / 1_000_000;
      assertTrue(waitedMs < 20_000, "connecting took " + waitedMs + " ms");
      assertTrue(waitedMs >= 9_000, "failed before the connect timeout (" + waitedMs + " ms): " + chain(e));
      assertTrue(chain(e).contains("ConnectTimeoutException"), chain(e));
    } finally {
      for (java.net.Socket s : fillers) {
        s.close();
      }
    }
  }
}
