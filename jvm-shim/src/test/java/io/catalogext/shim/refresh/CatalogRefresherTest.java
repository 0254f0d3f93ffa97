package io.catalogext.shim.refresh;

import io.catalogext.shim.config.CatalogSession;
import io.catalogext.shim.config.ShimKeys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.credentials.ImmutableCredential;
import org.apache.iceberg.rest.responses.ImmutableLoadCredentialsResponse;
import org.apache.iceberg.rest.responses.LoadCredentialsResponse;
import org.junit.jupiter.api.Test;

/** The refresher's plan (which strategies, in which order) and its fetch loop over a scripted client. */
public class CatalogRefresherTest {
  private final FakeClock clock = new FakeClock();
  private final CatalogSession state = new CatalogSession("c", Map.of("uri", "http://catalog:8181"));
  /** Paths the scripted client was asked, in order. */
  private final List<String> asked = new ArrayList<>();

  private TableEntry entry(boolean staged, String stageRequest, String refreshEndpoint) {
    TableContext context = new TableContext("c", List.of("db"), "t", "s3://b/db/t", null, staged, stageRequest, refreshEndpoint);
    return new TableEntry("h", context, RefreshPolicy.defaults(), null, clock);
  }

  private static List<String> labels(List<CatalogRefresher.Strategy> plan) {
    List<String> out = new ArrayList<>();
    plan.forEach(s -> out.add(s.label));
    return out;
  }

  @Test
  void testACommittedTableAsksTheCredentialsEndpointThenReloads() {
    assertEquals(List.of("credentials-endpoint", "reload"), labels(CatalogRefresher.plan(state, entry(false, null, null))), "committed");
    assertEquals(List.of("refresh-endpoint", "credentials-endpoint", "reload"),
        labels(CatalogRefresher.plan(state, entry(false, null, "v1/refresh"))), "with a refresh endpoint");
  }

  @Test
  void testAStagedTableIsNeverReloadedOnlyReStaged() {
    assertEquals(List.of("re-stage"), labels(CatalogRefresher.plan(state, entry(true, "{}", null))), "staged");
    assertEquals(List.of("refresh-endpoint", "re-stage"), labels(CatalogRefresher.plan(state, entry(true, "{}", "v1/r"))), "staged + endpoint");
    assertEquals(List.of(), labels(CatalogRefresher.plan(state, entry(true, null, null))), "staged without its request: nothing applies");
  }

  @Test
  void testAStorageRefreshTokenComesFirst() {
    TableEntry e = entry(true, "{}", null);
    e.refreshTokens().put("s3://b/db/t", "tok");
    assertEquals(List.of("storage-refresh-token", "re-stage"), labels(CatalogRefresher.plan(state, e)), "token first");
  }

  @Test
  void testAMissingCredentialsEndpointIsRememberedAndTheReloadServes() {
    state.observedTableOperation(scripted(Map.of("v1/namespaces/db/tables/t/credentials", "404")), "v1/");
    TableEntry e = entry(false, null, null);
    RuntimeException e1 = assertThrows(RuntimeException.class, () -> CatalogRefresher.fetch(state, e));
    assertTrue(e1.getMessage().contains("credentials-endpoint failed") && e1.getMessage().contains("reload failed"), e1.getMessage());
    assertEquals(List.of("v1/namespaces/db/tables/t/credentials", "v1/namespaces/db/tables/t"), asked, "both tried, in order");
    assertEquals(List.of("reload"), labels(CatalogRefresher.plan(state, e)), "the 404 is remembered: not asked again");
  }

  @Test
  void testTheFirstStrategyThatAnswersWinsAndNamesItsPredecessors() {
    state.observedTableOperation(scripted(Map.of("v1/refresh/t", "keys")), "v1/");
    RefreshResult r = CatalogRefresher.fetch(state, entry(false, null, "v1/refresh/t"));
    assertEquals("refresh-endpoint", r.strategy, "strategy");
    assertEquals("AKIA-NEW", r.configByPrefix.get("s3://b/db/t").get(ShimKeys.ACCESS_KEY_ID), "keys by prefix");
    assertEquals(List.of("v1/refresh/t"), asked, "no other request");
  }

  @Test
  void testARefreshEndpointOnAnotherOriginIsRefused() {
    assertThrows(IllegalStateException.class, () -> CatalogRefresher.endpointPath(state, "http://evil:8181/v1/r"));
    assertEquals("http://catalog:8181/v1/r", CatalogRefresher.endpointPath(state, "http://catalog:8181/v1/r"), "same origin");
    assertEquals("v1/r", CatalogRefresher.endpointPath(state, "/v1/r"), "relative");
  }

  @Test
  void testTheLongestCoveringPrefixPicksTheToken() {
    Map<String, String> tokens = new java.util.LinkedHashMap<>();
    tokens.put("s3://b/", "short");
    tokens.put("s3://b/db/t", "long");
    assertEquals("long", CatalogRefresher.tokenFor(tokens, "s3://b/db/t/data"), "longest prefix");
  }

  /** A RESTClient answering GETs from a script: "404", or "keys" (a credentials answer); anything else fails. */
  private RESTClient scripted(Map<String, String> script) {
    return (RESTClient) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {RESTClient.class},
        (proxy, method, args) -> {
          if (method.getName().equals("close")) {
            return null;
          }
          String path = (String) args[0];
          asked.add(path);
          String answer = script.getOrDefault(path, "500");
          if (method.getName().equals("get") && answer.equals("keys")) {
            LoadCredentialsResponse r = ImmutableLoadCredentialsResponse.builder()
                .addCredentials(ImmutableCredential.builder().prefix("s3://b/db/t")
                    .config(Map.of(ShimKeys.ACCESS_KEY_ID, "AKIA-NEW", "s3.secret-access-key", "s")).build())
                .build();
            return r;
          }
          if (answer.equals("404")) {
            throw new NoSuchTableException("no such endpoint");
          }
          throw new IllegalStateException("HTTP 500 for " + path);
        });
  }
}
