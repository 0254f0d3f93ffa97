package io.catalogext.shim;

import java.util.List;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/** The one table-path helper: what it accepts, what it refuses, and that build and parse agree. */
public class TablePathTest {
  public void testTablesTableAndRegisterPaths() {
    TablePath t = TablePath.parse("v1/wh/namespaces/db/tables/t1");
    Check.equal("v1/wh/", t.root, "root");
    Check.equal(List.of("db"), t.namespace, "namespace");
    Check.equal("t1", t.table, "table");
    Check.isTrue(t.isTable(), "one table");
    TablePath create = TablePath.parse("/v1/namespaces/db/tables?x=1");
    Check.equal("/v1/", create.root, "leading slash and query kept out");
    Check.isTrue(create.table == null && !create.isTable(), "a create names no table");
    Check.isTrue(TablePath.parse("v1/namespaces/db/register").table == null, "register");
  }

  public void testOtherPathsAreNotTablePaths() {
    for (String p : new String[] {"v1/namespaces/db/tables/t/credentials", "v1/namespaces/db/tables/t/metrics",
        "v1/namespaces/db", "v1/config", "v1/transactions/commit", "v1/namespaces/db/views/v", "v1/namespaces/db/register/x"}) {
      Check.isTrue(TablePath.parse(p) == null, p);
    }
  }

  public void testMultiLevelUnicodeAndReservedCharactersRoundTrip() {
    List<String> ns = List.of("a b", "ünï", "c/d");
    String name = "t%1.x";
    String path = TablePath.table("v1/p/", ns, name);
    Check.isTrue(path.contains("%1F"), "levels joined by the encoded 0x1F separator: " + path);
    TablePath back = TablePath.parse(path);
    Check.equal(ns, back.namespace, "namespace back");
    Check.equal(name, back.table, "name back");
    Check.equal("v1/p/", back.root, "root back");
    Check.equal("a b.ünï.c/d.t%1.x", back.displayName(), "display");
  }

  public void testAPrefixThatContainsTheWordNamespacesKeepsItsRoot() {
    TablePath t = TablePath.parse("v1/mynamespaces/namespaces/db/tables/t");
    Check.equal("v1/mynamespaces/", t.root, "root");
    Check.equal("t", t.table, "table");
  }

  public void testTransactionChangesMapToTheirTablePath() {
    String p = TablePath.forTransactionChange("v1/wh/transactions/commit", TableIdentifier.of(Namespace.of("db", "s"), "t"));
    Check.equal("v1/wh/namespaces/db%1Fs/tables/t", p, "change path");
    Check.isTrue(TablePath.forTransactionChange("v1/wh/namespaces/db/tables/t", TableIdentifier.of("db", "t")) == null,
        "not a transaction");
  }
}
