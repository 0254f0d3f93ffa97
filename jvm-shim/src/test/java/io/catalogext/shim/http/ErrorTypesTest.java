package io.catalogext.shim.http;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.wire.RestJson;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.metrics.CommitMetrics;
import org.apache.iceberg.metrics.CommitMetricsResult;
import org.apache.iceberg.metrics.CommitReport;
import org.apache.iceberg.metrics.ImmutableCommitReport;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.auth.AuthSession;
import org.apache.iceberg.rest.requests.ReportMetricsRequest;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Iceberg's error handlers keep their type through the commit guard, in every call it wraps: the
 * error body is parsed and the caller gets the Iceberg exception of its type with the server's
 * message. (The transport, as Iceberg's client, parses an error body only through an Iceberg
 * {@code ErrorHandler}, and logs "Unknown error handler" otherwise: a parsed message is the proof
 * that no such warning was written.) The answers a real Polaris 1.4.1 gives
 * (/work's shared recordings): 404 to the metrics report of a staged table's commit, 404
 * NoSuchNamespaceException to a rename into a namespace that does not exist.
 */
public class ErrorTypesTest {
  private static final String TABLE_404 =
      "{\"error\":{\"code\":404,\"message\":\"Table does not exist: db.t\",\"type\":\"NoSuchTableException\"}}";
  private static final String NAMESPACE_404 =
      "{\"error\":{\"code\":404,\"message\":\"Namespace does not exist: nons\",\"type\":\"NoSuchNamespaceException\"}}";

  private final List<String> received = Collections.synchronizedList(new ArrayList<>());
  private HttpServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  private ExtRESTCatalog polaris() throws Exception {
    String table = LoopbackCatalog.loadedTable(
        java.nio.file.Files.createTempDirectory("catalog-ext-error-types").toUri().toString(), "{}");
    server = LoopbackCatalog.start("test-error-types", ex -> {
      String request = ex.getRequestMethod() + " " + ex.getRequestURI().getPath();
      received.add(request);
      if (request.endsWith("/v1/config")) {
        LoopbackCatalog.answer(ex, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else if (request.endsWith("/metrics")) {
        LoopbackCatalog.answer(ex, 404, TABLE_404);
      } else if (request.equals("POST /v1/tables/rename")) {
        LoopbackCatalog.answer(ex, 404, NAMESPACE_404);
      } else {
        LoopbackCatalog.answer(ex, 200, table);
      }
    });
    ExtRESTCatalog catalog = new ExtRESTCatalog();
    // Iceberg's in-memory FileIO: the manifests of the staged append need no file system (Hadoop's
    // local one does not start on JDK 24+).
    catalog.initialize("polaris-errors", Map.of("uri", LoopbackCatalog.uri(server, ""), "io-impl",
        "org.apache.iceberg.inmemory.InMemoryFileIO"));
    return catalog;
  }

  @Test
  void testAStagedCreatesMetricsReportIsNotSentAndARefusedReportIsNoError() throws Exception {
    try (ExtRESTCatalog catalog = polaris()) {
      Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
      // A staged create with data, as a CTAS: stage-create, an append (whose metrics report, sent before the
      // table is committed, Polaris answers 404 and Iceberg's reporter logged as a 40-line stack), the commit.
      Transaction create = catalog.buildTable(TableIdentifier.of("db", "t"), schema)
          .withPartitionSpec(PartitionSpec.unpartitioned())
          .createTransaction();
      create.newAppend().appendFile(DataFiles.builder(PartitionSpec.unpartitioned())
          .withPath(create.table().location() + "/data/f.parquet").withFileSizeInBytes(10).withRecordCount(1)
          .withFormat(FileFormat.PARQUET).build()).commit();
      create.commitTransaction();
      assertTrue(received.contains("POST /v1/namespaces/db/tables/t"), "committed: " + received);
      assertTrue(received.stream().noneMatch(r -> r.endsWith("/t/metrics")), "the report was not sent: " + received);
      // Any other report the catalog refuses is one debug line, no exception (Iceberg would log its stack):
      // the call made here through the catalog's client as the catalog assembles it (guard included).
      CatalogSession session = CredentialRegistry.get().catalogs().named("polaris-errors");
      RESTClient client = CatalogClients.funnel(Map.of("uri", LoopbackCatalog.uri(server, "")), RestJson.restMapper(), session)
          .withAuthSession(AuthSession.EMPTY);
      assertNull(client.post("v1/namespaces/db/tables/t/metrics",
          ReportMetricsRequest.of(report()), null, Map.of(), ErrorHandlers.defaultErrorHandler()));
      assertTrue(received.contains("POST /v1/namespaces/db/tables/t/metrics"), "sent once: " + received);
    }
  }

  /** A commit report as Iceberg sends after a commit. */
  private static CommitReport report() {
    return ImmutableCommitReport.builder().tableName("polaris-errors.db.t").snapshotId(1L).sequenceNumber(1L)
        .operation("append").commitMetrics(CommitMetricsResult.from(CommitMetrics.noop(), Map.of())).build();
  }

  @Test
  void testARenameIntoAMissingNamespaceIsNoSuchNamespace() throws Exception {
    try (ExtRESTCatalog catalog = polaris()) {
      NoSuchNamespaceException e = assertThrows(NoSuchNamespaceException.class,
          () -> catalog.renameTable(TableIdentifier.of("db", "t"), TableIdentifier.of("nons", "t2")));
      assertEquals("Namespace does not exist: nons", e.getMessage());
    }
  }
}
