package io.catalogext.shim;

import java.util.Map;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.catalog.SessionCatalog;
import org.apache.iceberg.rest.HTTPClient;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTUtil;

/**
 * Iceberg's REST catalog with an observing HTTP client (Spark: {@code catalog-impl}). It behaves
 * exactly like {@code type=rest}; it only learns which tables were handed out, with which
 * credentials, so they can be refreshed.
 */
public class ExtRESTCatalog extends RESTCatalog {
  private final ObservingRESTClient.CatalogState state;

  public ExtRESTCatalog() {
    this(new ObservingRESTClient.CatalogState());
  }

  private ExtRESTCatalog(ObservingRESTClient.CatalogState state) {
    super(SessionCatalog.SessionContext.createEmpty(), config -> newClient(config, state));
    this.state = state;
  }

  @Override
  public void initialize(String name, Map<String, String> props) {
    state.catalogName = name;
    state.uri = props.get(CatalogProperties.URI);
    state.policy = RefreshPolicy.fromProperties(props);
    CredentialRegistry.get().registerCatalog(state);
    super.initialize(name, props);
  }

  private static RESTClient newClient(Map<String, String> config, ObservingRESTClient.CatalogState state) {
    RESTClient http =
        HTTPClient.builder(config)
            .uri(config.get(CatalogProperties.URI))
            .withHeaders(RESTUtil.configHeaders(config))
            // catalog-ext (issue 4): capture idempotency-key-lifetime, configure commit retries.
            .withObjectMapper(ConfigCapture.register(Json.restMapper(), state))
            .build();
    CommitGuard.configure(state, config);
    EventLog.configure(config); // catalog-ext.events.jsonl-path: the JVM's own JSON-lines event file
    return new EventingRESTClient(new ObservingRESTClient(http, state), state); // events: outermost
  }
}
