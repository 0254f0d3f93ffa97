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
import org.apache.iceberg.IcebergBuild;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotParser;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A snapshot-add commit whose answer is lost. The commit guard reloads the table to reconcile; when
 * that look cannot tell, its answer is "unknown" (every file kept). Iceberg 1.11+ then reloads the
 * table itself ({@code reconcileOnSimpleUpdate}): that look can only turn "unknown" into success,
 * when our snapshot is there by then, never into a failure that deletes files. Against a real HTTP
 * server, with Iceberg's real table operations, on every Iceberg of the matrix.
 */
public class IcebergReconciliationTest {
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

  /** Iceberg reconciles a simple snapshot-add itself from 1.11 on. */
  private static boolean icebergReconciles() {
    return !IcebergBuild.version().startsWith("1.10.");
  }

  private static Snapshot ours() {
    return SnapshotParser.fromJson(
        "{\"sequence-number\":1,\"snapshot-id\":7001,\"timestamp-ms\":" + (System.currentTimeMillis() + 1000) + ","
            + "\"summary\":{\"operation\":\"append\"},\"manifest-list\":\"file:/tmp/catalog-ext-reconcile/snap.avro\","
            + "\"schema-id\":0}");
  }

  /**
   * The catalog: every commit answered 504 (a gateway timed out; it may or may not be applied), the
   * table shown without our snapshot for the first {@code plainLoadsAfterCommit} loads after the
   * commit, with it after that (the commit landed late).
   */
  private TableOperations start(int plainLoadsAfterCommit) throws Exception {
    String location = "file:/tmp/catalog-ext-reconcile";
    String plain = LoopbackCatalog.loadedTable(location, "{}");
    java.util.concurrent.atomic.AtomicInteger loadsAfterCommit = new java.util.concurrent.atomic.AtomicInteger(-1);
    String[] landed = new String[1];
    server = LoopbackCatalog.start("test-reconcile", exchange -> {
      String request = exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath();
      received.add(request);
      if (request.endsWith("/v1/config")) {
        LoopbackCatalog.answer(exchange, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else if (request.equals("POST " + TABLE)) {
        loadsAfterCommit.set(0);
        LoopbackCatalog.answer(exchange, 504, "{\"error\":{\"message\":\"gateway timeout\",\"type\":\"Scripted\",\"code\":504}}");
      } else if (loadsAfterCommit.get() >= 0 && loadsAfterCommit.incrementAndGet() > plainLoadsAfterCommit) {
        LoopbackCatalog.answer(exchange, 200, landed[0]);
      } else {
        LoopbackCatalog.answer(exchange, 200, plain);
      }
    });
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(server, ""));
    props.put("catalog-ext.commit.max-attempts", "1");
    ExtRESTCatalog catalog = new ExtRESTCatalog();
    catalog.initialize("reconcile", props);
    Table loaded = catalog.loadTable(TableIdentifier.of("db", "t"));
    TableOperations ops = ((HasTableOperations) loaded).operations();
    TableMetadata withOurs = TableMetadata.buildFrom(ops.current()).addSnapshot(ours()).setBranchSnapshot(7001L, "main").build();
    landed[0] = "{\"metadata-location\":\"" + location + "/metadata/v2.metadata.json\",\"metadata\":"
        + TableMetadataParser.toJson(withOurs) + ",\"config\":{}}";
    return ops;
  }

  @Test
  void testALostSnapshotAddThatNoLookSeesStaysUnknown() throws Exception {
    TableOperations ops = start(Integer.MAX_VALUE);
    TableMetadata base = ops.current();
    // Exactly what Iceberg reconciles on its own: one added snapshot, main moved to it.
    TableMetadata next = TableMetadata.buildFrom(base).addSnapshot(ours()).setBranchSnapshot(7001L, "main").build();
    long loadsBefore = count("GET " + TABLE);

    CommitStateUnknownException e = assertThrows(CommitStateUnknownException.class, () -> ops.commit(base, next));

    assertEquals(1, count("POST " + TABLE), "one commit attempt (max-attempts=1)");
    assertEquals(icebergReconciles() ? 2 : 1, count("GET " + TABLE) - loadsBefore,
        "the guard's lookup, and Iceberg's own from 1.11 on");
    assertTrue(e.getMessage().contains("does not show whether the commit landed")
        || e.getMessage().contains("gateway timeout"), "the guard's answer: " + e.getMessage());
  }

  @Test
  void testIcebergsOwnLookTurnsALateLandingIntoSuccess() throws Exception {
    TableOperations ops = start(1); // the guard's look misses it; the next look sees it
    TableMetadata base = ops.current();
    TableMetadata next = TableMetadata.buildFrom(base).addSnapshot(ours()).setBranchSnapshot(7001L, "main").build();
    if (icebergReconciles()) {
      ops.commit(base, next); // success, reported once: the commit is there
    } else {
      assertThrows(CommitStateUnknownException.class, () -> ops.commit(base, next)); // 1.10: the guard's answer
    }
    assertEquals(1, count("POST " + TABLE), "never sent twice");
  }
}
