package io.catalogext.shim.http;

import java.util.Map;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.HTTPRequest;
import org.apache.iceberg.rest.ImmutableHTTPRequest;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.auth.AuthManager;
import org.apache.iceberg.rest.auth.AuthSession;

/**
 * An Iceberg AuthManager (the user's {@code rest.auth.type}) of a catalog that issues a login per
 * table: the catalog's requests carry {@code Bearer token-of-the-catalog}, each table's table
 * operations {@code Bearer token-of-<table>}, as Iceberg's OAuth2 manager does for a table whose
 * load answer carries its own {@code token}.
 */
public final class PerTableLogins implements AuthManager {
  public PerTableLogins(String name) {}

  @Override
  public AuthSession catalogSession(RESTClient sharedClient, Map<String, String> properties) {
    return bearer("token-of-the-catalog");
  }

  @Override
  public AuthSession tableSession(TableIdentifier table, Map<String, String> properties, AuthSession parent) {
    return bearer("token-of-" + table.name());
  }

  @Override
  public void close() {}

  private static AuthSession bearer(String token) {
    return new AuthSession() {
      @Override
      public HTTPRequest authenticate(HTTPRequest request) {
        Map<String, String> headers = new java.util.HashMap<>();
        request.headers().entries().forEach(h -> headers.put(h.name(), h.value()));
        headers.put("Authorization", "Bearer " + token);
        return ImmutableHTTPRequest.copyOf(request).withHeaders(org.apache.iceberg.rest.HTTPHeaders.of(headers));
      }

      @Override
      public void close() {}
    };
  }
}
