package io.catalogext.shim.refresh;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A shared driver (Spark Connect: many Spark sessions, one JVM): a table's keys go only to the
 * catalog session that loaded it. Its handle is bound to that session and that table; another
 * session's handle, a forged one, or the table's identity alone (FileIO properties anyone can set,
 * say through a catalog defined at run time with SET) gets nothing, on the driver's own S3 clients
 * and through the executors' asks.
 */
public class SessionBoundHandlesTest {
  private static final long MINUTE = 60_000L;

  private final FakeClock clock = new FakeClock();
  private final CredentialRegistry registry = new CredentialRegistry(clock);
  private final CatalogSession alice = new CatalogSession("lake", Map.of());
  /** Another Spark session's catalog of the same name (a Connect user's SET spark.sql.catalog.lake). */
  private final CatalogSession mallory = new CatalogSession("lake", Map.of());

  public SessionBoundHandlesTest() {
    registry.markDriver();
    registry.catalogs().register(alice);
    registry.catalogs().register(mallory);
  }

  private TableContext table(String catalog, String name) {
    return new TableContext(catalog, List.of("db"), name, "s3://b/" + name, null, false, null, null);
  }

  private Map<String, String> vended(String accessKey) {
    Map<String, String> config = new HashMap<>();
    config.put(ShimKeys.ACCESS_KEY_ID, accessKey);
    config.put(ShimKeys.SECRET_ACCESS_KEY, "secret-of-" + accessKey);
    config.put(ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 10 * MINUTE));
    return config;
  }

  /**
   * FileIO properties as a forger writes them: a handle, a table identity and the catalog session
   * the handle names (the shim's catalog writes its own session there; any other catalog, anything).
   */
  private static Map<String, String> fileIo(String handle, TableContext identity) {
    Map<String, String> props = new HashMap<>();
    props.put(ShimKeys.TABLE_HANDLE, handle);
    props.put(ShimKeys.TABLE_IDENTITY, identity.identityJson());
    props.put(ShimKeys.CATALOG_SESSION, TableHandles.sessionOf(handle));
    return props;
  }

  @Test
  public void aLiveHandleUnderAnotherCatalogSessionGetsNothing() {
    String aliceHandle = aliceLoads("t");
    Map<String, String> mine = fileIo(aliceHandle, table("lake", "t"));
    assertSame(registry.lookup(aliceHandle), registry.forClient(mine), "Alice's own FileIO gets her entry");
    // Mallory's catalog (the shim's catalog writes its own session id into every table's FileIO
    // properties) handed Alice's handle, by a server Mallory runs or a property Mallory set.
    Map<String, String> theirs = new HashMap<>(mine);
    theirs.put(ShimKeys.CATALOG_SESSION, mallory.id);
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> registry.forClient(theirs));
    assertFalse(refused.getMessage().contains("\n"));
    assertTrue(refused.getMessage().contains(ShimKeys.TABLE_HANDLE), refused.getMessage());
    theirs.remove(ShimKeys.CATALOG_SESSION);
    assertThrows(IllegalArgumentException.class, () -> registry.forClient(theirs));
  }

  private String aliceLoads(String name) {
    return registry.registerDriverTable(table("lake", name), alice, vended("ALICE"), List.of());
  }

  private void evictAll() {
    clock.advance(20 * MINUTE + CredentialRegistry.IDLE_EVICTION_MS); // keys expired, unused
    registry.evictIdle(CredentialRegistry.IDLE_EVICTION_MS);
    assertEquals(0, registry.size());
  }

  @Test
  public void anotherSessionLoadingTheSameTableGetsItsOwnEntryAndHandle() {
    String aliceHandle = aliceLoads("t");
    String malloryHandle = registry.registerDriverTable(table("lake", "t"), mallory, vended("MALLORY"), List.of());
    assertNotEquals(aliceHandle, malloryHandle);
    assertNotSame(registry.lookup(aliceHandle), registry.lookup(malloryHandle));
    assertEquals("ALICE", registry.lookup(aliceHandle).snapshot("").credentials.accessKeyId(),
        "a later load by another session must not hand its keys to (or take them from) the first");
    assertEquals("MALLORY", registry.lookup(malloryHandle).snapshot("").credentials.accessKeyId());
    assertEquals(aliceHandle, aliceLoads("t"), "the same session's loads share one entry");
  }

  @Test
  public void theTablesIdentityAloneGetsNothingOnTheDriver() {
    String aliceHandle = aliceLoads("t");
    TableContext identity = table("lake", "t");
    for (String forged : List.of("", "made-up", mallory.id + ".AAAA.BBBB", alice.id + ".AAAA.BBBB",
        TableHandles.sessionOf(aliceHandle))) {
      IllegalArgumentException refused =
          assertThrows(IllegalArgumentException.class, () -> registry.forClient(fileIo(forged, identity)), forged);
      assertFalse(refused.getMessage().contains("\n"));
      assertTrue(refused.getMessage().contains("lake.db.t") && refused.getMessage().contains(ShimKeys.TABLE_HANDLE),
          refused.getMessage());
    }
    IllegalArgumentException multiLine = assertThrows(IllegalArgumentException.class,
        () -> registry.forClient(fileIo("made-up", table("lake", "t\nforged log line"))));
    assertFalse(multiLine.getMessage().contains("\n"), multiLine.getMessage());
    Map<String, String> noHandle = new HashMap<>(fileIo("x", identity));
    noHandle.remove(ShimKeys.TABLE_HANDLE);
    assertThrows(IllegalArgumentException.class, () -> registry.forClient(noHandle));
    assertEquals(1, registry.size(), "nothing was tracked for the forged asks");
  }

  @Test
  public void aHandleWorksOnlyForItsOwnTableAndSessionAfterEviction() {
    String aliceHandle = aliceLoads("t");
    aliceLoads("other");
    evictAll();
    // Another table's identity with Alice's handle, or Alice's handle re-labelled as Mallory's session.
    assertThrows(IllegalArgumentException.class, () -> registry.forClient(fileIo(aliceHandle, table("lake", "other"))));
    assertThrows(IllegalArgumentException.class, () -> registry.forClient(fileIo(aliceHandle, table("lake2", "t"))));
    String relabelled = mallory.id + aliceHandle.substring(aliceHandle.indexOf('.'));
    assertThrows(IllegalArgumentException.class, () -> registry.forClient(fileIo(relabelled, table("lake", "t"))));
    assertEquals(0, registry.size());

    TableEntry back = registry.forClient(fileIo(aliceHandle, table("lake", "t"))); // the genuine one
    assertEquals(aliceHandle, back.handle);
    assertEquals(1, registry.size());
    String malloryHandle = registry.registerDriverTable(table("lake", "t"), mallory, vended("MALLORY"), List.of());
    assertNotEquals(aliceHandle, malloryHandle, "the re-tracked entry stays Alice's session's");
  }

  @Test
  public void aHandleOfAClosedSessionGetsNothing() {
    CredentialRegistry fresh = new CredentialRegistry(clock);
    fresh.markDriver();
    CatalogSession gone = new CatalogSession("lake", Map.of());
    // Not registered: as a session the registry no longer holds (its Spark session closed).
    String handle = fresh.registerDriverTable(table("lake", "t"), gone, vended("GONE"), List.of());
    clock.advance(20 * MINUTE + CredentialRegistry.IDLE_EVICTION_MS);
    fresh.evictIdle(CredentialRegistry.IDLE_EVICTION_MS);
    assertThrows(IllegalArgumentException.class, () -> fresh.forClient(fileIo(handle, table("lake", "t"))));
  }

  @Test
  public void executorsAskingWithAnIdentityAndNoIssuedHandleGetNoKeys() {
    String aliceHandle = aliceLoads("t");
    String identity = table("lake", "t").identityJson();
    PluginMessages.Reply forged = registry.executorAnswers().answer(new PluginMessages.Request(mallory.id + ".AAAA.BBBB", identity));
    assertNotNull(forged.error);
    assertTrue(forged.configByPrefix.isEmpty(), "keys went to a forged handle: " + forged.configByPrefix.keySet());
    assertEquals(1, registry.size());

    PluginMessages.Reply live = registry.executorAnswers().answer(new PluginMessages.Request(aliceHandle, identity));
    assertEquals("ALICE", live.configByPrefix.get("").get(ShimKeys.ACCESS_KEY_ID));

    evictAll();
    PluginMessages.Reply otherTable =
        registry.executorAnswers().answer(new PluginMessages.Request(aliceHandle, table("lake", "other").identityJson()));
    assertTrue(otherTable.configByPrefix.isEmpty());
    assertNull(registry.lookup(aliceHandle));
    registry.executorAnswers().answer(new PluginMessages.Request(aliceHandle, identity)); // the genuine ask re-tracks
    assertNotNull(registry.lookup(aliceHandle));
  }

  @Test
  public void aCreateCommitInOneSessionLeavesAnotherSessionsStagedTableStaged() {
    TableContext aliceStaged = new TableContext("lake", List.of("db"), "t", "s3://b/t", null, true, "{}", null);
    TableContext malloryStaged = new TableContext("lake", List.of("db"), "t", "s3://b/t", null, true, "{}", null);
    String aliceHandle = registry.registerDriverTable(aliceStaged, alice, vended("ALICE"), List.of());
    String malloryHandle = registry.registerDriverTable(malloryStaged, mallory, vended("MALLORY"), List.of());
    registry.markCommitted(mallory, List.of("db"), "t");
    assertFalse(registry.lookup(malloryHandle).context.staged);
    assertTrue(registry.lookup(aliceHandle).context.staged, "Mallory's commit ended Alice's staging (and her re-stage refresh)");
  }

  @Test
  public void handlesAreUnguessableAndNameTheirSession() {
    String one = aliceLoads("t");
    String two = aliceLoads("u");
    assertEquals(alice.id, TableHandles.sessionOf(one));
    assertNotEquals(alice.id, mallory.id);
    assertTrue(one.length() - alice.id.length() > 50, "too short to be unguessable: " + one);
    assertNotEquals(one.substring(alice.id.length()), two.substring(alice.id.length()));
  }

  @Test
  public void statusDescribesOnlyTheGivenSessionsTables() {
    String aliceHandle = aliceLoads("t");
    registry.registerDriverTable(table("lake", "m"), mallory, vended("MALLORY"), List.of());
    var rows = Json.read(registry.describe(List.of(alice)));
    assertEquals(1, rows.size());
    assertEquals(aliceHandle, rows.get(0).path("handle").asText());
    assertEquals("t", rows.get(0).path("table").asText());
    assertEquals(2, Json.read(registry.describe()).size());
  }

  @Test
  public void aFailedRefreshShowsItsTypeNotItsMessage() throws Exception {
    registry.sources().enableCustomSource("lake");
    registry.sources().registerBridge(request -> "{\"error\": \"denied: Authorization: Bearer sekrit-token-123\"}");
    String handle = aliceLoads("t");
    assertThrows(Exception.class, () -> registry.refresh(handle, registry.generation(handle)));
    var row = Json.read(registry.describe(List.of(alice))).get(0);
    assertEquals(1, row.path("failure_count").asInt());
    String shown = row.path("last_error").asText();
    assertTrue(shown.startsWith("IllegalStateException"), shown);
    assertFalse(Json.write(row).contains("sekrit"), Json.write(row));
  }

  @Test
  public void aSessionsEntriesRefreshThroughItsOwnCatalogNotTheLatestOfItsName() throws Exception {
    // Mallory's catalog of the same name is initialised after Alice's and has a client (to a server
    // Mallory runs): Alice's refresh must not go through it, it would send her table's refresh request there.
    java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
    com.sun.net.httpserver.HttpServer server = io.catalogext.shim.LoopbackCatalog.start("mallory-catalog", exchange -> {
      seen.incrementAndGet();
      io.catalogext.shim.LoopbackCatalog.answer(exchange, 500, "{}");
    });
    try (org.apache.iceberg.rest.RESTClient client = org.apache.iceberg.rest.HTTPClient.builder(Map.of())
        .uri("http://127.0.0.1:" + server.getAddress().getPort()).build()) {
      CredentialRegistry fresh = new CredentialRegistry(clock);
      fresh.markDriver();
      fresh.catalogs().register(alice);
      String handle = fresh.registerDriverTable(table("lake", "t"), alice, vended("ALICE"), List.of());
      CatalogSession later = new CatalogSession("lake", Map.of());
      later.observedTableOperation(client, "v1/");
      fresh.catalogs().register(later);
      assertSame(later, fresh.catalogs().named("lake"));
      Exception failed = assertThrows(Exception.class, () -> fresh.refresh(handle, fresh.generation(handle)));
      assertTrue(failed.getMessage().contains("handed out no table yet"), failed.getMessage()); // Alice's own session
      assertEquals(0, seen.get(), "Alice's refresh went to the later catalog of her catalog's name");
    } finally {
      server.stop(0);
    }
  }
}
