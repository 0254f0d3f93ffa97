package io.catalogext.shim.http;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotParser;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A snapshot-add commit whose answer is lost: the commit guard reloads the table once to
 * reconcile, and Iceberg 1.11+'s own reconciliation ({@code reconcileOnSimpleUpdate}, another
 * reload after a CommitStateUnknownException) stands down. Against a real HTTP server, with
 * Iceberg's real table operations; on Iceberg 1.10 (no reconciliation of its own) the same holds.
 */
public class ReconcileOnceTest {
  private static final String TABLE = "/v1/namespaces/db/tables/t";
  private final List<String> received = Collections.synchronizedList(new ArrayList<>());
  private HttpServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  private long count(String request) {
    synchronized (received) {
      return received.stream().filter(request::equals).count();
    }
  }

  @Test
  void testALostSnapshotAddIsLookedUpOnceNotTwice() throws Exception {
    String table = LoopbackCatalog.loadedTable("file:/tmp/catalog-ext-reconcile-once", "{}");
    server = LoopbackCatalog.start("test-reconcile-once", exchange -> {
      String request = exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath();
      received.add(request);
      if (request.endsWith("/v1/config")) {
        LoopbackCatalog.answer(exchange, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else if (request.equals("POST " + TABLE)) {
        // A gateway timed out: the commit may or may not have been applied.
        LoopbackCatalog.answer(exchange, 504, "{\"error\":{\"message\":\"gateway timeout\",\"type\":\"Scripted\",\"code\":504}}");
      } else {
        LoopbackCatalog.answer(exchange, 200, table); // the table, still without the snapshot
      }
    });
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(server, ""));
    props.put("catalog-ext.commit.max-attempts", "1");
    try (ExtRESTCatalog catalog = new ExtRESTCatalog()) {
      catalog.initialize("reconcile-once", props);
      Table loaded = catalog.loadTable(TableIdentifier.of("db", "t"));
      TableOperations ops = ((HasTableOperations) loaded).operations();
      TableMetadata base = ops.current();
      Snapshot snapshot = SnapshotParser.fromJson(
          "{\"sequence-number\":1,\"snapshot-id\":7001,\"timestamp-ms\":" + (System.currentTimeMillis() + 1000) + ","
              + "\"summary\":{\"operation\":\"append\"},\"manifest-list\":\"file:/tmp/catalog-ext-reconcile-once/snap.avro\","
              + "\"schema-id\":0}");
      // Exactly what Iceberg reconciles on its own: one added snapshot, main moved to it.
      TableMetadata next = TableMetadata.buildFrom(base).addSnapshot(snapshot).setBranchSnapshot(7001L, "main").build();
      long loadsBefore = count("GET " + TABLE);

      CommitStateUnknownException e = assertThrows(CommitStateUnknownException.class, () -> ops.commit(base, next));

      assertEquals(1, count("POST " + TABLE), "one commit attempt (max-attempts=1)");
      assertEquals(1, count("GET " + TABLE) - loadsBefore, "one lookup of the table after the lost answer, not two");
      assertTrue(e.getMessage().contains("does not show whether the commit landed")
          || e.getMessage().contains("gateway timeout"), "the guard's answer: " + e.getMessage());
    }
  }
}
