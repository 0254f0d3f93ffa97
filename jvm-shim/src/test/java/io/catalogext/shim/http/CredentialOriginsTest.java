package io.catalogext.shim.http;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.RefreshingS3ClientFactory;
import io.catalogext.shim.errors.UntrustedOriginException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.iceberg.Table;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The catalog's credentials (its token, OAuth2 client secret, {@code header.*} values) go only to
 * origins the user configured, whatever names another one: a {@code /v1/config} default or
 * override, a table answer's config (a signer endpoint as an absolute URL, an OAuth2 token URL the
 * signer uses, {@code remote-signing-config}, a trusted-origins key of its own), a redirect.
 *
 * <p>Real loopback servers: the catalog, and an attacker that records every request it receives.
 * Each channel is run twice: with the attacker's origin trusted by the user (the control: the
 * attacker then does receive the credential, so the channel is real) and as a server would have
 * it (the attacker receives nothing).
 */
public class CredentialOriginsTest {
  private static final String TOKEN = "tok-secret";
  private static final String CLIENT_SECRET = "client-secret";
  private static final String HEADER_SECRET = "header-secret";

  private final List<String> attacked = Collections.synchronizedList(new ArrayList<>());
  private HttpServer attacker;
  private HttpServer catalog;
  private HttpServer s3;
  private volatile String config = "{\"defaults\":{},\"overrides\":{}}";
  private volatile String tableConfig = "{}";
  private volatile Function<HttpExchange, Boolean> catalogScript = ex -> false;

  private String attackerUri() {
    return LoopbackCatalog.uri(attacker, "");
  }

  /** Starts the attacker (recording every request: method, path, credential headers and body), the catalog and an S3 stand-in. */
  private void start() throws IOException {
    attacker = LoopbackCatalog.start("test-attacker", ex -> {
      String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      attacked.add(ex.getRequestMethod() + " " + ex.getRequestURI().getPath() + " auth="
          + ex.getRequestHeaders().getFirst("Authorization") + " custom=" + ex.getRequestHeaders().getFirst("X-Custom")
          + " body=" + body);
      LoopbackCatalog.answer(ex, 200, LoopbackCatalog.loadedTable("file:/tmp/catalog-ext-origins", "{}"));
    });
    s3 = LoopbackCatalog.start("test-origins-s3", ex -> {
      ex.sendResponseHeaders(404, -1);
      ex.close();
    });
    catalog = LoopbackCatalog.start("test-origins-catalog", ex -> {
      if (catalogScript.apply(ex)) {
        return;
      }
      String path = ex.getRequestURI().getPath();
      if (path.endsWith("/v1/config")) {
        LoopbackCatalog.answer(ex, 200, config.replace("ATTACKER", attackerUri()));
      } else if (path.endsWith("/v1/oauth/tokens")) {
        LoopbackCatalog.answer(ex, 200, token(1));
      } else {
        LoopbackCatalog.answer(ex, 200,
            LoopbackCatalog.loadedTable("s3://bucket/db/t", tableConfig.replace("ATTACKER", attackerUri())));
      }
    });
  }

  private static String token(int expiresInSeconds) {
    return "{\"access_token\":\"" + TOKEN + "\",\"token_type\":\"bearer\",\"issued_token_type\":"
        + "\"urn:ietf:params:oauth:token-type:access_token\",\"expires_in\":" + expiresInSeconds + "}";
  }

  @AfterEach
  void stop() {
    for (HttpServer server : new HttpServer[] {attacker, catalog, s3}) {
      if (server != null) {
        server.stop(0);
      }
    }
  }

  /** The catalog as a user configures it (a token, a header.* value, the shim's S3 clients), plus {@code extra}. */
  private ExtRESTCatalog open(boolean trustAttacker, Map<String, String> extra) {
    return open(trustAttacker, extra, true);
  }

  /** The same, with the shim's S3 client factory in the user's properties or (as remote-signing users have it) without. */
  private ExtRESTCatalog open(boolean trustAttacker, Map<String, String> extra, boolean shimFactory) {
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(catalog, ""));
    props.put("header.X-Custom", HEADER_SECRET);
    props.put("io-impl", S3FileIO.class.getName());
    props.put("s3.client-factory-impl", RefreshingS3ClientFactory.class.getName());
    props.put("s3.endpoint", LoopbackCatalog.uri(s3, ""));
    props.put("s3.path-style-access", "true");
    props.put("client.region", "us-east-1");
    props.putAll(extra);
    if (!shimFactory) {
      props.remove("s3.client-factory-impl");
    }
    if (!props.containsKey("credential")) {
      props.put("token", TOKEN);
    }
    if (trustAttacker) {
      props.put("catalog-ext.trusted-origins", attackerUri());
    }
    ExtRESTCatalog c = new ExtRESTCatalog();
    c.initialize("origins", props);
    return c;
  }

  /** Requests at the attacker that carry one of the catalog's credentials. */
  private List<String> credentialed() {
    synchronized (attacked) {
      List<String> out = new ArrayList<>();
      for (String r : attacked) {
        if (r.contains(TOKEN) || r.contains(CLIENT_SECRET) || r.contains(HEADER_SECRET)) {
          out.add(r);
        }
      }
      return out;
    }
  }

  private static void assertOneLineRefusal(Throwable e, String origin, String namedBy) {
    Throwable t = e;
    while (t != null && !(t instanceof UntrustedOriginException)) {
      t = t.getCause();
    }
    assertTrue(t != null, "not refused by origin: " + e);
    String message = t.getMessage();
    assertTrue(message.contains(" to " + origin) && !message.contains("\n"), message);
    assertTrue(namedBy == null || (message.contains("(named by ") && message.contains(namedBy + ")")), message);
    assertTrue(message.contains("catalog-ext.trusted-origins"), "says how to allow it: " + message);
    assertTrue(!message.contains(TOKEN) && !message.contains(CLIENT_SECRET) && !message.contains(HEADER_SECRET), message);
  }

  private String attackerOrigin() {
    return "http://127.0.0.1:" + attacker.getAddress().getPort();
  }

  /** Reads a data file of the table: builds its S3 client (and signs, when it signs remotely). */
  private static RuntimeException readThrough(Table table) {
    return assertThrows(RuntimeException.class,
        () -> table.io().newInputFile(table.location() + "/data/f.parquet").getLength());
  }

  // ---------------------------------------------------------------- /v1/config

  @Test
  void testAConfigOverrideOfTheUriIsRefusedAndNamed() throws Exception {
    start();
    config = "{\"defaults\":{},\"overrides\":{\"uri\":\"ATTACKER\"}}";
    try (ExtRESTCatalog c = open(true, Map.of())) {
      c.loadTable(TableIdentifier.of("db", "t"));
      assertTrue(!credentialed().isEmpty(), "control: trusted, the load went to the override");
    }
    attacked.clear();
    try (ExtRESTCatalog c = open(false, Map.of())) {
      RuntimeException e = assertThrows(RuntimeException.class, () -> c.loadTable(TableIdentifier.of("db", "t")));
      assertOneLineRefusal(e, attackerOrigin(), "/v1/config overrides uri");
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testAConfigDefaultOAuth2ServerUriGetsNoClientSecret() throws Exception {
    start();
    // The token lives 1 s, so Iceberg refreshes it at once: with the client credentials, at the
    // catalog's merged oauth2-server-uri.
    config = "{\"defaults\":{\"oauth2-server-uri\":\"ATTACKER/v1/oauth/tokens\"},\"overrides\":{}}";
    Map<String, String> oauth = Map.of("credential", "client:" + CLIENT_SECRET);
    try (ExtRESTCatalog c = open(true, oauth)) {
      waitFor(() -> !credentialed().isEmpty(), 10_000);
      c.listNamespaces();
      assertTrue(credentialed().get(0).startsWith("POST /v1/oauth/tokens"), "control: the refresh went there: " + attacked);
    }
    attacked.clear();
    try (ExtRESTCatalog c = open(false, oauth)) {
      Thread.sleep(3_000); // the refreshes the control saw within this time
      c.listNamespaces(); // still works with the token it has
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testAConfigProxyCarriesNoCatalogTraffic() throws Exception {
    start();
    String proxy = "\"rest.client.proxy.hostname\":\"127.0.0.1\",\"rest.client.proxy.port\":\""
        + attacker.getAddress().getPort() + "\"";
    Map<String, String> userProxy = Map.of("rest.client.proxy.hostname", "127.0.0.1",
        "rest.client.proxy.port", String.valueOf(attacker.getAddress().getPort()));
    try (ExtRESTCatalog c = open(false, userProxy)) {
      c.loadTable(TableIdentifier.of("db", "t"));
      assertTrue(credentialed().stream().anyMatch(r -> r.contains("auth=Bearer " + TOKEN)),
          "control: the user's own proxy carries the catalog's requests: " + attacked);
    }
    for (String section : new String[] {"overrides", "defaults"}) {
      attacked.clear();
      config = "{\"defaults\":{},\"overrides\":{}}".replace("\"" + section + "\":{}", "\"" + section + "\":{" + proxy + "}");
      Map<String, String> io;
      try (ExtRESTCatalog c = open(false, Map.of())) {
        io = c.loadTable(TableIdentifier.of("db", "t")).io().properties();
        c.listNamespaces();
      }
      assertEquals(List.of(), attacked, "requests at the attacker through a " + section + " proxy");
      assertTrue(!io.containsKey("rest.client.proxy.hostname"),
          "the server's proxy reached the table's FileIO (the remote signer's HTTP client reads it)");
    }
  }

  // ---------------------------------------------------------------- a table's config

  @Test
  void testATableConfigProxyOrClientFactoryNeverReachesTheFileIo() throws Exception {
    start();
    tableConfig = "{\"rest.client.proxy.hostname\":\"127.0.0.1\",\"rest.client.proxy.port\":\"9\","
        + "\"s3.client-factory-impl\":\"org.apache.iceberg.aws.s3.DefaultS3FileIOAwsClientFactory\"}";
    for (boolean shimFactory : new boolean[] {true, false}) {
      try (ExtRESTCatalog c = open(false, Map.of(), shimFactory)) {
        Map<String, String> io = c.loadTable(TableIdentifier.of("db", "t")).io().properties();
        assertTrue(!io.containsKey("rest.client.proxy.hostname") && !io.containsKey("rest.client.proxy.port"), io.toString());
        assertEquals(RefreshingS3ClientFactory.class.getName(), io.get("s3.client-factory-impl"),
            "the shim's factory builds the table's S3 clients (it checks the remote signer)");
      }
    }
    tableConfig = "{\"s3.client-factory-impl\":\"" + RefreshingS3ClientFactory.class.getName() + "\"}";
    String iceberg = "org.apache.iceberg.aws.s3.DefaultS3FileIOAwsClientFactory";
    try (ExtRESTCatalog c = open(false, Map.of("s3.client-factory-impl", iceberg))) {
      Map<String, String> io = c.loadTable(TableIdentifier.of("db", "t")).io().properties();
      assertEquals(iceberg, io.get("s3.client-factory-impl"), "the user's own choice stays");
    }
  }

  @Test
  void testARefreshEndpointOnAnotherOriginGetsNoTokenWhereIcebergsProviderWouldFetch() throws Exception {
    start();
    // No keys in the answer: the shim tracks no keys for the table, so Iceberg's own credential
    // chain would fetch them from the refresh endpoint, with the catalog's auth session.
    tableConfig = "{\"client.refresh-credentials-endpoint\":\"ATTACKER/v1/creds\"}";
    try (ExtRESTCatalog c = open(true, Map.of())) {
      readThrough(c.loadTable(TableIdentifier.of("db", "t")));
      assertTrue(credentialed().stream().anyMatch(r -> r.startsWith("GET /v1/creds auth=Bearer " + TOKEN)),
          "control: Iceberg's provider sent the token there: " + attacked);
    }
    attacked.clear();
    try (ExtRESTCatalog c = open(false, Map.of())) {
      assertOneLineRefusal(readThrough(c.loadTable(TableIdentifier.of("db", "t"))), attackerOrigin(),
          "client.refresh-credentials-endpoint");
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testASignerEndpointOnAnotherOriginGetsNoTokenWithoutTheShimFactoryConfigured() throws Exception {
    start();
    tableConfig = "{\"s3.remote-signing-enabled\":\"true\",\"s3.signer.endpoint\":\"ATTACKER/v1/sign\","
        + "\"signer.endpoint\":\"ATTACKER/v1/sign\"}";
    try (ExtRESTCatalog c = open(false, Map.of(), false)) {
      assertOneLineRefusal(readThrough(c.loadTable(TableIdentifier.of("db", "t"))), attackerOrigin(), "signer.endpoint");
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testASignerOAuth2ServerUriGetsNoClientSecretWithoutTheShimFactoryConfigured() throws Exception {
    start();
    tableConfig = "{\"s3.remote-signing-enabled\":\"true\",\"oauth2-server-uri\":\"ATTACKER/v1/oauth/tokens\"}";
    try (ExtRESTCatalog c = open(false, Map.of("credential", "client:" + CLIENT_SECRET), false)) {
      readThrough(c.loadTable(TableIdentifier.of("db", "t")));
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testASignerEndpointOnAnotherOriginGetsNoToken() throws Exception {
    start();
    tableConfig = "{\"s3.remote-signing-enabled\":\"true\",\"s3.signer.endpoint\":\"ATTACKER/v1/sign\"}";
    try (ExtRESTCatalog c = open(true, Map.of())) {
      readThrough(c.loadTable(TableIdentifier.of("db", "t")));
      assertTrue(credentialed().stream().anyMatch(r -> r.startsWith("POST /v1/sign auth=Bearer " + TOKEN)),
          "control: the signer posted the token there: " + attacked);
    }
    attacked.clear();
    try (ExtRESTCatalog c = open(false, Map.of())) {
      assertOneLineRefusal(readThrough(c.loadTable(TableIdentifier.of("db", "t"))), attackerOrigin(),
          "signer.endpoint");
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testASignerOAuth2ServerUriInTheTableConfigGetsNoClientSecret() throws Exception {
    start();
    // Not a key a table answer may set (trust-rules.json): not followed even to an origin the user
    // trusts; before the allow-list, the trusted case posted the client secret there.
    tableConfig = "{\"s3.remote-signing-enabled\":\"true\",\"oauth2-server-uri\":\"ATTACKER/v1/oauth/tokens\"}";
    Map<String, String> oauth = Map.of("credential", "client:" + CLIENT_SECRET);
    for (boolean trusted : new boolean[] {true, false}) {
      try (ExtRESTCatalog c = open(trusted, oauth)) {
        readThrough(c.loadTable(TableIdentifier.of("db", "t")));
      }
      assertEquals(List.of(), attacked, "requests at the attacker, trusted=" + trusted);
    }
  }

  @Test
  void testARemoteSigningConfigBaseUriOnAnotherOriginGetsNoToken() throws Exception {
    start();
    catalogScript = ex -> {
      if (!ex.getRequestURI().getPath().endsWith("/tables/t")) {
        return false;
      }
      String loaded = LoopbackCatalog.loadedTable("s3://bucket/db/t", "{\"s3.remote-signing-enabled\":\"true\"}");
      String withSigning = loaded.substring(0, loaded.length() - 1)
          + ",\"remote-signing-config\":{\"base-uri\":\"" + attackerUri() + "\",\"endpoint-path\":\"v1/sign\"}}";
      try {
        LoopbackCatalog.answer(ex, 200, withSigning);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      return true;
    };
    try (ExtRESTCatalog c = open(false, Map.of())) {
      assertOneLineRefusal(readThrough(c.loadTable(TableIdentifier.of("db", "t"))), attackerOrigin(), null);
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testATableAnswerCannotTrustAnOriginForTheUser() throws Exception {
    start();
    tableConfig = "{\"s3.remote-signing-enabled\":\"true\",\"s3.signer.uri\":\"ATTACKER\","
        + "\"catalog-ext.trusted-origins\":\"ATTACKER\",\"catalog-ext.sealed-trusted-origins\":\"ATTACKER\"}";
    try (ExtRESTCatalog c = open(false, Map.of())) {
      assertOneLineRefusal(readThrough(c.loadTable(TableIdentifier.of("db", "t"))), attackerOrigin(), null);
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testTheUsersOwnSignerIsTrusted() throws Exception {
    start();
    tableConfig = "{\"s3.remote-signing-enabled\":\"true\"}";
    // s3.signer.uri up to Iceberg 1.11, signer.uri from 1.12: a user sets the one their Iceberg reads.
    try (ExtRESTCatalog c = open(false, Map.of("s3.signer.uri", attackerUri(), "signer.uri", attackerUri()))) {
      readThrough(c.loadTable(TableIdentifier.of("db", "t"))); // the stand-in signer's answer is no signature
      assertTrue(credentialed().stream().anyMatch(r -> r.startsWith("POST ") && r.contains(" auth=Bearer " + TOKEN + " ")),
          "the user's signer got the sign request: " + attacked);
    }
  }

  // ---------------------------------------------------------------- the user's own storage keys

  private static final String USER_KEY = "AKIDUSEROWNKEY";
  private static final Map<String, String> USER_KEYS =
      Map.of("s3.access-key-id", USER_KEY, "s3.secret-access-key", "user-own-secret-key");

  /** Requests at the attacker signed with the user's own S3 key. */
  private List<String> signedWithUsersKey() {
    synchronized (attacked) {
      return attacked.stream().filter(r -> r.contains("Credential=" + USER_KEY + "/")).collect(java.util.stream.Collectors.toList());
    }
  }

  /** Tries to read a data file of the table (the answer of the stand-in is no S3 answer: any outcome). */
  private static void tryRead(Table table) {
    try {
      table.io().newInputFile(table.location() + "/data/f.parquet").getLength();
    } catch (RuntimeException expected) {
      // the attacker answers as a catalog; only where the request went matters
    }
  }

  @Test
  void testAServerNamedEndpointGetsNoneOfTheUsersOwnKeys() throws Exception {
    start();
    for (String channel : new String[] {"table", "config"}) {
      tableConfig = channel.equals("table") ? "{\"s3.endpoint\":\"ATTACKER\"}" : "{}";
      config = channel.equals("config")
          ? "{\"defaults\":{},\"overrides\":{\"s3.endpoint\":\"ATTACKER\"}}" : "{\"defaults\":{},\"overrides\":{}}";
      attacked.clear();
      try (ExtRESTCatalog c = open(true, USER_KEYS)) {
        tryRead(c.loadTable(TableIdentifier.of("db", "t")));
        assertTrue(!signedWithUsersKey().isEmpty(), "control (" + channel + "): trusted, the read went there: " + attacked);
      }
      attacked.clear();
      try (ExtRESTCatalog c = open(false, USER_KEYS)) {
        RuntimeException e = assertThrows(RuntimeException.class, () -> c.loadTable(TableIdentifier.of("db", "t")));
        Throwable t = e;
        while (t != null && !(t instanceof UntrustedOriginException)) {
          t = t.getCause();
        }
        assertTrue(t != null, channel + ": not refused by origin: " + e);
        String message = t.getMessage();
        assertTrue(message.contains("s3.endpoint = " + attackerOrigin()) && message.contains("catalog-ext.trusted-origins")
            && !message.contains("\n") && !message.contains("user-own-secret-key"), message);
      }
      assertEquals(List.of(), attacked, channel + ": requests at the attacker");
    }
  }

  @Test
  void testAServerNamedEndpointOfAnotherStoreIsDroppedNotRefused() throws Exception {
    start();
    // The table is on S3; a GCS endpoint the answer names would get the machine's Google identity.
    tableConfig = "{\"gcs.service.host\":\"ATTACKER\"}";
    try (ExtRESTCatalog c = open(false, USER_KEYS)) {
      Map<String, String> io = c.loadTable(TableIdentifier.of("db", "t")).io().properties();
      assertTrue(!io.containsKey("gcs.service.host"), io.keySet().toString());
    }
    tableConfig = "{\"gcs.service.host\":\"ATTACKER\",\"gcs.oauth2.token\":\"vended-gcs-token\"}";
    try (ExtRESTCatalog c = open(false, USER_KEYS)) {
      Map<String, String> io = c.loadTable(TableIdentifier.of("db", "t")).io().properties();
      assertEquals(attackerUri(), io.get("gcs.service.host"), "a catalog that vends a store's token may say where it goes");
    }
  }

  @Test
  void testAnEndpointWithTheCatalogsOwnKeysStays() throws Exception {
    start();
    tableConfig = "{\"s3.endpoint\":\"ATTACKER\",\"s3.access-key-id\":\"AKIDVENDED\",\"s3.secret-access-key\":\"vended\"}";
    try (ExtRESTCatalog c = open(false, USER_KEYS)) {
      tryRead(c.loadTable(TableIdentifier.of("db", "t")));
    }
    assertEquals(List.of(), signedWithUsersKey(), "the user's own key went to the server-named endpoint");
    assertTrue(attacked.stream().anyMatch(r -> r.contains("Credential=AKIDVENDED/")), "the vended keys went there: " + attacked);
  }

  @Test
  void testAStorageCredentialOfOnlyForbiddenKeysIsNoCredential() throws Exception {
    start();
    // The config JSON is followed by the answer's storage-credentials (see start()).
    tableConfig = "{},\"storage-credentials\":[{\"prefix\":\"s3://bucket/db/t\","
        + "\"config\":{\"client.factory\":\"org.example.Nothing\"}}]";
    try (ExtRESTCatalog c = open(false, Map.of())) {
      Table table = c.loadTable(TableIdentifier.of("db", "t")); // before: Iceberg's "Invalid config: must be non-empty"
      assertTrue(!table.io().properties().containsKey("client.factory"), table.io().properties().toString());
    }
  }

  // ---------------------------------------------------------------- redirects

  @Test
  void testARedirectToAnotherOriginIsNotFollowed() throws Exception {
    start();
    catalogScript = ex -> {
      String path = ex.getRequestURI().getPath();
      if (!path.contains("/namespaces")) {
        return false;
      }
      int status = "POST".equals(ex.getRequestMethod()) ? 307 : 302;
      ex.getResponseHeaders().add("Location", attackerUri() + path);
      try {
        ex.sendResponseHeaders(status, -1);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      ex.close();
      return true;
    };
    try (ExtRESTCatalog c = open(true, Map.of())) { // even to a trusted origin: redirects are never followed
      assertThrows(RuntimeException.class, () -> c.loadTable(TableIdentifier.of("db", "t")));
      assertThrows(RuntimeException.class, () -> c.createNamespace(org.apache.iceberg.catalog.Namespace.of("n")));
    }
    assertEquals(List.of(), attacked, "requests at the attacker");
  }

  @Test
  void testASignerRedirectToAnotherOriginCarriesNoCredential() throws Exception {
    start();
    List<String> signed = Collections.synchronizedList(new ArrayList<>());
    HttpServer signer = LoopbackCatalog.start("test-redirecting-signer", ex -> {
      signed.add(ex.getRequestMethod() + " " + ex.getRequestURI().getPath());
      ex.getResponseHeaders().add("Location", attackerUri() + "/v1/sign");
      ex.sendResponseHeaders(signed.size() % 2 == 1 ? 307 : 302, -1);
      ex.close();
    });
    try {
      tableConfig = "{\"s3.remote-signing-enabled\":\"true\"}";
      String signerUri = LoopbackCatalog.uri(signer, "");
      try (ExtRESTCatalog c = open(false, Map.of("s3.signer.uri", signerUri, "signer.uri", signerUri))) {
        Table table = c.loadTable(TableIdentifier.of("db", "t"));
        readThrough(table);
        readThrough(table);
      }
      assertTrue(!signed.isEmpty(), "the signer was asked");
      assertEquals(List.of(), credentialed(), "credential-bearing requests at the attacker");
    } finally {
      signer.stop(0);
    }
  }

  private static void waitFor(java.util.function.BooleanSupplier condition, long timeoutMs) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (!condition.getAsBoolean() && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
    }
  }
}
