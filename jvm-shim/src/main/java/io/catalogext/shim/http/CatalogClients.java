package io.catalogext.shim.http;

import io.catalogext.shim.session.CatalogSession;

import java.util.List;
import java.util.Map;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;

/** The catalog's HTTP client: the transport with the shim's steps, in the one order they must run. */
public final class CatalogClients {
  private CatalogClients() {}

  /**
   * The client of catalog {@code session} for Iceberg's (merged) catalog properties {@code config},
   * reading answers with {@code mapper}: the {@link CatalogTransport} behind the funnel, with events
   * and request counts outermost (they see the outcome after the guard's retries), then hand-outs
   * (they see the answer the caller gets), then the mutation guard next to the wire (each attempt is
   * one send).
   */
  public static RESTClient funnel(Map<String, String> config, ObjectMapper mapper, CatalogSession session) {
    String uri = config.get(CatalogProperties.URI);
    CatalogTransport transport = CatalogTransport.build(config, uri, mapper, session.trust);
    return new CatalogHttpFunnel(transport, uri,
        List.of(new CommitEvents(session), new HandOuts(session), new MutationGuard(session)));
  }
}
