package io.catalogext.shim.wire;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.rest.credentials.ImmutableCredential;
import org.apache.iceberg.rest.responses.LoadCredentialsResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.rest.responses.LoadTableResponseParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/** Quirks of the storage-credentials list, handled where the catalog's answers are read (Json.restMapper). */
public class ResponseQuirksTest {
  private static final Map<String, String> KEYS = Map.of(ShimKeys.ACCESS_KEY_ID, "AKIA", "s3.secret-access-key", "s");

  private static ObjectNode withEmptyEntry(String json) {
    ObjectNode node = (ObjectNode) Json.read(json);
    ArrayNode creds = node.withArray("storage-credentials");
    creds.addObject().put("prefix", "s3://b/other/").putObject("config"); // lakekeeper#1923
    creds.addObject().put("prefix", "s3://b/none/"); // no config at all
    return node;
  }

  @Test
  void testAnEmptyStorageCredentialEntryIsDroppedFromALoadTableAnswer() throws Exception {
    Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
    TableMetadata meta = TableMetadata.newTableMetadata(schema, PartitionSpec.unpartitioned(), "s3://b/db/t", Map.of());
    LoadTableResponse original = LoadTableResponse.builder().withTableMetadata(meta)
        .addCredential(ImmutableCredential.builder().prefix("s3://b/db/t").config(KEYS).build()).build();
    String json = Json.write(withEmptyEntry(LoadTableResponseParser.toJson(original)));
    assertThrows(IllegalArgumentException.class, () -> LoadTableResponseParser.fromJson(json)); // Iceberg alone
    LoadTableResponse read = RestJson.restMapper().readValue(json, LoadTableResponse.class);
    assertEquals(1, read.credentials().size(), "only the entry with keys is left");
    assertEquals("AKIA", read.credentials().get(0).config().get(ShimKeys.ACCESS_KEY_ID), "keys kept");
  }

  @Test
  void testAnEmptyEntryIsDroppedFromACredentialsAnswerToo() throws Exception {
    String json = Json.write(withEmptyEntry(
        "{\"storage-credentials\":[{\"prefix\":\"s3://b/db/t\",\"config\":{\"s3.access-key-id\":\"AKIA\",\"s3.secret-access-key\":\"s\"}}]}"));
    LoadCredentialsResponse read = RestJson.restMapper().readValue(json, LoadCredentialsResponse.class);
    assertEquals(1, read.credentials().size(), "one entry left");
  }
}
