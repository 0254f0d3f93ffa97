package io.catalogext.shim;

import io.catalogext.shim.errors.UntrustedOriginException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.StorageCredential;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The catalog's credentials never follow a GCS or ADLS refresh endpoint that a server named on
 * another origin: Iceberg's own GCSFileIO and ADLSFileIO, which the shim's FileIOs use for tables
 * the shim does not track (an answer without keys, a catalog that is not the shim's), ask that
 * endpoint with the catalog's token and {@code header.*} values; the shim's registry asks it for
 * tables it tracks.
 *
 * <p>Real loopback servers: the catalog, a store that answers 404 to everything, and an attacker
 * that records every request. Each channel runs twice: with the attacker's origin trusted by the
 * user (the control: the attacker then receives the token, so the channel is real) and as a server
 * would have it (refused in one line, the attacker receives nothing).
 */
public class StoreRefreshOriginsTest {
  private static final String TOKEN = "tok-secret";
  private static final String HEADER_SECRET = "header-secret";
  private static final String ADLS_HOST = "acct.dfs.core.windows.net";

  private final List<String> attacked = Collections.synchronizedList(new ArrayList<>());
  private HttpServer attacker;
  private HttpServer catalog;
  private HttpServer store;
  private volatile String tableAnswer = "";

  @BeforeEach
  void start() throws IOException {
    attacker = LoopbackCatalog.start("test-store-attacker", ex -> {
      attacked.add(ex.getRequestMethod() + " " + ex.getRequestURI().getPath() + " auth="
          + ex.getRequestHeaders().getFirst("Authorization") + " custom=" + ex.getRequestHeaders().getFirst("X-Custom"));
      LoopbackCatalog.answer(ex, 200, "{\"storage-credentials\":[]}");
    });
    store = LoopbackCatalog.start("test-store-404", ex -> LoopbackCatalog.answer(ex, 404, "{}"));
    catalog = LoopbackCatalog.start("test-store-catalog", ex -> {
      String path = ex.getRequestURI().getPath();
      if (path.endsWith("/v1/config")) {
        LoopbackCatalog.answer(ex, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else {
        LoopbackCatalog.answer(ex, 200, tableAnswer.replace("ATTACKER", attackerUri()).replace("STORE", storeUri()));
      }
    });
  }

  @AfterEach
  void stop() {
    for (HttpServer server : new HttpServer[] {attacker, catalog, store}) {
      if (server != null) {
        server.stop(0);
      }
    }
  }

  private String attackerUri() {
    return LoopbackCatalog.uri(attacker, "");
  }

  private String storeUri() {
    return LoopbackCatalog.uri(store, "");
  }

  private String attackerOrigin() {
    return "http://127.0.0.1:" + attacker.getAddress().getPort();
  }

  /** The catalog's properties as its user sets them: a token, a header.* value, the shim's FileIO for the store. */
  private Map<String, String> userProps(String ioImpl, boolean trustAttacker) {
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(catalog, ""));
    props.put("token", TOKEN);
    props.put("header.X-Custom", HEADER_SECRET);
    props.put("io-impl", ioImpl);
    if (trustAttacker) {
      props.put("catalog-ext.trusted-origins", attackerUri());
    }
    return props;
  }

  private ExtRESTCatalog open(String ioImpl, boolean trustAttacker) {
    ExtRESTCatalog c = new ExtRESTCatalog();
    c.initialize("store-origins", userProps(ioImpl, trustAttacker));
    return c;
  }

  /** Requests at the attacker that carry the catalog's token or header value. */
  private List<String> credentialed() {
    synchronized (attacked) {
      List<String> out = new ArrayList<>();
      for (String r : attacked) {
        if (r.contains(TOKEN) || r.contains(HEADER_SECRET)) {
          out.add(r);
        }
      }
      return out;
    }
  }

  private static RuntimeException readThrough(FileIO io, String path) {
    return assertThrows(RuntimeException.class, () -> io.newInputFile(path).getLength());
  }

  private void assertOneLineRefusal(Throwable e, String namedBy) {
    Throwable t = e;
    while (t != null && !(t instanceof UntrustedOriginException)) {
      t = t.getCause();
    }
    assertTrue(t != null, "not refused by origin: " + e);
    String message = t.getMessage();
    assertTrue(message.contains(" to " + attackerOrigin()) && !message.contains("\n"), message);
    assertTrue(message.contains("(named by ") && message.contains(namedBy + ")"), message);
    assertTrue(message.contains("catalog-ext.trusted-origins"), "says how to allow it: " + message);
    assertTrue(!message.contains(TOKEN) && !message.contains(HEADER_SECRET), message);
  }

  @Test
  void testAnAdlsRefreshEndpointOnAnotherOriginGetsNoTokenWhereIcebergsAdlsFileIoWouldFetch() throws Exception {
    // No SAS in the answer: the shim tracks no keys for the table, and Iceberg's ADLSFileIO would
    // fetch one from the endpoint (1.10: before anything else; 1.11: as the SAS is missing).
    String location = "abfs://c@" + ADLS_HOST + "/db/t";
    tableAnswer = LoopbackCatalog.loadedTable(location, "{\"adls.refresh-credentials-endpoint\":\"ATTACKER/v1/creds\","
        + "\"adls.connection-string." + ADLS_HOST + "\":\"STORE/acct\"}");
    String io = RefreshingADLSFileIO.class.getName();
    try (ExtRESTCatalog c = open(io, true)) {
      readThrough(c.loadTable(TableIdentifier.of("db", "t")).io(), location + "/data/f.parquet");
      assertTrue(credentialed().stream().anyMatch(r -> r.startsWith("GET /v1/creds auth=Bearer " + TOKEN)),
          "control: Iceberg's ADLS provider sent the token there: " + attacked);
    }
    attacked.clear();
    try (ExtRESTCatalog c = open(io, false)) {
      assertOneLineRefusal(readThrough(c.loadTable(TableIdentifier.of("db", "t")).io(), location + "/data/f.parquet"),
          "adls.refresh-credentials-endpoint");
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  /** GCSFileIO properties as Iceberg's own REST catalog hands them over (no shim catalog: nothing sealed). */
  private Map<String, String> gcsProps(boolean trustAttacker) {
    Map<String, String> props = userProps(RefreshingGCSFileIO.class.getName(), trustAttacker);
    props.put("gcs.service.host", storeUri());
    props.put("gcs.project-id", "p");
    return props;
  }

  /** A token google-auth refreshes before its first use (it has under 3 minutes 45 seconds left). */
  private static Map<String, String> expiringGcsToken() {
    return Map.of("gcs.oauth2.token", "vended", "gcs.oauth2.token-expires-at", String.valueOf(System.currentTimeMillis() + 60_000));
  }

  @Test
  void testAGcsRefreshEndpointOnAnotherOriginGetsNoTokenFromAFileIoOutsideTheShimsCatalog() throws Exception {
    assertAGcsEndpointGetsTheTokenOnlyWhenTrusted((io, trusted) -> {
      Map<String, String> props = gcsProps(trusted);
      props.putAll(expiringGcsToken());
      props.put("gcs.oauth2.refresh-credentials-endpoint", attackerUri() + "/v1/creds");
      io.initialize(props);
    });
  }

  @Test
  void testAGcsStorageCredentialsRefreshEndpointOnAnotherOriginGetsNoToken() throws Exception {
    // The endpoint in a storage credential's config: GCSFileIO merges it over its properties for
    // that prefix's client.
    assertAGcsEndpointGetsTheTokenOnlyWhenTrusted((io, trusted) -> {
      Map<String, String> config = new HashMap<>(expiringGcsToken());
      config.put("gcs.oauth2.refresh-credentials-endpoint", attackerUri() + "/v1/creds");
      io.initialize(gcsProps(trusted));
      io.setCredentials(List.of(StorageCredential.create("gs://bucket/db/t", config)));
    });
  }

  /**
   * With the attacker's origin trusted (the control), google-auth's refresh sends the token there;
   * otherwise the FileIO set up by {@code setUp} refuses in one line and the attacker gets nothing.
   */
  private void assertAGcsEndpointGetsTheTokenOnlyWhenTrusted(BiConsumer<RefreshingGCSFileIO, Boolean> setUp) throws Exception {
    for (boolean trusted : new boolean[] {true, false}) {
      attacked.clear();
      try (RefreshingGCSFileIO io = new RefreshingGCSFileIO()) {
        setUp.accept(io, trusted);
        RuntimeException e = readThrough(io, "gs://bucket/db/t/data/f.parquet");
        if (trusted) {
          assertTrue(credentialed().stream().anyMatch(r -> r.startsWith("GET /v1/creds auth=Bearer " + TOKEN)),
              "control: google-auth's refresh sent the token there: " + attacked);
        } else {
          assertOneLineRefusal(e, "gcs.oauth2.refresh-credentials-endpoint");
        }
      }
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testTheRegistryNeverAsksAStoreRefreshEndpointOnAnotherOrigin() throws Exception {
    // A table the shim tracks (its answer vends a token about to expire): Iceberg's GCSFileIO gets
    // no endpoint at all, and the registry's refresh asks the endpoint only on a trusted origin.
    String location = "gs://bucket/db/t";
    tableAnswer = LoopbackCatalog.loadedTable(location, "{\"gcs.oauth2.refresh-credentials-endpoint\":\"ATTACKER/v1/creds\","
        + "\"gcs.oauth2.token\":\"vended\",\"gcs.oauth2.token-expires-at\":\"" + (System.currentTimeMillis() + 2_000) + "\","
        + "\"gcs.service.host\":\"STORE\",\"gcs.project-id\":\"p\"}");
    String io = RefreshingGCSFileIO.class.getName();
    for (boolean trusted : new boolean[] {true, false}) {
      attacked.clear();
      try (ExtRESTCatalog c = open(io, trusted)) {
        FileIO tableIo = c.loadTable(TableIdentifier.of("db", "t")).io();
        Thread.sleep(2_500); // past the token's expiry: the next request renews first
        readThrough(tableIo, location + "/data/f.parquet");
        if (trusted) {
          assertTrue(credentialed().stream().anyMatch(r -> r.startsWith("GET /v1/creds auth=Bearer " + TOKEN)),
              "control: the registry asked the trusted endpoint: " + attacked);
        }
      }
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }
}
