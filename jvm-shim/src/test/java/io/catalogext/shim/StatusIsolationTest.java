package io.catalogext.shim;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.refresh.TableContext;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/**
 * SQL {@code catalog_ext_status()} on a shared driver (a Spark Connect server: one JVM, many Spark
 * sessions) answers for the calling Spark session alone: its catalogs, its tables, its commits.
 */
public class StatusIsolationTest {
  /** Two Spark sessions, compared by identity only, as the status compares them. */
  private final Object alice = new Object();
  private final Object mallory = new Object();
  private final String suffix = UUID.randomUUID().toString().substring(0, 8);

  private static String register(CatalogSession session, String table) {
    CredentialRegistry.get().catalogs().register(session);
    TableContext context = new TableContext(session.name, List.of("db"), table, "s3://b/" + table, null, false, null, null);
    Map<String, String> vended = Map.of(ShimKeys.ACCESS_KEY_ID, "K", ShimKeys.SECRET_ACCESS_KEY, "S",
        ShimKeys.EXPIRES_AT_MS, String.valueOf(System.currentTimeMillis() + 600_000));
    return CredentialRegistry.get().registerDriverTable(context, session, vended, List.of());
  }

  private static void committed(CatalogSession session, String table) {
    var fields = EventLog.fields();
    fields.put(EventLog.CATALOG_SESSION, session.id);
    fields.put("table", session.name + ".db." + table);
    fields.put("outcome", "committed");
    fields.put("duration_s", 0.1); // as CommitEvents emits it: event-schemas.json requires it
    EventLog.emit("commit.finished", fields);
  }

  private static List<String> texts(JsonNode array, String field) {
    List<String> out = new ArrayList<>();
    array.forEach(node -> out.add(field == null ? node.asText() : node.path(field).asText()));
    return out;
  }

  @Test
  public void eachSparkSessionSeesOnlyItsOwnCatalogsTablesAndCommits() {
    CatalogSession lakeOfAlice = new CatalogSession("lake", Map.of(), System::currentTimeMillis, alice);
    // Mallory's session uses the server's catalog too, and one defined at run time (SET spark.sql.catalog.*).
    CatalogSession lakeOfMallory = new CatalogSession("lake", Map.of(), System::currentTimeMillis, mallory);
    CatalogSession setByMallory = new CatalogSession("mine_" + suffix, Map.of(), System::currentTimeMillis, mallory);
    String aliceHandle = register(lakeOfAlice, "a_" + suffix);
    String malloryHandle = register(lakeOfMallory, "m_" + suffix);
    register(setByMallory, "a_" + suffix); // naming Alice's table in her own catalog
    committed(lakeOfAlice, "a_" + suffix);
    committed(lakeOfMallory, "m_" + suffix);

    String raw = CatalogExtSqlExtensions.statusJson(alice);
    JsonNode status = Json.read(raw);
    assertEquals(List.of(aliceHandle), texts(status.path("tables"), "handle"));
    assertEquals(List.of("lake.db.a_" + suffix), texts(status.path("commits"), "table"));
    assertFalse(texts(status.path("catalogs"), null).contains("mine_" + suffix), raw);
    assertFalse(raw.contains(malloryHandle) || raw.contains("m_" + suffix) || raw.contains(lakeOfMallory.id), raw);
    assertFalse(raw.contains(EventLog.CATALOG_SESSION), "the session ids stay inside the driver: " + raw);

    JsonNode theirs = Json.read(CatalogExtSqlExtensions.statusJson(mallory));
    assertEquals(2, theirs.path("tables").size());
    assertFalse(texts(theirs.path("tables"), "handle").contains(aliceHandle));
    assertEquals(List.of("lake.db.m_" + suffix), texts(theirs.path("commits"), "table"));
    assertTrue(texts(theirs.path("catalogs"), null).contains("mine_" + suffix));

    JsonNode nobody = Json.read(CatalogExtSqlExtensions.statusJson(new Object()));
    assertEquals(0, nobody.path("tables").size(), "a session that loaded nothing sees no table");
  }
}
