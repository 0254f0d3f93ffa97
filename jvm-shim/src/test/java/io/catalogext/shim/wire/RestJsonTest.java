package io.catalogext.shim.wire;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.MapperFeature;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.SerializationFeature;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * The catalog's answers are read with Iceberg's own JSON settings: every JsonFactory, mapper,
 * serialization and deserialization feature as Iceberg's REST mapper has it, and a large metadata
 * answer that Jackson's defaults cannot read (a snapshot with 1,024 partition summaries whose names
 * collide in Jackson's symbol table, apache/iceberg#12224) loads through the shim's catalog.
 */
public class RestJsonTest {
  @Test
  void testEverySettingIsIcebergs() {
    ObjectMapper ours = RestJson.restMapper();
    ObjectMapper icebergs = RestJson.icebergs();
    for (JsonFactory.Feature f : JsonFactory.Feature.values()) {
      assertEquals(icebergs.getFactory().isEnabled(f), ours.getFactory().isEnabled(f), "JsonFactory " + f);
    }
    for (DeserializationFeature f : DeserializationFeature.values()) {
      assertEquals(icebergs.isEnabled(f), ours.isEnabled(f), "deserialization " + f);
    }
    for (SerializationFeature f : SerializationFeature.values()) {
      assertEquals(icebergs.isEnabled(f), ours.isEnabled(f), "serialization " + f);
    }
    for (MapperFeature f : MapperFeature.values()) {
      assertEquals(icebergs.isEnabled(f), ours.isEnabled(f), "mapper " + f);
    }
    assertEquals(icebergs.getPropertyNamingStrategy().getClass(), ours.getPropertyNamingStrategy().getClass(), "naming");
    assertEquals(icebergs.getVisibilityChecker().toString(), ours.getVisibilityChecker().toString(), "visibility");
    assertTrue(ours.getRegisteredModuleIds().containsAll(icebergs.getRegisteredModuleIds()), "Iceberg's serializers");
    // What #12224 turned off, and why it matters below.
    assertTrue(!ours.getFactory().isEnabled(JsonFactory.Feature.INTERN_FIELD_NAMES), "field names not interned");
    assertTrue(!ours.getFactory().isEnabled(JsonFactory.Feature.FAIL_ON_SYMBOL_HASH_OVERFLOW), "no symbol-hash check");
  }

  @Test
  void testFieldNamesAreNotInterned() throws Exception {
    String name = "k-" + UUID.randomUUID();
    String pooled = new String(name.toCharArray()).intern();
    JsonNode read = RestJson.restMapper().readTree("{\"" + name + "\":1}");
    String parsed = read.fieldNames().next();
    assertEquals(name, parsed);
    assertNotSame(pooled, parsed, "the parser interned a field name");
  }

  /** Table metadata whose one snapshot carries 2^10 partition summaries with colliding names. */
  private static String largeMetadataAnswer() {
    Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
    TableMetadata base = TableMetadata.newTableMetadata(schema, PartitionSpec.unpartitioned(), "file:/tmp/catalog-ext-large", Map.of());
    StringBuilder summary = new StringBuilder("{\"operation\":\"append\"");
    for (int i = 0; i < 1 << 10; i++) {
      StringBuilder key = new StringBuilder("partitions.");
      for (int bit = 0; bit < 10; bit++) {
        key.append(((i >> bit) & 1) == 0 ? "Ab" : "BA"); // "Ab" and "BA" hash alike in Jackson's symbol table
      }
      summary.append(",\"").append(key).append("\":\"added-data-files=1,added-records=10\"");
    }
    summary.append('}');
    String snapshot = "{\"sequence-number\":1,\"snapshot-id\":42,\"timestamp-ms\":" + System.currentTimeMillis()
        + ",\"summary\":" + summary + ",\"manifest-list\":\"file:/tmp/catalog-ext-large/snap.avro\",\"schema-id\":0}";
    TableMetadata withSnapshot = TableMetadata.buildFrom(base)
        .addSnapshot(org.apache.iceberg.SnapshotParser.fromJson(snapshot))
        .setBranchSnapshot(42L, "main")
        .build();
    return "{\"metadata-location\":\"file:/tmp/catalog-ext-large/metadata/v1.metadata.json\",\"metadata\":"
        + TableMetadataParser.toJson(withSnapshot) + ",\"config\":{}}";
  }

  @Test
  void testALargeMetadataAnswerThatJacksonsDefaultsRefuseLoads() throws Exception {
    String answer = largeMetadataAnswer();
    // The answer is a real trigger: Jackson's default settings refuse it.
    Exception refused = assertThrows(Exception.class, () -> new ObjectMapper().readTree(answer));
    assertTrue(String.valueOf(refused.getMessage()).contains("collision"), refused.toString());

    HttpServer server = LoopbackCatalog.start("test-large-metadata", exchange -> {
      if (exchange.getRequestURI().getPath().endsWith("/v1/config")) {
        LoopbackCatalog.answer(exchange, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else {
        LoopbackCatalog.answer(exchange, 200, answer);
      }
    });
    try (ExtRESTCatalog catalog = new ExtRESTCatalog()) {
      catalog.initialize("large-metadata", Map.of("uri", LoopbackCatalog.uri(server, "")));
      Table table = catalog.loadTable(TableIdentifier.of("db", "t"));
      Snapshot current = table.currentSnapshot();
      assertEquals(42L, current.snapshotId(), "loaded");
      assertEquals(1 << 10, current.summary().size(), "every partition summary read");
    } finally {
      server.stop(0);
    }
  }
}
