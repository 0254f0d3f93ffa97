package io.catalogext.shim.http;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.PythonApi;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.StorageCredential;
import org.apache.iceberg.io.SupportsStorageCredentials;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Iceberg 1.11+'s S3FileIO schedules its own refresh of vended credentials from each storage
 * credential's {@code s3.session-token-expires-at-ms}, through {@code client.refresh-credentials-endpoint}
 * (apache/iceberg#15678). The shim takes that endpoint out (its own refresh replaces Iceberg's), so
 * Iceberg's scheduled refresh would fail with "Invalid credentials endpoint: null"
 * (apache/iceberg#17810) and, where an endpoint were kept, refresh a second time beside ours. The
 * shim's table therefore hands S3FileIO credentials whose expiry only the shim reads: nothing is
 * scheduled, and the shim still knows when the keys run out. Real S3FileIO, real loopback catalog.
 */
public class IcebergScheduledRefreshTest {
  private static final String PREFIX = "s3://bucket/db/t";
  private HttpServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  @Test
  void testTheShimsFileIoSchedulesNoRefreshOfItsOwn() throws Exception {
    long expiresAt = System.currentTimeMillis() + 10 * 60_000; // Iceberg would refresh 5 min before
    String credential = "{\"s3.access-key-id\":\"AKIAEXAMPLE\",\"s3.secret-access-key\":\"secret\","
        + "\"s3.session-token\":\"token\",\"s3.session-token-expires-at-ms\":\"" + expiresAt + "\","
        + "\"client.refresh-credentials-endpoint\":\"v1/namespaces/db/tables/t/credentials\"}";
    String table = LoopbackCatalog.loadedTable(PREFIX, "{\"client.refresh-credentials-endpoint\":\"v1/namespaces/db/tables/t/credentials\"}");
    String withCredentials = table.substring(0, table.length() - 1)
        + ",\"storage-credentials\":[{\"prefix\":\"" + PREFIX + "\",\"config\":" + credential + "}]}";
    server = LoopbackCatalog.start("test-scheduled-refresh", exchange -> {
      if (exchange.getRequestURI().getPath().endsWith("/v1/config")) {
        LoopbackCatalog.answer(exchange, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else {
        LoopbackCatalog.answer(exchange, 200, withCredentials);
      }
    });
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(server, ""));
    props.put("io-impl", S3FileIO.class.getName());
    props.put("s3.client-factory-impl", "io.catalogext.shim.RefreshingS3ClientFactory");
    props.put("s3.endpoint", "http://127.0.0.1:9"); // never called: only clients are built
    props.put("client.region", "us-east-1");
    try (ExtRESTCatalog catalog = new ExtRESTCatalog()) {
      catalog.initialize("scheduled-refresh", props);
      Table loaded = catalog.loadTable(TableIdentifier.of("db", "t"));
      S3FileIO io = (S3FileIO) loaded.io();
      io.client(PREFIX + "/data/f.parquet"); // builds the per-prefix clients, where 1.11+ schedules

      for (StorageCredential c : ((SupportsStorageCredentials) io).credentials()) {
        assertFalse(c.config().containsKey("s3.session-token-expires-at-ms"), "S3FileIO gets no expiry to schedule from");
        assertFalse(c.config().containsKey("client.refresh-credentials-endpoint"), "nor an endpoint of its own");
      }
      assertNull(scheduledRefresh(io), "Iceberg's S3FileIO scheduled no refresh of its own");

      long known = -1;
      for (JsonNode entry : Json.read(PythonApi.registryEntries())) {
        for (JsonNode p : entry.path("prefixes")) {
          if (PREFIX.equals(p.path("prefix").asText()) && "scheduled-refresh".equals(entry.path("catalog").asText())) {
            known = p.path("expires_at_ms").asLong();
          }
        }
      }
      assertEquals(expiresAt, known, "the shim's entry still knows when the keys expire");
      io.close();
    }
  }

  /** S3FileIO's scheduled refresh (Iceberg 1.11+), or null; Iceberg 1.10 has none. */
  private static Object scheduledRefresh(S3FileIO io) throws IllegalAccessException {
    try {
      Field f = S3FileIO.class.getDeclaredField("refreshFuture");
      f.setAccessible(true);
      return f.get(io);
    } catch (NoSuchFieldException e) {
      assertTrue(!org.apache.iceberg.IcebergBuild.version().startsWith("1.11")
          && !org.apache.iceberg.IcebergBuild.version().startsWith("1.12"), "1.11+ has refreshFuture");
      return null;
    }
  }
}
