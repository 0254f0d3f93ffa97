package io.catalogext.shim.refresh;

import io.catalogext.shim.errors.UntrustedOriginException;
import io.catalogext.shim.session.CatalogSession;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.Test;

/**
 * A server-given refresh endpoint is requested through the catalog's own HTTP client, which adds
 * the catalog's auth and every {@code header.*} value: only the catalog's trusted origins may get
 * it (the transport refuses the others too; this is the refresh's own, earlier check).
 */
public class RefreshEndpointOriginTest {
  private final CatalogSession state =
      new CatalogSession("c", java.util.Map.of("uri", "https://catalog.example.com:8181/api/catalog"));

  public RefreshEndpointOriginTest() {
  }

  @Test
  void testPathsAndSameOriginUrlsAreUsed() {
    assertEquals("v1/wh/namespaces/db/tables/t/credentials",
        CatalogRefresher.endpointPath(state, "/v1/wh/namespaces/db/tables/t/credentials"), "relative path");
    assertEquals("evil.example.com/x", CatalogRefresher.endpointPath(state, "//evil.example.com/x"),
        "a scheme-relative URL stays a path under the catalog");
    String same = "https://catalog.example.com:8181/api/catalog/v1/wh/refresh";
    assertEquals(same, CatalogRefresher.endpointPath(state, same), "same origin");
  }

  @Test
  void testAnotherOriginIsRefused() {
    for (String foreign :
        new String[] {
          "https://evil.example.com/refresh",
          "http://catalog.example.com:8181/api/catalog/refresh", // another scheme
          "https://catalog.example.com:9999/refresh", // another port
          "https://catalog.example.com:8181@evil.example.com/refresh", // userinfo trick
        }) {
      UntrustedOriginException e =
          assertThrows(UntrustedOriginException.class, () -> CatalogRefresher.endpointPath(state, foreign));
      assertTrue(e.getMessage().startsWith("catalog-ext refused to send the refresh-endpoint request for catalog c to"),
          e.getMessage());
    }
  }
}
