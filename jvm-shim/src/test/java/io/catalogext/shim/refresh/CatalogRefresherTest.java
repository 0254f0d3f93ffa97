package io.catalogext.shim.refresh;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.session.MissingEndpoints;

import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.errors.UntrustedOriginException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.credentials.ImmutableCredential;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.ImmutableLoadCredentialsResponse;
import org.apache.iceberg.rest.responses.LoadCredentialsResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
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

  private static List<String> labels(List<RefreshStrategy> plan) {
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
  void testAMissingEndpointIsForgottenAfterAnHourLikeOnThePythonSide() {
    CatalogSession timed = new CatalogSession("c", Map.of("uri", "http://catalog:8181"), clock::nowMs);
    timed.observedTableOperation(scripted(Map.of("v1/namespaces/db/tables/t/credentials", "404")), "v1/");
    TableEntry e = entry(false, null, null);
    assertThrows(RuntimeException.class, () -> CatalogRefresher.fetch(timed, e));
    clock.advance(MissingEndpoints.FORGET_AFTER_MS - 1);
    assertEquals(List.of("reload"), labels(CatalogRefresher.plan(timed, e)), "still remembered just before the hour");
    clock.advance(1);
    assertEquals(List.of("credentials-endpoint", "reload"), labels(CatalogRefresher.plan(timed, e)),
        "asked again once the hour has passed (the catalog may have been upgraded)");

    // Upgraded meanwhile: the endpoint answers and serves the refresh.
    asked.clear();
    timed.observedTableOperation(scripted(Map.of("v1/namespaces/db/tables/t/credentials", "keys")), "v1/");
    assertEquals("credentials-endpoint", CatalogRefresher.fetch(timed, e).strategy, "the upgraded endpoint serves");
  }

  @Test
  void testAnEndpointListWithoutCredentialsIsForgottenAfterAnHourToo() throws Exception {
    CatalogSession listed = new CatalogSession("c", Map.of("uri", "http://catalog:8181"), clock::nowMs);
    io.catalogext.shim.http.ConfigCapture.register(new ObjectMapper(), listed).readValue(
        "{\"defaults\":{},\"overrides\":{},\"endpoints\":[\"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}\"]}",
        ConfigResponse.class);
    assertEquals(List.of("reload"), labels(CatalogRefresher.plan(listed, entry(false, null, null))), "not listed");
    clock.advance(MissingEndpoints.FORGET_AFTER_MS);
    assertEquals(List.of("credentials-endpoint", "reload"), labels(CatalogRefresher.plan(listed, entry(false, null, null))),
        "asked again after the hour");
  }

  @Test
  void test405And501AreMissingEndpointsToo() {
    for (String code : List.of("405", "501")) {
      CatalogSession s = new CatalogSession("c", Map.of("uri", "http://catalog:8181"), clock::nowMs);
      s.observedTableOperation(scripted(Map.of("v1/namespaces/db/tables/t/credentials", code + " Method Not Allowed")), "v1/");
      TableEntry e = entry(false, null, null);
      RuntimeException failure = assertThrows(RuntimeException.class, () -> CatalogRefresher.fetch(s, e));
      assertTrue(failure.getMessage().contains("credentials-endpoint failed: HTTP " + code), failure.getMessage());
      assertEquals(List.of("reload"), labels(CatalogRefresher.plan(s, e)), code + " is remembered as missing");
    }
  }

  @Test
  void testANoRoute400IsAMissingEndpointAnyOther400IsNot() {
    // What Iceberg's REST fixture answers for GET .../credentials, through Iceberg's own error handler.
    state.observedTableOperation(scripted(Map.of("v1/namespaces/db/tables/t/credentials", "400 No route for request")), "v1/");
    TableEntry e = entry(false, null, null);
    assertThrows(RuntimeException.class, () -> CatalogRefresher.fetch(state, e));
    assertEquals(List.of("reload"), labels(CatalogRefresher.plan(state, e)), "the no-route 400 is remembered");

    CatalogSession other = new CatalogSession("c", Map.of("uri", "http://catalog:8181"));
    other.observedTableOperation(scripted(Map.of("v1/namespaces/db/tables/t/credentials", "400 Malformed token")), "v1/");
    assertThrows(RuntimeException.class, () -> CatalogRefresher.fetch(other, e));
    assertEquals(List.of("credentials-endpoint", "reload"), labels(CatalogRefresher.plan(other, e)), "another 400: asked again");
  }

  @Test
  void testAdvertisedEndpointsWithoutCredentialsAreNotAsked() throws Exception {
    String base = "{\"defaults\":{},\"overrides\":{}";
    CatalogSession listed = new CatalogSession("c", Map.of("uri", "http://catalog:8181"));
    io.catalogext.shim.http.ConfigCapture.register(new ObjectMapper(), listed).readValue(
        base + ",\"endpoints\":[\"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}\"]}", ConfigResponse.class);
    assertEquals(List.of("reload"), labels(CatalogRefresher.plan(listed, entry(false, null, null))), "not listed");

    CatalogSession withIt = new CatalogSession("c", Map.of("uri", "http://catalog:8181"));
    io.catalogext.shim.http.ConfigCapture.register(new ObjectMapper(), withIt).readValue(
        base + ",\"endpoints\":[\"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials\"]}",
        ConfigResponse.class);
    CatalogSession unlisted = new CatalogSession("c", Map.of("uri", "http://catalog:8181"));
    io.catalogext.shim.http.ConfigCapture.register(new ObjectMapper(), unlisted).readValue(base + "}", ConfigResponse.class);
    for (CatalogSession s : List.of(withIt, unlisted)) {
      assertEquals(List.of("credentials-endpoint", "reload"), labels(CatalogRefresher.plan(s, entry(false, null, null))),
          "listed, or no list at all: asked");
    }
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
    assertThrows(UntrustedOriginException.class, () -> CatalogRefresher.endpointPath(state, "http://evil:8181/v1/r"));
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
          if (answer.matches("(400|405|501) .*")) {
            @SuppressWarnings("unchecked")
            Consumer<ErrorResponse> handler = (Consumer<ErrorResponse>) args[args.length - 1];
            handler.accept(ErrorResponse.builder().responseCode(Integer.parseInt(answer.substring(0, 3)))
                .withType("BadRequestException").withMessage(answer.substring(4) + ": GET " + path).build());
          }
          if (answer.equals("404")) {
            throw new NoSuchTableException("no such endpoint");
          }
          throw new IllegalStateException("HTTP 500 for " + path);
        });
  }
}
