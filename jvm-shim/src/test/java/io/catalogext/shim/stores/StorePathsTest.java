package io.catalogext.shim.stores;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.apache.iceberg.io.StorageCredential;
import org.junit.jupiter.api.Test;

/** Which credential a path gets: the longest vended prefix it falls under, and none outside them. */
public class StorePathsTest {
  @Test
  void testAdlsLocationsAreTakenApartAsIcebergDoes() {
    StorePaths.AdlsPath p = StorePaths.adls("abfss://cont@Acct.dfs.core.windows.net/db/t/data/f.parquet");
    assertEquals("acct", p.account);
    assertEquals("cont", p.container);
    assertEquals("db/t/data/f.parquet", p.path);
    assertEquals(p.canonical(), StorePaths.adls("wasb://cont@acct.blob.core.windows.net/db/t/data/f.parquet").canonical(),
        "one spelling for every scheme and host form");
    assertThrows(IllegalArgumentException.class, () -> StorePaths.adls("s3://bucket/key"));
    assertFalse(StorePaths.isAdls("gs://bucket/key"));
  }

  @Test
  void testTheLongestPrefixWinsAndAPathUnderNoneGetsNone() {
    List<StorageCredential> vended = List.of(
        StorageCredential.create("gs://b/db/", Map.of("gcs.oauth2.token", "wide")),
        StorageCredential.create("gs://b/db/t/", Map.of("gcs.oauth2.token", "narrow")),
        StorageCredential.create("s3://b/db/", Map.of("s3.access-key-id", "AK")));
    PrefixTokens tokens = new PrefixTokens(Map.of(), vended, p -> p.startsWith("gs"), s -> s);
    assertEquals("gs://b/db/t/", tokens.prefixFor("gs://b/db/t/data/f.parquet"));
    assertEquals("gs://b/db/", tokens.prefixFor("gs://b/db/u/data/f.parquet"));
    assertNull(tokens.prefixFor("gs://other/db/t/f"), "a path under no vended prefix gets no token");
    assertEquals(List.of("gs://b/db/", "gs://b/db/t/"), List.copyOf(tokens.prefixes()), "another store's credential is not ours");
    assertEquals("", new PrefixTokens(Map.of(), List.of(), p -> true, s -> s).prefixFor("gs://any/x"),
        "no storage credentials: the table config's token");
  }
}
