package io.catalogext.shim.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What a server says about the catalog's HTTP client settings and the S3 client factory is not
 * followed: the user's values stay, and each ignored key is one warning naming the key and the
 * catalog's origin, never the value (a proxy password may be one).
 */
public class UserOnlySettingsTest {
  @Test
  void testServerValuesAreDroppedWithOneLineNamingKeyAndOriginOnly() {
    UserOnlySettings settings = UserOnlySettings.fromUserProperties("lake", "HTTP://Catalog.Example:8181/api",
        Map.of("rest.client.proxy.hostname", "proxy.user.example", "rest.client.socket-timeout-ms", "60000",
            "credential", "id:user-secret"));
    Map<String, String> merged = new LinkedHashMap<>();
    merged.put("uri", "http://catalog.example:8181/api");
    merged.put("rest.client.proxy.hostname", "evil.example");
    merged.put("rest.client.proxy.password", "server-secret");
    merged.put("rest.client.socket-timeout-ms", "60000"); // the user's own value: no warning
    merged.put("s3.client-factory-impl", "org.example.ServerFactory");
    Map<String, String> wire = settings.enforce("/v1/config overrides", merged);
    assertEquals("proxy.user.example", wire.get("rest.client.proxy.hostname"), "the user's proxy stays");
    assertTrue(!wire.containsKey("rest.client.proxy.password") && !wire.containsKey("s3.client-factory-impl"), wire.toString());
    assertEquals("http://catalog.example:8181/api", wire.get("uri"), "everything else passes");
    settings.enforce("/v1/config overrides", merged); // once per key and source, not per client

    List<String> lines = settings.warnings();
    assertEquals(3, lines.size(), String.join("\n", lines));
    for (String key : List.of("rest.client.proxy.hostname", "rest.client.proxy.password", "s3.client-factory-impl")) {
      assertEquals(1, lines.stream().filter(l -> l.contains(" " + key + " ")).count(), key + ": " + lines);
    }
    for (String line : lines) {
      assertTrue(line.contains("from /v1/config overrides (http://catalog.example:8181)") && line.contains("catalog lake")
          && !line.contains("\n"), line);
      assertTrue(!line.contains("server-secret") && !line.contains("evil.example") && !line.contains("ServerFactory")
          && !line.contains("user-secret"), "a value in the log: " + line);
    }
  }

  @Test
  void testATableConfigGetsTheShimFactoryUnlessTheUserChoseOne() {
    Map<String, String> table = Map.of("s3.client-factory-impl", "org.example.ServerFactory", "s3.endpoint", "http://s3:9000");
    Map<String, String> none = UserOnlySettings.fromUserProperties("c", "http://c:1", Map.of()).forFileIo("a table answer's config", table);
    assertEquals(UserOnlySettings.SHIM_S3_CLIENT_FACTORY, none.get("s3.client-factory-impl"));
    assertEquals("http://s3:9000", none.get("s3.endpoint"), "the catalog names its storage");
    Map<String, String> own = UserOnlySettings.fromUserProperties("c", "http://c:1", Map.of("s3.client-factory-impl", "user.Factory"))
        .forFileIo("a table answer's config", table);
    assertTrue(!own.containsKey("s3.client-factory-impl"), "the user's, from the catalog properties: " + own);
    Map<String, String> aws = UserOnlySettings.fromUserProperties("c", "http://c:1", Map.of("client.factory", "user.AwsFactory"))
        .forFileIo("a table answer's config", table);
    assertTrue(!aws.containsKey("s3.client-factory-impl"), "Iceberg's choice between the user's two settings: " + aws);
  }

  @Test
  void testATableConfigNamesNeitherTheFileIONorTheStores() {
    Map<String, String> table = Map.of("io-impl", "org.example.ServerFileIO", "catalog-ext.stores", "s3,gcs",
        "s3.endpoint", "http://s3:9000");
    UserOnlySettings user = UserOnlySettings.fromUserProperties("c", "http://c:1",
        Map.of("io-impl", "io.catalogext.shim.RefreshingResolvingFileIO", "catalog-ext.stores", "adls"));
    Map<String, String> config = user.forFileIo("a table answer's config", table);
    assertTrue(!config.containsKey("io-impl") && !config.containsKey("catalog-ext.stores"),
        "the user's, from the catalog properties: " + config);
    assertEquals("http://s3:9000", config.get("s3.endpoint"));
    assertEquals(2, user.warnings().size(), String.join("\n", user.warnings()));
    Map<String, String> none = UserOnlySettings.fromUserProperties("c", "http://c:1", Map.of()).forFileIo("a table answer's config", table);
    assertTrue(!none.containsKey("io-impl") && !none.containsKey("catalog-ext.stores"), "Iceberg's default then: " + none);
  }
}
