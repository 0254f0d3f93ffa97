package io.catalogext.shim.spark;

import io.catalogext.shim.CatalogExtSqlExtensions;
import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.iceberg.spark.SparkCatalog;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/**
 * A catalog that drops a table only with its data (S3 Tables: a DELETE without
 * {@code purgeRequested=true} answers 400): Spark's {@code DROP TABLE ... PURGE} drops it (the
 * plain drop Iceberg 1.10/1.11's Spark sends is refused, then repeated with purge, because the
 * statement asked for it); a plain {@code DROP TABLE} keeps the refusal. A real local SparkSession
 * with the shim's SQL extension and catalog, against a loopback catalog.
 */
public class PurgeStatementsTest {
  private static final String TABLE = "/v1/namespaces/db/tables/t";

  @Test
  void testOnlyAPurgingDropStatementIsRepeatedWithPurge() throws Exception {
    List<String> deletes = Collections.synchronizedList(new ArrayList<>());
    String loaded = LoopbackCatalog.loadedTable("file:/tmp/catalog-ext-purge-missing", "{}");
    HttpServer server = LoopbackCatalog.start("test-purge-catalog", ex -> {
      String path = ex.getRequestURI().getPath();
      String query = ex.getRequestURI().getRawQuery();
      if (path.endsWith("/v1/config")) {
        LoopbackCatalog.answer(ex, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else if ("DELETE".equals(ex.getRequestMethod()) && path.equals(TABLE)) {
        boolean purge = query != null && query.contains("purgeRequested=true");
        deletes.add(purge ? "purge" : "plain");
        if (purge) {
          ex.sendResponseHeaders(204, -1);
          ex.close();
        } else {
          LoopbackCatalog.answer(ex, 400, "{\"error\":{\"message\":\"a table can only be dropped with purgeRequested=true\","
              + "\"type\":\"BadRequestException\",\"code\":400}}");
        }
      } else {
        LoopbackCatalog.answer(ex, 200, loaded);
      }
    });
    SparkSession spark = SparkSession.builder()
        .master("local[1]")
        .appName("purge-statements-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.warehouse.dir", Files.createTempDirectory("purge-warehouse").toString())
        .config("spark.sql.extensions", CatalogExtSqlExtensions.class.getName())
        .config("spark.sql.catalog.s3t", SparkCatalog.class.getName())
        .config("spark.sql.catalog.s3t.catalog-impl", ExtRESTCatalog.class.getName())
        .config("spark.sql.catalog.s3t.uri", LoopbackCatalog.uri(server, ""))
        .config("spark.sql.catalog.s3t.cache-enabled", "false")
        // No Hadoop on the purge's path: its exists() check must also run on JDK 24 and later.
        .config("spark.sql.catalog.s3t.io-impl", AbsentFilesFileIO.class.getName())
        .getOrCreate();
    try {
      RuntimeException plain = assertThrows(RuntimeException.class, () -> spark.sql("DROP TABLE s3t.db.t"));
      assertTrue(plain.getMessage().contains("purgeRequested=true"), plain.getMessage());
      assertEquals(List.of("plain"), deletes, "a plain DROP TABLE is not repeated with purge");

      deletes.clear();
      spark.sql("DROP TABLE s3t.db.t PURGE");
      assertEquals(List.of("plain", "purge"), deletes, "DROP TABLE ... PURGE: refused, then repeated with purge");

      deletes.clear();
      assertThrows(RuntimeException.class, () -> spark.sql("DROP TABLE s3t.db.t"));
      assertEquals(List.of("plain"), deletes, "the purge was that statement's only");
    } finally {
      spark.stop();
      server.stop(0);
    }
  }
}
