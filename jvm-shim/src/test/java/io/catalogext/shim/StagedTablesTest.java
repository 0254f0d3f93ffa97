package io.catalogext.shim;

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
    IllegalArgumentException e = Check.raises(IllegalArgumentException.class, () -> StagedTables.Options.parse(json));
    Check.isTrue(!e.getMessage().contains("\n"), "one line: " + e.getMessage());
    return e.getMessage();
  }

  public void testOptionsAreReadWithTheirDefaults() {
    StagedTables.Options o = StagedTables.Options.parse(
        options(",\"properties\":{\"format-version\":\"2\"},\"location\":\"s3://b/db/t\",\"mode\":\"replace\""));
    Check.equal("lake", o.catalog, "catalog");
    Check.equal(TableIdentifier.of(Namespace.of("db", "sub"), "t"), o.ident(), "identifier");
    Check.equal("replace", o.mode, "mode");
    Check.equal(Map.of("format-version", "2"), o.properties, "properties");
    Check.equal("s3://b/db/t", o.location, "location");
    StagedTables.Options plain = StagedTables.Options.parse(options(""));
    Check.equal("create", plain.mode, "mode defaults to create");
    Check.equal(null, plain.location, "no location: the catalog chooses");
    Check.equal(PartitionSpec.unpartitioned(), StagedTables.partitionSpec(SCHEMA, plain.partition), "unpartitioned");
    Check.equal(SortOrder.unsorted(), StagedTables.sortOrder(SCHEMA, plain.sort), "unsorted");
  }

  public void testBadModeAndMissingNamesAreRefusedWithTheFix() {
    String mode = refusal(options(",\"mode\":\"upsert\""));
    Check.isTrue(mode.contains("'upsert'") && mode.contains("create, replace or create_or_replace"), mode);
    Check.isTrue(refusal("{\"catalog\":\"lake\",\"namespace\":[\"db\"]}").contains("need 'name'"), "no name");
    Check.isTrue(refusal("{\"name\":\"t\"}").contains("need 'catalog'"), "no catalog");
    Check.isTrue(refusal("[1, 2]").contains("must be a JSON object"), "not an object");
    String malformed = refusal("{\"catalog\": \"secret-ish");
    Check.isTrue(malformed.startsWith("malformed JSON") && !malformed.contains("secret-ish"), "input not echoed: " + malformed);
  }

  public void testBadTransformsAreRefusedBeforeAnyCatalogIsAsked() {
    String unknown = refusal(options(",\"partition\":[{\"transform\":\"weeks\",\"column\":\"ts\"}]"));
    Check.isTrue(unknown.contains("unknown partition transform 'weeks'") && unknown.contains("bucket or truncate"), unknown);
    String sort = refusal(options(",\"sort\":[{\"transform\":\"minute\",\"column\":\"ts\"}]"));
    Check.isTrue(sort.contains("unknown sort transform 'minute'"), sort);
    String width = refusal(options(",\"partition\":[{\"transform\":\"bucket\",\"column\":\"id\"}]"));
    Check.isTrue(width.contains("needs a positive 'arg'") && width.contains("bucket(16, id)"), width);
    String noColumn = refusal(options(",\"partition\":[{\"transform\":\"day\"}]"));
    Check.isTrue(noColumn.contains("names no column"), noColumn);
    String direction = refusal(options(",\"sort\":[{\"column\":\"id\",\"direction\":\"sideways\"}]"));
    Check.isTrue(direction.contains("use asc or desc"), direction);
    String nulls = refusal(options(",\"sort\":[{\"column\":\"id\",\"nulls\":\"middle\"}]"));
    Check.isTrue(nulls.contains("use first or last"), nulls);
  }

  public void testPartitionSpecAndSortOrderFollowTheOptions() {
    StagedTables.Options o = StagedTables.Options.parse(options(
        ",\"partition\":[{\"transform\":\"day\",\"column\":\"ts\"},{\"transform\":\"bucket\",\"column\":\"id\",\"arg\":16},"
            + "{\"column\":\"region\"}],"
            + "\"sort\":[{\"column\":\"id\",\"direction\":\"desc\"},{\"transform\":\"truncate\",\"column\":\"region\",\"arg\":4}]"));
    PartitionSpec spec = StagedTables.partitionSpec(SCHEMA, o.partition);
    Check.equal(
        PartitionSpec.builderFor(SCHEMA).day("ts").bucket("id", 16).identity("region").build().fields().toString(),
        spec.fields().toString(), "partition fields in order");
    SortOrder order = StagedTables.sortOrder(SCHEMA, o.sort);
    Check.equal(2, order.fields().size(), "two sort fields");
    Check.equal(SortDirection.DESC, order.fields().get(0).direction(), "desc");
    Check.equal(NullOrder.NULLS_LAST, order.fields().get(0).nullOrder(), "desc defaults to nulls last");
    Check.equal("truncate[4]", order.fields().get(1).transform().toString(), "truncate width");
    Check.equal(NullOrder.NULLS_FIRST, order.fields().get(1).nullOrder(), "asc defaults to nulls first");
  }

  public void testAColumnNotInTheSchemaIsNamedWithTheColumnsThatAre() {
    StagedTables.Options o = StagedTables.Options.parse(options(",\"partition\":[{\"transform\":\"day\",\"column\":\"when\"}]"));
    IllegalArgumentException e =
        Check.raises(IllegalArgumentException.class, () -> StagedTables.partitionSpec(SCHEMA, o.partition));
    Check.isTrue(e.getMessage().contains("partition column 'when'") && e.getMessage().contains("columns: id, ts, region"),
        e.getMessage());
  }

  public void testAnAbortedStagedTableRefusesWritesAndCommitsAndAbortsOnce() throws Exception {
    try (InMemoryCatalog catalog = new InMemoryCatalog()) {
      catalog.initialize("mem", Map.of());
      catalog.createNamespace(Namespace.of("db"));
      TableIdentifier ident = TableIdentifier.of("db", "t");
      Transaction tx = catalog.buildTable(ident, SCHEMA).createTransaction();
      StagedTables.Staged staged = new StagedTables.Staged(null, null, List.of("db"), ident, tx, "create");
      Check.isTrue(staged.describe().contains("\"state\":\"staged\""), staged.describe());
      Check.equal("{\"deleted\":0,\"not_deleted\":[]}", staged.abort(), "nothing written, nothing deleted");
      IllegalStateException commit = Check.raises(IllegalStateException.class, staged::commit);
      Check.equal("cannot commit staged table db.t: it is already aborted", commit.getMessage(), "commit refused");
      Check.raises(IllegalStateException.class, () -> staged.write(null));
      Check.equal("{\"deleted\":0}", staged.abort(), "a second abort is a no-op");
      Check.isTrue(!catalog.tableExists(ident), "nothing was published");
    }
  }
}
