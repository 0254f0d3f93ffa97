package io.catalogext.shim.codeload;

import io.catalogext.shim.ExtRESTCatalog;
import io.catalogext.shim.LoopbackCatalog;
import io.catalogext.shim.RefreshingS3ClientFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.Closeable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * What a server or a table writer says never names code the shim's Iceberg loads. Every property
 * key through which the Iceberg on the classpath loads a class or calls a named method is found
 * from its bytecode ({@link IcebergCodeKeys}: run under each Maven profile, each Iceberg release of
 * the matrix), and each is set to {@link CodeMarker}'s name in each channel a server or a table
 * writer controls: {@code /v1/config} defaults and overrides, a table answer's config, its
 * {@code storage-credentials}, the table's metadata properties. A real loopback catalog answers;
 * the shim's catalog initialises, loads the table, reads a file, plans a scan, asks the location
 * provider and commits. The marker must never be initialised nor made.
 *
 * <p>Controls: the same keys set by the user (catalog properties) do load the marker, and plain
 * Iceberg (without the shim) loads it from each server channel: the channels are real and the
 * marker counts.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
public class CodeLoadingSweepTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MARKER = CodeMarker.class.getName(); // naming the class does not initialise it
  private static final String LOCATION = "s3://bucket/db/t";
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "t");

  /** Where a server or a table writer can put a key. */
  enum Channel { CONFIG_DEFAULTS, CONFIG_OVERRIDES, TABLE_CONFIG, STORAGE_CREDENTIALS, METADATA_PROPERTIES }

  private static Map<String, Set<String>> found;
  private static HttpServer catalog;
  private static HttpServer s3;
  private static volatile Channel channel;
  private static volatile Map<String, String> injected = Map.of();

  @BeforeAll
  static void start() throws Exception {
    long t0 = System.nanoTime();
    found = IcebergCodeKeys.discover();
    System.out.println("CodeLoadingSweepTest: " + found.size() + " keys through which Iceberg loads code ("
        + (System.nanoTime() - t0) / 1_000_000 + " ms):");
    found.forEach((key, where) -> System.out.println("  " + key + "  <- " + where));
    s3 = LoopbackCatalog.start("test-sweep-s3", ex -> {
      ex.sendResponseHeaders(404, -1);
      ex.close();
    });
    catalog = LoopbackCatalog.start("test-sweep-catalog", ex -> {
      String path = ex.getRequestURI().getPath();
      ex.getRequestBody().readAllBytes();
      if (path.endsWith("/v1/config")) {
        LoopbackCatalog.answer(ex, 200, config());
      } else if (path.endsWith("/metrics")) {
        ex.sendResponseHeaders(204, -1);
        ex.close();
      } else if (path.endsWith("/tables/t")) {
        LoopbackCatalog.answer(ex, 200, tableAnswer());
      } else {
        LoopbackCatalog.answer(ex, 404, "{\"error\":{\"message\":\"no such thing\",\"type\":\"NoSuchTableException\",\"code\":404}}");
      }
    });
  }

  @AfterAll
  static void stop() {
    for (HttpServer server : new HttpServer[] {catalog, s3}) {
      if (server != null) {
        server.stop(0);
      }
    }
  }

  private static Map<String, String> when(Channel c) {
    return channel == c ? injected : Map.of();
  }

  private static String config() {
    try {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("defaults", when(Channel.CONFIG_DEFAULTS));
      body.put("overrides", when(Channel.CONFIG_OVERRIDES));
      return JSON.writeValueAsString(body);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static String tableAnswer() {
    try {
      Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
      TableMetadata metadata = TableMetadata.newTableMetadata(
          schema, PartitionSpec.unpartitioned(), LOCATION, when(Channel.METADATA_PROPERTIES));
      Map<String, Object> storage = new LinkedHashMap<>();
      storage.put("prefix", LOCATION);
      Map<String, String> vended = new TreeMap<>(when(Channel.STORAGE_CREDENTIALS));
      vended.put("s3.access-key-id", "vended-key"); // a real answer vends a credential with its keys
      vended.put("s3.secret-access-key", "vended-secret");
      storage.put("config", vended);
      return "{\"metadata-location\":\"" + LOCATION + "/metadata/v1.metadata.json\",\"metadata\":"
          + TableMetadataParser.toJson(metadata) + ",\"config\":" + JSON.writeValueAsString(when(Channel.TABLE_CONFIG))
          + (channel == Channel.STORAGE_CREDENTIALS ? ",\"storage-credentials\":[" + JSON.writeValueAsString(storage) + "]" : "")
          + "}";
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** The catalog properties a user of the shim sets (S3FileIO on a loopback S3, the shim's clients), plus {@code extra}. */
  private static Map<String, String> userProperties(Map<String, String> extra) {
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(catalog, ""));
    props.put("io-impl", S3FileIO.class.getName());
    props.put("s3.client-factory-impl", RefreshingS3ClientFactory.class.getName());
    props.put("s3.endpoint", LoopbackCatalog.uri(s3, ""));
    props.put("s3.path-style-access", "true");
    props.put("s3.access-key-id", "user-key");
    props.put("s3.secret-access-key", "user-secret");
    props.put("client.region", "us-east-1");
    props.put("token", "user-token");
    props.putAll(extra);
    return props;
  }

  /** Each key valued with the marker's name. */
  private static Map<String, String> marked(Set<String> keys) {
    Map<String, String> out = new TreeMap<>();
    keys.forEach(k -> out.put(k, MARKER));
    return out;
  }

  /**
   * Initialises {@code catalog} with {@code props} and takes the table through the operations that
   * build what a key names: load (its FileIO), a file read, scan planning (and its metrics report),
   * the location provider, a commit. Returns the steps that failed ("step: exception"), so a run
   * that stopped early is seen.
   */
  private static List<String> exercise(Supplier<Catalog> make, Map<String, String> props) {
    List<String> failed = new ArrayList<>();
    Catalog c = make.get();
    try {
      if (!step(failed, "initialize", () -> c.initialize("sweep", props))) {
        return failed;
      }
      Table[] table = new Table[1];
      if (!step(failed, "loadTable", () -> table[0] = c.loadTable(TABLE))) {
        return failed;
      }
      Table t = table[0];
      step(failed, "read", () -> t.io().newInputFile(LOCATION + "/data/f.parquet").exists());
      step(failed, "scan", () -> {
        try (CloseableIterable<FileScanTask> tasks = t.newScan().planFiles()) {
          tasks.forEach(task -> { });
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      step(failed, "locationProvider", () -> t.locationProvider().newDataLocation("f.parquet"));
      step(failed, "commit", () -> t.updateProperties().set("sweep", "1").commit());
    } finally {
      step(failed, "close", () -> {
        try {
          ((Closeable) c).close();
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
    }
    return failed;
  }

  private static boolean step(List<String> failed, String name, Runnable r) {
    try {
      r.run();
      return true;
    } catch (RuntimeException | LinkageError e) {
      failed.add(name + ": " + String.valueOf(e).lines().findFirst().orElse(""));
      return false;
    }
  }

  private static int markerUses() {
    return CodeMarker.Log.INITIALISED.get() + CodeMarker.Log.INSTANCES.get();
  }

  @Test
  @Order(1)
  void testDiscoveryFindsTheKnownLoaders() {
    for (String known : new String[] {"io-impl", "client.factory", "s3.client-factory-impl", "metrics-reporter-impl",
        "write.location-provider.impl", "client.credentials-provider", "catalog-impl", "encryption.kms-impl"}) {
      assertTrue(found.containsKey(known), "discovery missed " + known + ": found only " + found.keySet());
    }
    assertTrue(found.size() >= 20, "discovery found too few keys: " + found.keySet());
  }

  @Test
  @Order(2)
  void testNoServerChannelLoadsCodeThroughTheShim() {
    Map<String, List<String>> stopped = new TreeMap<>();
    Set<String> suspects = new TreeSet<>(); // keys that stopped a run alone: each alone first in the next channel
    for (Channel c : Channel.values()) {
      List<String> rest = new ArrayList<>(found.keySet());
      rest.removeAll(suspects);
      for (String key : suspects) {
        sweep(c, List.of(key), stopped);
      }
      sweep(c, rest, stopped);
      stopped.keySet().forEach(run -> suspects.add(run.substring(run.indexOf(' ') + 1)));
    }
    channel = null;
    // Again once every run is over: a class a background thread would load late is seen too.
    assertEquals(0, markerUses(), "the shim's Iceberg loaded the server's class\n" + CodeMarker.Log.firstUse());
    stopped.forEach((run, failed) -> System.out.println("CodeLoadingSweepTest: " + run + " failed at " + failed));
    // A key that stops the load would hide what comes after it: only a key a server may set (and
    // Iceberg parses, as rest-page-size) may do that; a dropped key never does.
    stopped.forEach((run, failed) -> {
      String key = run.substring(run.indexOf(' ') + 1);
      boolean config = run.startsWith("CONFIG");
      assertTrue(io.catalogext.shim.config.TrustRules.serverMaySet(key, config)
              || failed.stream().noneMatch(f -> f.startsWith("initialize") || f.startsWith("loadTable")),
          run + " stopped before the table was loaded: " + failed);
    });
  }

  /**
   * Injects {@code keys} into {@code c} at once; where a step fails (one key's value may stop what
   * another key would build), splits the keys in halves and sweeps each, down to single keys, whose
   * failures are kept in {@code stopped}.
   */
  private static void sweep(Channel c, List<String> keys, Map<String, List<String>> stopped) {
    channel = c;
    injected = marked(Set.copyOf(keys));
    List<String> failed = exercise(ExtRESTCatalog::new, userProperties(Map.of()));
    assertEquals(0, markerUses(), c + " with " + (keys.size() == 1 ? keys.get(0) : keys.size() + " keys")
        + ": the shim's Iceberg loaded the server's class\n" + CodeMarker.Log.firstUse());
    if (failed.isEmpty()) {
      return;
    }
    if (keys.size() == 1) {
      stopped.put(c + " " + keys.get(0), failed);
      return;
    }
    sweep(c, keys.subList(0, keys.size() / 2), stopped);
    sweep(c, keys.subList(keys.size() / 2, keys.size()), stopped);
  }

  @Test
  @Order(3)
  void testTheUserSettingTheKeysDoesLoadTheMarker() {
    Set<String> loading = new TreeSet<>();
    channel = null;
    for (String key : found.keySet()) {
      int before = markerUses();
      exercise(ExtRESTCatalog::new, userProperties(Map.of(key, MARKER)));
      if (markerUses() == before) {
        // The user without the shim's S3 clients nor static keys: Iceberg's own client factory and credentials chain.
        Map<String, String> plainS3 = userProperties(Map.of(key, MARKER));
        for (String k : new String[] {"s3.client-factory-impl", "s3.access-key-id", "s3.secret-access-key"}) {
          if (!k.equals(key)) {
            plainS3.remove(k);
          }
        }
        exercise(ExtRESTCatalog::new, plainS3);
      }
      if (markerUses() > before) {
        loading.add(key);
      }
    }
    System.out.println("CodeLoadingSweepTest: keys that load the marker when the user sets them: " + loading);
    for (String known : new String[] {"io-impl", "metrics-reporter-impl", "s3.client-factory-impl",
        "rest.client.tls.configurer-impl"}) {
      assertTrue(loading.contains(known), "the user's " + known + " did not load the marker: " + loading);
    }
  }

  @Test
  @Order(4)
  void testPlainIcebergLoadsTheMarkerFromServerChannels() {
    Set<Channel> loading = new TreeSet<>();
    for (Channel c : Channel.values()) {
      channel = c;
      injected = marked(found.keySet());
      int before = markerUses();
      exercise(RESTCatalog::new, userProperties(Map.of()));
      if (markerUses() > before) {
        loading.add(c);
      }
    }
    channel = null;
    System.out.println("CodeLoadingSweepTest: channels through which plain Iceberg loads the marker: " + loading);
    assertTrue(loading.containsAll(Set.of(Channel.CONFIG_DEFAULTS, Channel.CONFIG_OVERRIDES, Channel.TABLE_CONFIG,
        Channel.METADATA_PROPERTIES)), "a channel without the shim did not load the marker: " + loading);
  }
}
