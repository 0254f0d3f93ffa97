package io.catalogext.shim.wire;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.rest.responses.LoadTableResponseParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.aws.s3.signer.S3V4RestSignerClient;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Iceberg 1.12's remote-signing-config read by Json.restMapper and turned into s3.signer.* (RemoteSigning). */
public class RemoteSigningTest {
  private static final Schema SCHEMA = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  private static LoadTableResponse read(String signingConfig, Map<String, String> config) throws Exception {
    TableMetadata meta = TableMetadata.newTableMetadata(SCHEMA, PartitionSpec.unpartitioned(), "s3://b/db/t", Map.of());
    ObjectNode node = (ObjectNode) Json.read(LoadTableResponseParser.toJson(
        LoadTableResponse.builder().withTableMetadata(meta).addAllConfig(config).build()));
    if (signingConfig != null) {
      node.set(RemoteSigning.FIELD, Json.read(signingConfig));
    }
    return RestJson.restMapper().readValue(Json.write(node), LoadTableResponse.class);
  }

  private static final TablePath LOAD = TablePath.parse("v1/pfx/namespaces/db/tables/t");

  @Test
  void testPresenceAloneMeansThePerTableSignRouteOfTheCatalog() throws Exception {
    LoadTableResponse out = RemoteSigning.translate(read("{}", Map.of()), LOAD, null);
    assertEquals("v1/pfx/namespaces/db/tables/t/sign", out.config().get(RemoteSigning.SIGNER_ENDPOINT), "endpoint");
    assertTrue(!out.config().containsKey(RemoteSigning.SIGNER_URI), "no uri: Iceberg's default is the catalog URI");
    assertTrue(!out.config().containsKey(ShimKeys.CAPTURED_SIGNING_CONFIG), "the private key is gone");
  }

  @Test
  void testBaseUriAndEndpointPathAreUsed() throws Exception {
    LoadTableResponse out = RemoteSigning.translate(
        read("{\"base-uri\":\"https://signer.example.com/api\",\"endpoint-path\":\"/v1/sign/x\"}", Map.of()), LOAD, null);
    assertEquals("https://signer.example.com/api", out.config().get(RemoteSigning.SIGNER_URI), "uri");
    assertEquals("v1/sign/x", out.config().get(RemoteSigning.SIGNER_ENDPOINT), "endpoint, relative to the uri");
  }

  @Test
  void testTheCatalogsOwnSignerPropertiesWin() throws Exception {
    LoadTableResponse out = RemoteSigning.translate(read("{\"base-uri\":\"https://other\"}",
        Map.of(RemoteSigning.SIGNER_URI, "https://mine", RemoteSigning.SIGNER_ENDPOINT, "v1/aws/s3/sign")), LOAD, null);
    assertEquals("https://mine", out.config().get(RemoteSigning.SIGNER_URI), "uri kept");
    assertEquals("v1/aws/s3/sign", out.config().get(RemoteSigning.SIGNER_ENDPOINT), "endpoint kept");
  }

  @Test
  void testACreateSignsAtTheNewTablesRoute() throws Exception {
    CreateTableRequest create = CreateTableRequest.builder().withName("n").withSchema(SCHEMA).build();
    LoadTableResponse out = RemoteSigning.translate(read("{}", Map.of()),
        TablePath.parse("v1/pfx/namespaces/db/tables"), create);
    assertEquals("v1/pfx/namespaces/db/tables/n/sign", out.config().get(RemoteSigning.SIGNER_ENDPOINT), "endpoint");
  }

  @Test
  void testPassOnPropertiesOrHeadersAreAOneLineRefusal() throws Exception {
    Assumptions.assumeFalse(RemoteSigning.PASSES_ON, "Iceberg 1.12+ sends them itself");
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> RemoteSigning.translate(read("{\"headers\":{\"x\":[\"1\"]}}", Map.of()), LOAD, null));
    assertTrue(e.getMessage().contains("headers") && !e.getMessage().contains("\n"), e.getMessage());
  }

  @Test
  void testTheOldSignerKeysReachEveryIcebergsSigner() throws Exception {
    // Iceberg 1.12's signer client reads signer.uri/signer.endpoint, no longer s3.signer.*.
    Map<String, String> old = Map.of(RemoteSigning.SIGNER_URI, "https://signer.example.com", RemoteSigning.SIGNER_ENDPOINT, "v1/aws/s3/sign");
    for (String field : new String[] {null, "{}"}) {
      Map<String, String> config = RemoteSigning.translate(read(field, old), LOAD, null).config();
      assertEquals("https://signer.example.com", config.get(RemoteSigning.SIGNER_URI), "old uri kept");
      assertEquals("https://signer.example.com", config.get("signer.uri"), "uri under 1.12's name");
      assertEquals("v1/aws/s3/sign", config.get("signer.endpoint"), "endpoint under 1.12's name");
      Map<String, String> fileIo = new java.util.HashMap<>(config);
      fileIo.put("uri", "https://catalog.example.com");
      Object signer = S3V4RestSignerClient.create(fileIo);
      if (RemoteSigning.PASSES_ON) { // Iceberg 1.12's own signer client, as S3FileIO builds it
        assertEquals("https://signer.example.com", signer.getClass().getMethod("baseSignerUri").invoke(signer), "1.12 signs there");
        assertEquals("https://signer.example.com/v1/aws/s3/sign", signer.getClass().getMethod("endpoint").invoke(signer), "at that endpoint");
      }
    }
  }

  @Test
  void testPassOnPropertiesAndHeadersReachIceberg112sSigner() throws Exception {
    Assumptions.assumeTrue(RemoteSigning.PASSES_ON, "only Iceberg 1.12+ can send them");
    Map<String, String> config = RemoteSigning.translate(
        read("{\"properties\":{\"sign-scope\":\"t\"},\"headers\":{\"X-Sign\":[\"1\"]}}", Map.of()), LOAD, null).config();
    Map<String, String> fileIo = new java.util.HashMap<>(config);
    fileIo.put("uri", "https://catalog.example.com");
    Object signer = S3V4RestSignerClient.create(fileIo);
    Object signing = signer.getClass().getMethod("remoteSigningConfig").invoke(signer);
    assertEquals(Map.of("sign-scope", "t"), signing.getClass().getMethod("properties").invoke(signing), "properties passed on");
    assertEquals(Map.of("X-Sign", List.of("1")), signing.getClass().getMethod("headers").invoke(signing), "headers passed on");
  }

  @Test
  void testWithoutTheFieldTheAnswerIsUnchanged() throws Exception {
    LoadTableResponse in = read(null, Map.of("k", "v"));
    assertTrue(RemoteSigning.translate(in, LOAD, null) == in, "same object");
  }
}
