package io.catalogext.shim.http;

import io.catalogext.shim.session.CatalogSession;

import java.util.List;
import org.apache.iceberg.rest.RESTClient;

/** The catalog's HTTP client with the shim's steps, in the one order they must run. */
public final class CatalogClients {
  private CatalogClients() {}

  /**
   * Iceberg's {@code http} behind the funnel: events and request counts outermost (they see the
   * outcome after the guard's retries), then hand-outs (they see the answer the caller gets), then
   * the mutation guard next to the wire (each attempt is one send).
   */
  public static RESTClient funnel(RESTClient http, String uri, CatalogSession session) {
    return new CatalogHttpFunnel(http, uri, List.of(new CommitEvents(session), new HandOuts(session), new MutationGuard(session)));
  }
}
