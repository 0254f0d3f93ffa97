package io.catalogext.shim;

import io.catalogext.shim.util.DaemonThreads;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.Executors;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.types.Types;

/** A real HTTP server on loopback for the unit tests that talk to a catalog (JDK's own server). */
public final class LoopbackCatalog {
  private LoopbackCatalog() {}

  /** Starts {@code handler} on an ephemeral loopback port, on daemon threads named {@code threads}. */
  public static HttpServer start(String threads, HttpHandler handler) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(Executors.newCachedThreadPool(DaemonThreads.named(threads)));
    server.createContext("/", handler);
    server.start();
    return server;
  }

  /** Answers {@code exchange} with {@code status} and a JSON body. */
  public static void answer(HttpExchange exchange, int status, String json) throws IOException {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().add("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
  }

  /** The catalog URI of {@code server}, plus {@code root} (e.g. "/a"). */
  public static String uri(HttpServer server, String root) {
    return "http://127.0.0.1:" + server.getAddress().getPort() + root;
  }

  /**
   * A LoadTableResponse body for an empty one-column table at {@code location}, with
   * {@code configJson} as its config (the table answer tests load, commit to, or check for secrets).
   */
  public static String loadedTable(String location, String configJson) {
    Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
    TableMetadata metadata = TableMetadata.newTableMetadata(schema, PartitionSpec.unpartitioned(), location, Map.of());
    return "{\"metadata-location\":\"" + location + "/metadata/v1.metadata.json\",\"metadata\":"
        + TableMetadataParser.toJson(metadata) + ",\"config\":" + configJson + "}";
  }
}
