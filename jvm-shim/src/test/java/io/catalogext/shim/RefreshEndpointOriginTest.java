package io.catalogext.shim;

/**
 * A server-given refresh endpoint is requested through the catalog's own HTTP client, which adds
 * the catalog's auth and every {@code header.*} value: only the catalog's own origin may get it.
 */
public class RefreshEndpointOriginTest {
  private final CatalogSession state =
      new CatalogSession("c", java.util.Map.of("uri", "https://catalog.example.com:8181/api/catalog"));

  public RefreshEndpointOriginTest() {
  }

  public void testPathsAndSameOriginUrlsAreUsed() {
    Check.equal("v1/wh/namespaces/db/tables/t/credentials",
        CatalogRefresher.endpointPath(state, "/v1/wh/namespaces/db/tables/t/credentials"), "relative path");
    Check.equal("evil.example.com/x", CatalogRefresher.endpointPath(state, "//evil.example.com/x"),
        "a scheme-relative URL stays a path under the catalog");
    String same = "https://catalog.example.com:8181/api/catalog/v1/wh/refresh";
    Check.equal(same, CatalogRefresher.endpointPath(state, same), "same origin");
  }

  public void testAnotherOriginIsRefused() {
    for (String foreign :
        new String[] {
          "https://evil.example.com/refresh",
          "http://catalog.example.com:8181/api/catalog/refresh", // another scheme
          "https://catalog.example.com:9999/refresh", // another port
          "https://catalog.example.com:8181@evil.example.com/refresh", // userinfo trick
        }) {
      IllegalStateException e =
          Check.raises(IllegalStateException.class, () -> CatalogRefresher.endpointPath(state, foreign));
      Check.isTrue(e.getMessage().contains("another origin"), e.getMessage());
    }
  }
}
