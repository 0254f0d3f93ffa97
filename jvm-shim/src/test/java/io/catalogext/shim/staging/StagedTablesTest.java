package io.catalogext.shim.staging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.apache.iceberg.NullOrder;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortDirection;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.inmemory.InMemoryCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * {@link StagedTables} without a SparkSession: option parsing and its refusals, the partition spec
 * and sort order built from them, and a staged table's state refusals (over Iceberg's in-memory
 * catalog). Writing and committing go through Spark and are covered by tests/spark.
 */
public class StagedTablesTest {
  private static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "ts", Types.TimestampType.withZone()),
          Types.NestedField.optional(3, "region", Types.StringType.get()));

  private static String options(String extra) {
    return "{\"catalog\":\"lake\",\"namespace\":[\"db\",\"sub\"],\"name\":\"t\"" + extra + "}";
  }

  private static String refusal(String json) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> StagedTables.Options.parse(json));
    assertTrue(!e.getMessage().contains("\n"), "one line: " + e.getMessage());
    return e.getMessage();
  }

  @Test
  void testOptionsAreReadWithTheirDefaults() {
    StagedTables.Options o = StagedTables.Options.parse(
        options(",\"properties\":{\"format-version\":\"2\"},\"location\":\"s3://b/db/t\",\"mode\":\"replace\""));
    assertEquals("lake", o.catalog, "catalog");
    assertEquals(TableIdentifier.of(Namespace.of("db", "sub"), "t"), o.ident(), "identifier");
    assertEquals("replace", o.mode, "mode");
    assertEquals(Map.of("format-version", "2"), o.properties, "properties");
    assertEquals("s3://b/db/t", o.location, "location");
    StagedTables.Options plain = StagedTables.Options.parse(options(""));
    assertEquals("create", plain.mode, "mode defaults to create");
    assertEquals(null, plain.location, "no location: the catalog chooses");
    assertEquals(PartitionSpec.unpartitioned(), StagedTables.partitionSpec(SCHEMA, plain.partition), "unpartitioned");
    assertEquals(SortOrder.unsorted(), StagedTables.sortOrder(SCHEMA, plain.sort), "unsorted");
  }

  @Test
  void testBadModeAndMissingNamesAreRefusedWithTheFix() {
    String mode = refusal(options(",\"mode\":\"upsert\""));
    assertTrue(mode.contains("'upsert'") && mode.contains("create, replace or create_or_replace"), mode);
    assertTrue(refusal("{\"catalog\":\"lake\",\"namespace\":[\"db\"]}").contains("need 'name'"), "no name");
    assertTrue(refusal("{\"name\":\"t\"}").contains("need 'catalog'"), "no catalog");
    assertTrue(refusal("[1, 2]").contains("must be a JSON object"), "not an object");
    String malformed = refusal("{\"catalog\": \"secret-ish");
    assertTrue(malformed.startsWith("malformed JSON") && !malformed.contains("secret-ish"), "input not echoed: " + malformed);
  }

  @Test
  void testBadTransformsAreRefusedBeforeAnyCatalogIsAsked() {
    String unknown = refusal(options(",\"partition\":[{\"transform\":\"weeks\",\"column\":\"ts\"}]"));
    assertTrue(unknown.contains("unknown partition transform 'weeks'") && unknown.contains("bucket or truncate"), unknown);
    String sort = refusal(options(",\"sort\":[{\"transform\":\"minute\",\"column\":\"ts\"}]"));
    assertTrue(sort.contains("unknown sort transform 'minute'"), sort);
    String width = refusal(options(",\"partition\":[{\"transform\":\"bucket\",\"column\":\"id\"}]"));
    assertTrue(width.contains("needs a positive 'arg'") && width.contains("bucket(16, id)"), width);
    String noColumn = refusal(options(",\"partition\":[{\"transform\":\"day\"}]"));
    assertTrue(noColumn.contains("names no column"), noColumn);
    String direction = refusal(options(",\"sort\":[{\"column\":\"id\",\"direction\":\"sideways\"}]"));
    assertTrue(direction.contains("use asc or desc"), direction);
    String nulls = refusal(options(",\"sort\":[{\"column\":\"id\",\"nulls\":\"middle\"}]"));
    assertTrue(nulls.contains("use first or last"), nulls);
  }

  @Test
  void testPartitionSpecAndSortOrderFollowTheOptions() {
    StagedTables.Options o = StagedTables.Options.parse(options(
        ",\"partition\":[{\"transform\":\"day\",\"column\":\"ts\"},{\"transform\":\"bucket\",\"column\":\"id\",\"arg\":16},"
            + "{\"column\":\"region\"}],"
            + "\"sort\":[{\"column\":\"id\",\"direction\":\"desc\"},{\"transform\":\"truncate\",\"column\":\"region\",\"arg\":4}]"));
    PartitionSpec spec = StagedTables.partitionSpec(SCHEMA, o.partition);
    assertEquals(
        PartitionSpec.builderFor(SCHEMA).day("ts").bucket("id", 16).identity("region").build().fields().toString(),
        spec.fields().toString(), "partition fields in order");
    SortOrder order = StagedTables.sortOrder(SCHEMA, o.sort);
    assertEquals(2, order.fields().size(), "two sort fields");
    assertEquals(SortDirection.DESC, order.fields().get(0).direction(), "desc");
    assertEquals(NullOrder.NULLS_LAST, order.fields().get(0).nullOrder(), "desc defaults to nulls last");
    assertEquals("truncate[4]", order.fields().get(1).transform().toString(), "truncate width");
    assertEquals(NullOrder.NULLS_FIRST, order.fields().get(1).nullOrder(), "asc defaults to nulls first");
  }

  @Test
  void testAColumnNotInTheSchemaIsNamedWithTheColumnsThatAre() {
    StagedTables.Options o = StagedTables.Options.parse(options(",\"partition\":[{\"transform\":\"day\",\"column\":\"when\"}]"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> StagedTables.partitionSpec(SCHEMA, o.partition));
    assertTrue(e.getMessage().contains("partition column 'when'") && e.getMessage().contains("columns: id, ts, region"),
        e.getMessage());
  }

  @Test
  void testAnAbortedStagedTableRefusesWritesAndCommitsAndAbortsOnce() throws Exception {
    try (InMemoryCatalog catalog = new InMemoryCatalog()) {
      catalog.initialize("mem", Map.of());
      catalog.createNamespace(Namespace.of("db"));
      TableIdentifier ident = TableIdentifier.of("db", "t");
      Transaction tx = catalog.buildTable(ident, SCHEMA).createTransaction();
      StagedTables.Staged staged = new StagedTables.Staged(null, null, List.of("db"), ident, tx, "create");
      assertTrue(staged.describe().contains("\"state\":\"staged\""), staged.describe());
      assertEquals("{\"deleted\":0,\"not_deleted\":[]}", staged.abort(), "nothing written, nothing deleted");
      IllegalStateException commit = assertThrows(IllegalStateException.class, staged::commit);
      assertEquals("cannot commit staged table db.t: it is already aborted", commit.getMessage(), "commit refused");
      assertThrows(IllegalStateException.class, () -> staged.write(null));
      assertEquals("{\"deleted\":0}", staged.abort(), "a second abort is a no-op");
      assertTrue(!catalog.tableExists(ident), "nothing was published");
    }
  }
}
