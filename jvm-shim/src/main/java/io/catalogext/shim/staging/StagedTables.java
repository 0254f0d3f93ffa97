package io.catalogext.shim.staging;

import io.catalogext.shim.spark.SparkCompat;
import io.catalogext.shim.util.Json;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.NullOrder;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.Term;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.spark.SparkCatalog;
import org.apache.iceberg.spark.SparkSchemaUtil;
import org.apache.iceberg.spark.source.StagedSparkTable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Staged tables for Python ({@code pyspark_catalog_ext.staging.staged}): an Iceberg create or replace
 * {@link Transaction} from the Spark catalog's own Iceberg catalog (so commits go through the
 * shim's request funnel and its commit guard, and the staged table's FileIO gets refreshing
 * credentials), appended to through Spark's DataSource V2 write path any number of times, then
 * committed in one REST commit or aborted (deleting exactly the files it wrote).
 *
 * <p>All arguments and results cross Py4J as JSON strings or plain JVM objects.
 */
public final class StagedTables {
  private StagedTables() {}

  /**
   * Stages a table. {@code optionsJson}: catalog, namespace (list), name, mode
   * (create|replace|create_or_replace), partition / sort (lists of {transform, column, arg,
   * direction, nulls}), properties, location.
   */
  public static Staged stage(SparkSession spark, StructType sparkSchema, String optionsJson) {
    Options opts = Options.parse(optionsJson); // bad options fail before Spark or the catalog is asked
    CatalogPlugin plugin = spark.sessionState().catalogManager().catalog(opts.catalog);
    if (!(plugin instanceof SparkCatalog)) {
      throw new IllegalArgumentException(
          "Spark catalog '" + opts.catalog + "' is not an Iceberg SparkCatalog; stage tables of a catalog set to"
              + " org.apache.iceberg.spark.SparkCatalog");
    }
    SparkCatalog sparkCatalog = (SparkCatalog) plugin;
    Catalog iceberg = sparkCatalog.icebergCatalog();
    TableIdentifier ident = opts.ident();

    // Field ids from 1, as Iceberg assigns them at create time anyway: SeaweedFS 4.48 rejects a
    // partition or sort field whose source-id is 0 (which SparkSchemaUtil.convert produces).
    Schema schema = TypeUtil.assignIncreasingFreshIds(SparkSchemaUtil.convert(sparkSchema));
    Catalog.TableBuilder builder =
        iceberg
            .buildTable(ident, schema)
            .withPartitionSpec(partitionSpec(schema, opts.partition))
            .withSortOrder(sortOrder(schema, opts.sort))
            .withProperties(opts.properties);
    if (opts.location != null) {
      builder = builder.withLocation(opts.location);
    }
    Transaction tx;
    switch (opts.mode) {
      case "create":
        tx = builder.createTransaction();
        break;
      case "replace":
        tx = builder.replaceTransaction();
        break;
      default: // "create_or_replace": Options.parse accepts nothing else
        tx = builder.createOrReplaceTransaction();
    }
    return new Staged(spark, sparkCatalog, opts.namespace, ident, tx, opts.mode);
  }

  /** The options of {@link #stage}, read and checked without Spark (one-line errors that say the fix). */
  static final class Options {
    static final List<String> MODES = List.of("create", "replace", "create_or_replace");
    static final List<String> TRANSFORMS = List.of("identity", "year", "month", "day", "hour", "bucket", "truncate");

    final String catalog;
    final List<String> namespace;
    final String name;
    final String mode;
    final JsonNode partition;
    final JsonNode sort;
    final Map<String, String> properties;
    final String location;

    private Options(JsonNode opts) {
      this.catalog = required(opts, "catalog", "the Spark catalog's name");
      List<String> levels = new ArrayList<>();
      opts.path("namespace").forEach(n -> levels.add(n.asText()));
      this.namespace = List.copyOf(levels);
      this.name = required(opts, "name", "the table's name");
      this.mode = opts.path("mode").asText("create");
      if (!MODES.contains(mode)) {
        throw new IllegalArgumentException("unknown staging mode '" + mode + "': use create, replace or create_or_replace");
      }
      this.partition = fields(opts.path("partition"), "partition");
      this.sort = fields(opts.path("sort"), "sort");
      this.properties = Json.stringMap(opts.path("properties"));
      this.location = opts.hasNonNull("location") ? opts.get("location").asText() : null;
    }

    /** @throws IllegalArgumentException one line naming the bad option and what it accepts */
    static Options parse(String optionsJson) {
      JsonNode opts = Json.read(optionsJson);
      if (opts == null || !opts.isObject()) {
        throw new IllegalArgumentException("staging options must be a JSON object with catalog, namespace, name and mode");
      }
      return new Options(opts);
    }

    TableIdentifier ident() {
      return TableIdentifier.of(Namespace.of(namespace.toArray(new String[0])), name);
    }

    private static String required(JsonNode opts, String key, String what) {
      String value = opts.path(key).asText("");
      if (value.isEmpty()) {
        throw new IllegalArgumentException("staging options need '" + key + "' (" + what + ")");
      }
      return value;
    }

    /** A partition or sort list whose every transform is known and whose bucket/truncate has a width. */
    private static JsonNode fields(JsonNode fields, String what) {
      for (JsonNode f : fields) {
        String transform = f.path("transform").asText("identity");
        if (!TRANSFORMS.contains(transform)) {
          throw new IllegalArgumentException("unknown " + what + " transform '" + transform
              + "': use identity, year, month, day, hour, bucket or truncate");
        }
        if (f.path("column").asText("").isEmpty()) {
          throw new IllegalArgumentException(what + " field " + f + " names no column: give each a 'column'");
        }
        if ((transform.equals("bucket") || transform.equals("truncate")) && f.path("arg").asInt(0) <= 0) {
          throw new IllegalArgumentException(what + " transform " + transform + " of '" + f.path("column").asText()
              + "' needs a positive 'arg', e.g. " + transform + "(16, " + f.path("column").asText() + ")");
        }
        if (what.equals("sort")) {
          String direction = f.path("direction").asText("asc").toLowerCase(java.util.Locale.ROOT);
          String nulls = f.path("nulls").asText("first").toLowerCase(java.util.Locale.ROOT);
          if (!direction.equals("asc") && !direction.equals("desc")) {
            throw new IllegalArgumentException("sort direction '" + direction + "' of '" + f.path("column").asText()
                + "': use asc or desc");
          }
          if (!nulls.equals("first") && !nulls.equals("last")) {
            throw new IllegalArgumentException("sort nulls '" + nulls + "' of '" + f.path("column").asText()
                + "': use first or last");
          }
        }
      }
      return fields;
    }
  }

  /** A partition spec for {@code schema} from checked {@link Options#partition} fields. */
  static PartitionSpec partitionSpec(Schema schema, JsonNode fields) {
    if (!fields.isArray() || fields.size() == 0) {
      return PartitionSpec.unpartitioned();
    }
    PartitionSpec.Builder b = PartitionSpec.builderFor(schema);
    for (JsonNode f : fields) {
      String col = column(schema, f, "partition");
      int arg = f.path("arg").asInt(0);
      switch (f.path("transform").asText("identity")) {
        case "identity":
          b.identity(col);
          break;
        case "year":
          b.year(col);
          break;
        case "month":
          b.month(col);
          break;
        case "day":
          b.day(col);
          break;
        case "hour":
          b.hour(col);
          break;
        case "bucket":
          b.bucket(col, arg);
          break;
        case "truncate":
          b.truncate(col, arg);
          break;
        default:
          throw new IllegalArgumentException("unknown partition transform '" + f.path("transform").asText() + "'");
      }
    }
    return b.build();
  }

  /** A sort order for {@code schema} from checked {@link Options#sort} fields. */
  static SortOrder sortOrder(Schema schema, JsonNode fields) {
    if (!fields.isArray() || fields.size() == 0) {
      return SortOrder.unsorted();
    }
    SortOrder.Builder b = SortOrder.builderFor(schema);
    for (JsonNode f : fields) {
      String col = column(schema, f, "sort");
      int arg = f.path("arg").asInt(0);
      Term term;
      switch (f.path("transform").asText("identity")) {
        case "identity":
          term = Expressions.ref(col);
          break;
        case "year":
          term = Expressions.year(col);
          break;
        case "month":
          term = Expressions.month(col);
          break;
        case "day":
          term = Expressions.day(col);
          break;
        case "hour":
          term = Expressions.hour(col);
          break;
        case "bucket":
          term = Expressions.bucket(col, arg);
          break;
        case "truncate":
          term = Expressions.truncate(col, arg);
          break;
        default:
          throw new IllegalArgumentException("unknown sort transform '" + f.path("transform").asText() + "'");
      }
      boolean desc = "desc".equalsIgnoreCase(f.path("direction").asText("asc"));
      String nulls = f.path("nulls").asText(desc ? "last" : "first");
      NullOrder nullOrder = "last".equalsIgnoreCase(nulls) ? NullOrder.NULLS_LAST : NullOrder.NULLS_FIRST;
      if (desc) {
        b.desc(term, nullOrder);
      } else {
        b.asc(term, nullOrder);
      }
    }
    return b.build();
  }

  /** The field's column, which must be in {@code schema} (else one line listing the columns). */
  private static String column(Schema schema, JsonNode f, String what) {
    String col = f.path("column").asText();
    if (schema.findField(col) == null) {
      List<String> names = new ArrayList<>();
      schema.columns().forEach(c -> names.add(c.name()));
      throw new IllegalArgumentException(what + " column '" + col + "' is not in the table's schema; columns: "
          + String.join(", ", names));
    }
    return col;
  }

  /** One staged table: write, then commit or abort, once. Thread-safe. */
  public static final class Staged {
    private final SparkSession spark;
    private final SparkCatalog catalog;
    private final List<String> namespace;
    private final TableIdentifier ident;
    private final Transaction tx;
    private final String mode;
    private final Set<Long> baseSnapshotIds = new HashSet<>();
    private final String uuid;
    private String state = "staged"; // staged | committed | aborted | rejected | unknown
    private Set<String> pendingFiles;

    Staged(SparkSession spark, SparkCatalog catalog, List<String> namespace, TableIdentifier ident,
        Transaction tx, String mode) {
      this.spark = spark;
      this.catalog = catalog;
      this.namespace = namespace;
      this.ident = ident;
      this.tx = tx;
      this.mode = mode;
      for (Snapshot s : tx.table().snapshots()) {
        baseSnapshotIds.add(s.snapshotId());
      }
      this.uuid = tx.table().uuid().toString();
    }

    /** Appends {@code df} (columns by name) through Spark's Iceberg writer; one snapshot. */
    public synchronized String write(Dataset<Row> df) {
      requireState("write to");
      StagedSparkTable table = new StagedSparkTable(tx);
      // With the catalog and identifier, Spark can resolve Iceberg's transform functions (bucket,
      // days, ...) for the write distribution and ordering the table asks for.
      Identifier sparkIdent = Identifier.of(namespace.toArray(new String[0]), ident.name());
      // The three-argument create (no options) is the one every Spark from 3.5 to 4.1 has.
      DataSourceV2Relation relation =
          DataSourceV2Relation.create(table, Option.apply((CatalogPlugin) catalog), Option.apply(sparkIdent));
      AppendData append =
          AppendData.byName(relation, df.queryExecution().analyzed(), scala.collection.immutable.Map$.MODULE$.<String, String>empty());
      SparkCompat.run(spark, append); // commands run eagerly: the write happens here
      Snapshot snap = tx.table().currentSnapshot();
      ObjectNode out = Json.object();
      if (snap != null && !baseSnapshotIds.contains(snap.snapshotId())) {
        out.put("snapshot_id", snap.snapshotId());
        out.put("added_records", Long.parseLong(snap.summary().getOrDefault("added-records", "0")));
        out.put("added_files", Long.parseLong(snap.summary().getOrDefault("added-data-files", "0")));
      }
      return Json.write(out);
    }

    /** Publishes everything in one REST commit (assert-create / assert-table-uuid). */
    public synchronized String commit() {
      requireState("commit");
      List<Long> added = addedSnapshotIds();
      // Listed now: a rejected commit makes Iceberg delete its manifests, which list the data files.
      pendingFiles = writtenFiles();
      try {
        tx.commitTransaction();
      } catch (CommitFailedException e) {
        state = "rejected"; // known not to have landed: abort() may delete the files
        if (!"create".equals(mode)) {
          String now = currentUuid();
          if (now != null && !now.equals(uuid)) {
            throw new CommitFailedException(
                "table %s was replaced by another table since it was staged (UUID %s, staged against %s);"
                    + " nothing was published",
                ident, now, uuid);
          }
        }
        throw e;
      } catch (RuntimeException e) {
        state = "unknown"; // CommitStateUnknownException or anything else: keep every file
        throw e;
      }
      state = "committed";
      catalog.invalidateTable(Identifier.of(namespace.toArray(new String[0]), ident.name()));
      ObjectNode out = describeNode();
      ArrayNode ids = out.putArray("committed_snapshot_ids");
      added.forEach(ids::add);
      return Json.write(out);
    }

    /** Discards the transaction and deletes every file its writes produced. Idempotent. */
    public synchronized String abort() {
      ObjectNode out = Json.object();
      if ("aborted".equals(state) || "committed".equals(state)) {
        out.put("deleted", 0);
        return Json.write(out);
      }
      if ("unknown".equals(state)) {
        // The commit may have landed after all: never delete files it may reference.
        out.put("deleted", 0);
        out.put("kept_because", "the commit state is unknown; staged cleanup removes the files if it did not land");
        return Json.write(out);
      }
      Set<String> files = pendingFiles != null ? pendingFiles : writtenFiles();
      FileIO io = tx.table().io();
      int deleted = 0;
      List<String> failed = new ArrayList<>();
      for (String path : files) {
        try {
          io.deleteFile(path);
          deleted++;
        } catch (RuntimeException e) {
          failed.add(path);
        }
      }
      state = "aborted";
      out.put("deleted", deleted);
      ArrayNode f = out.putArray("not_deleted");
      failed.forEach(f::add);
      return Json.write(out);
    }

    /** JSON: table, mode, uuid, location, state, snapshot_ids written so far. */
    public synchronized String describe() {
      return Json.write(describeNode());
    }

    /** Every file the staged writes produced (data, delete, manifests, manifest lists). */
    public synchronized String writtenFilesJson() {
      ArrayNode out = Json.MAPPER.createArrayNode();
      writtenFiles().forEach(out::add);
      return Json.write(out);
    }

    private ObjectNode describeNode() {
      ObjectNode out = Json.object();
      out.put("table", ident.toString());
      out.put("mode", mode);
      out.put("uuid", uuid);
      out.put("location", tx.table().location());
      out.put("state", state);
      ArrayNode ids = out.putArray("snapshot_ids");
      addedSnapshotIds().forEach(ids::add);
      return out;
    }

    private List<Long> addedSnapshotIds() {
      List<Long> ids = new ArrayList<>();
      for (Snapshot s : tx.table().snapshots()) {
        if (!baseSnapshotIds.contains(s.snapshotId())) {
          ids.add(s.snapshotId());
        }
      }
      return ids;
    }

    // Snapshot.addedDataFiles/addedDeleteFiles are deprecated from Iceberg 1.11 on in favour of
    // SnapshotChanges, which 1.10 does not have: one source compiles against both only with these.
    @SuppressWarnings("deprecation")
    private Set<String> writtenFiles() {
      Set<String> files = new LinkedHashSet<>();
      FileIO io = tx.table().io();
      for (Snapshot s : tx.table().snapshots()) {
        if (baseSnapshotIds.contains(s.snapshotId())) {
          continue;
        }
        if (s.manifestListLocation() != null) {
          files.add(s.manifestListLocation());
        }
        try {
          for (ManifestFile m : s.allManifests(io)) {
            if (m.snapshotId() != null && m.snapshotId() == s.snapshotId()) {
              files.add(m.path());
            }
          }
          for (DataFile f : s.addedDataFiles(io)) {
            files.add(f.location());
          }
          for (DeleteFile f : s.addedDeleteFiles(io)) {
            files.add(f.location());
          }
        } catch (RuntimeException e) {
          // Manifests already gone (e.g. the catalog purged the location on a drop): what they
          // listed cannot be known from here; staged cleanup finds leftovers by listing.
        }
      }
      return files;
    }

    private String currentUuid() {
      try {
        catalog.invalidateTable(Identifier.of(namespace.toArray(new String[0]), ident.name()));
        Table t = catalog.icebergCatalog().loadTable(ident);
        return t.uuid().toString();
      } catch (NoSuchTableException e) {
        return "(dropped)";
      } catch (RuntimeException e) {
        return null;
      }
    }

    private void requireState(String what) {
      if (!"staged".equals(state)) {
        throw new IllegalStateException("cannot " + what + " staged table " + ident + ": it is already " + state);
      }
    }
  }

}
