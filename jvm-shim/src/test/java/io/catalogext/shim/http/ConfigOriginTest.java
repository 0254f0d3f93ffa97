package io.catalogext.shim.http;
import io.catalogext.shim.wire.Origins;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.commit.CommitGuard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.Test;

import com.sun.net.httpserver.HttpServer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Server-given URLs on another origin never get the catalog's credentials: a {@code /v1/config}
 * override of {@code uri} / {@code oauth2-server-uri} / {@code s3.signer.uri}, and a table answer
 * naming a remote signer elsewhere. Two real loopback servers: the catalog, and "elsewhere", which
 * records what reaches it.
 */
public class ConfigOriginTest {
  private final List<String> elsewhere = Collections.synchronizedList(new ArrayList<>());
  private HttpServer other;
  private HttpServer catalog;

  private void start(String configOverrides, String tableConfig) throws Exception {
    other = LoopbackCatalog.start("test-elsewhere", exchange -> {
      elsewhere.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath() + " auth="
          + exchange.getRequestHeaders().getFirst("Authorization") + " custom="
          + exchange.getRequestHeaders().getFirst("X-Custom"));
      LoopbackCatalog.answer(exchange, 200, LoopbackCatalog.loadedTable("file:/tmp/catalog-ext-origin", "{}"));
    });
    String otherUri = LoopbackCatalog.uri(other, "");
    catalog = LoopbackCatalog.start("test-origin-catalog", exchange -> {
      String path = exchange.getRequestURI().getPath();
      if (path.endsWith("/v1/config")) {
        LoopbackCatalog.answer(exchange, 200,
            "{\"defaults\":{},\"overrides\":" + configOverrides.replace("OTHER", otherUri) + "}");
      } else {
        LoopbackCatalog.answer(exchange, 200,
            LoopbackCatalog.loadedTable("file:/tmp/catalog-ext-origin", tableConfig.replace("OTHER", otherUri)));
      }
    });
  }

  private ExtRESTCatalog open(Map<String, String> extra) {
    Map<String, String> props = new HashMap<>(extra);
    props.put("uri", LoopbackCatalog.uri(catalog, ""));
    props.put("token", "tok-secret");
    props.put("header.X-Custom", "custom-secret");
    ExtRESTCatalog c = new ExtRESTCatalog();
    c.initialize("origins", props);
    return c;
  }

  private void stop() {
    catalog.stop(0);
    other.stop(0);
  }

  @Test
  void testConfigOverridesOnAnotherOriginAreNotFollowed() throws Exception {
    start("{\"uri\":\"OTHER\",\"oauth2-server-uri\":\"OTHER/v1/oauth/tokens\",\"s3.signer.uri\":\"OTHER\"}", "{}");
    try (ExtRESTCatalog c = open(Map.of())) {
      c.loadTable(TableIdentifier.of("db", "t"));
      assertEquals(List.of(), elsewhere, "requests sent to the overriding origin");
      assertEquals(LoopbackCatalog.uri(catalog, ""), c.properties().get("uri"), "the user's uri stays");
      assertTrue(!c.properties().containsKey("s3.signer.uri"), "no foreign signer in the catalog properties");
      String evidence = CommitGuard.describe();
      assertTrue(evidence.contains("overrides uri names another origin"), evidence);
    } finally {
      stop();
    }
  }

  @Test
  void testSameOriginOverridesStillApply() throws Exception {
    start("{\"oauth2-server-uri\":\"v1/oauth/tokens\",\"rest-page-size\":\"7\"}", "{}");
    try (ExtRESTCatalog c = open(Map.of())) {
      assertEquals("v1/oauth/tokens", c.properties().get("oauth2-server-uri"), "a path override applies");
      assertEquals("7", c.properties().get("rest-page-size"), "other overrides apply");
    } finally {
      stop();
    }
  }

  @Test
  void testTableAnswerNamingASignerElsewhereIsRefusedUnlessTheUserTrustsIt() throws Exception {
    start("{}", "{\"s3.remote-signing-enabled\":\"true\",\"s3.signer.uri\":\"OTHER\"}");
    try (ExtRESTCatalog c = open(Map.of())) {
      IllegalStateException e =
          assertThrows(IllegalStateException.class, () -> c.loadTable(TableIdentifier.of("db", "t")));
      assertTrue(e.getMessage().contains("names a remote signer on another origin ("
          + LoopbackCatalog.uri(other, "") + ")") && !e.getMessage().contains("\n"), e.getMessage());
      assertTrue(e.getMessage().contains("set s3.signer.uri to it in the catalog properties"), e.getMessage());
    }
    try (ExtRESTCatalog c = open(Map.of("s3.signer.uri", LoopbackCatalog.uri(other, "")))) {
      c.loadTable(TableIdentifier.of("db", "t")); // the user configured that signer: trusted
    } finally {
      stop();
    }
    assertEquals(List.of(), elsewhere, "nothing was sent to the signer by a load");
  }

  @Test
  void testOriginRules() {
    assertTrue(Origins.allowed("v1/aws/s3/sign", "http://c:8181"), "a path");
    assertTrue(Origins.allowed("https://c.example/a", "https://c.example:443/b"), "default port");
    assertTrue(!Origins.allowed("https://c.example:8443/a", "https://c.example/b"), "another port");
    assertTrue(!Origins.allowed("http://c.example/a", "https://c.example/b"), "another scheme");
    assertTrue(!Origins.allowed("https://x@c.example/a", "https://c.example/b"), "user info");
    assertTrue(!Origins.allowed("https://evil.example/a", "https://c.example/b", null), "another host");
    assertTrue(Origins.allowed("https://s.example/a", "https://c.example/b", "https://s.example"), "the user's signer");
  }
}
