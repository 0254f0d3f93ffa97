package io.catalogext.shim.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;

/** The one table-path helper: what it accepts, what it refuses, and that build and parse agree. */
public class TablePathTest {
  @Test
  void testTablesTableAndRegisterPaths() {
    TablePath t = TablePath.parse("v1/wh/namespaces/db/tables/t1");
    assertEquals("v1/wh/", t.root, "root");
    assertEquals(List.of("db"), t.namespace, "namespace");
    assertEquals("t1", t.table, "table");
    assertTrue(t.isTable(), "one table");
    TablePath create = TablePath.parse("/v1/namespaces/db/tables?x=1");
    assertEquals("/v1/", create.root, "leading slash and query kept out");
    assertTrue(create.table == null && !create.isTable(), "a create names no table");
    assertTrue(TablePath.parse("v1/namespaces/db/register").table == null, "register");
  }

  @Test
  void testOtherPathsAreNotTablePaths() {
    for (String p : new String[] {"v1/namespaces/db/tables/t/credentials", "v1/namespaces/db/tables/t/metrics",
        "v1/namespaces/db", "v1/config", "v1/transactions/commit", "v1/namespaces/db/views/v", "v1/namespaces/db/register/x"}) {
      assertTrue(TablePath.parse(p) == null, p);
    }
  }

  @Test
  void testMultiLevelUnicodeAndReservedCharactersRoundTrip() {
    List<String> ns = List.of("a b", "ünï", "c/d");
    String name = "t%1.x";
    String path = TablePath.table("v1/p/", ns, name);
    assertTrue(path.contains("%1F"), "levels joined by the encoded 0x1F separator: " + path);
    TablePath back = TablePath.parse(path);
    assertEquals(ns, back.namespace, "namespace back");
    assertEquals(name, back.table, "name back");
    assertEquals("v1/p/", back.root, "root back");
    assertEquals("a b.ünï.c/d.t%1.x", back.displayName(), "display");
  }

  @Test
  void testAPrefixThatContainsTheWordNamespacesKeepsItsRoot() {
    TablePath t = TablePath.parse("v1/mynamespaces/namespaces/db/tables/t");
    assertEquals("v1/mynamespaces/", t.root, "root");
    assertEquals("t", t.table, "table");
  }

  @Test
  void testTransactionChangesMapToTheirTablePath() {
    String p = TablePath.forTransactionChange("v1/wh/transactions/commit", TableIdentifier.of(Namespace.of("db", "s"), "t"));
    assertEquals("v1/wh/namespaces/db%1Fs/tables/t", p, "change path");
    assertTrue(TablePath.forTransactionChange("v1/wh/namespaces/db/tables/t", TableIdentifier.of("db", "t")) == null,
        "not a transaction");
  }
}
