package io.catalogext.shim.http;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.RefreshingS3ClientFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.LocationProvider;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * Table properties are data: whoever may set a table's properties must not configure how its files
 * are read, where, or with whose credentials. A table whose metadata properties name an S3
 * endpoint, a remote signer, a proxy, keys, a client factory or any other key (each with a value
 * marked as the property's) is loaded through the shim's catalog: none of those values reaches the
 * FileIO's properties, which only the user's catalog properties and the catalog's table config
 * make, nor the S3 client it builds.
 */
public class TablePropertiesAreDataTest {
  /** A LocationProvider a hostile table names: counts its instances. */
  public static final class MarkerLocationProvider implements LocationProvider {
    private static final long serialVersionUID = 1L;
    static final AtomicInteger INSTANCES = new AtomicInteger();

    public MarkerLocationProvider(String location, Map<String, String> properties) {
      INSTANCES.incrementAndGet();
    }

    @Override
    public String newDataLocation(String filename) {
      return "s3://attacker/" + filename;
    }

    @Override
    public String newDataLocation(PartitionSpec spec, StructLike partition, String filename) {
      return "s3://attacker/" + filename;
    }
  }

  private static final String MARK = "from-table-properties";

  @Test
  void testMetadataPropertiesNeverConfigureTheFileIo() throws Exception {
    Map<String, String> properties = new HashMap<>();
    String[] keys = {"s3.endpoint", "s3.signer.uri", "signer.uri", "s3.signer.endpoint", "s3.remote-signing-enabled",
        "s3.proxy-uri", "http-client.urlconnection.proxy-endpoint", "s3.access-key-id", "s3.secret-access-key",
        "s3.session-token", "client.factory", "s3.client-factory-impl", "client.credentials-provider", "client.region",
        "io-impl", "uri", "oauth2-server-uri", "token", "credential", "catalog-ext.trusted-origins",
        "catalog-ext.sealed-trusted-origins", "catalog-ext.table-handle", "header.Authorization", "rest.client.proxy.hostname"};
    for (int i = 0; i < keys.length; i++) {
      properties.put(keys[i], MARK + "-" + i);
    }
    properties.put("a.key.no.list.names", MARK + "-other");
    // A property Iceberg loads a class from (a LocationProvider at the next write): never reaches Iceberg.
    properties.put("write.location-provider.impl", MarkerLocationProvider.class.getName());
    Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
    TableMetadata metadata = TableMetadata.newTableMetadata(schema, PartitionSpec.unpartitioned(), "s3://bucket/db/t", properties);
    String answer = "{\"metadata-location\":\"s3://bucket/db/t/metadata/v1.metadata.json\",\"metadata\":"
        + TableMetadataParser.toJson(metadata) + ",\"config\":{\"s3.access-key-id\":\"AKIA\",\"s3.secret-access-key\":\"vended\"}}";
    HttpServer server = LoopbackCatalog.start("test-properties-are-data", ex -> {
      if (ex.getRequestURI().getPath().endsWith("/v1/config")) {
        LoopbackCatalog.answer(ex, 200, "{\"defaults\":{},\"overrides\":{}}");
      } else {
        LoopbackCatalog.answer(ex, 200, answer);
      }
    });
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(server, ""));
    props.put("io-impl", S3FileIO.class.getName());
    props.put("s3.client-factory-impl", RefreshingS3ClientFactory.class.getName());
    props.put("s3.endpoint", "http://127.0.0.1:9"); // the user's: never called, only clients are built
    props.put("client.region", "us-east-1");
    try (ExtRESTCatalog catalog = new ExtRESTCatalog()) {
      catalog.initialize("properties-are-data", props);
      Table table = catalog.loadTable(TableIdentifier.of("db", "t"));
      assertEquals(MARK + "-0", table.properties().get("s3.endpoint"), "the table does carry the properties");
      S3FileIO io = (S3FileIO) table.io();
      Map<String, String> ioProperties = io.properties();
      ioProperties.forEach((key, value) ->
          assertTrue(value == null || !value.startsWith(MARK), "FileIO property " + key + " came from the table's properties"));
      assertEquals("http://127.0.0.1:9", ioProperties.get("s3.endpoint"), "the user's endpoint");
      assertEquals("vended", ioProperties.get("s3.secret-access-key"), "the catalog's table config");
      io.client(); // the S3 client builds from those properties
      assertFalse(table.properties().containsKey("write.location-provider.impl"), "a property naming code is dropped");
      table.locationProvider().newDataLocation("f.parquet");
      assertEquals(0, MarkerLocationProvider.INSTANCES.get(), "the table's LocationProvider class was never loaded");
    } finally {
      server.stop(0);
    }
  }
}
