package io.catalogext.shim.wire;

import java.util.Map;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.types.TypeUtil;

/**
 * Gives create and stage-create request bodies field ids from 1, moving the partition-spec and
 * sort-order source ids and the identifier fields (nested struct, list and map fields included)
 * with them.
 *
 * <p>Why: Spark's schema conversion numbers fields from 0, and SeaweedFS 4.48 rejects a partition
 * field whose {@code source-id} is 0 ("Malformed request: Invalid request body"), so {@code
 * PARTITIONED BY (bucket(16, id))} on the first column fails there.
 *
 * <p>How: with Iceberg's own create-time assignment ({@link TableMetadata#newTableMetadata}, which
 * every server applies to a new table anyway), so ids come out exactly as a server would assign
 * them, and the spec and sort order are re-bound by column name.
 *
 * <p>Only where needed, not always: a request whose ids are all already >= 1 is sent exactly as
 * Iceberg built it (the staging helpers' requests, or Java callers that chose their ids), so the
 * shim changes nothing that works; a request with an id below 1 can't be valid for a strict server
 * and is renumbered. Servers reassign ids at create time, so either way the table is the same.
 */
public final class FieldIdRenumbering {
  /** newTableMetadata needs a location; only the schema, spec and order are taken from it. */
  private static final String PLACEHOLDER_LOCATION = "catalog-ext://renumbering";

  private FieldIdRenumbering() {}

  /** {@code body} itself, or a create request with ids from 1 when it had an id below 1. */
  public static RESTRequest apply(RESTRequest body) {
    if (!(body instanceof CreateTableRequest)) {
      return body;
    }
    CreateTableRequest create = (CreateTableRequest) body;
    if (create.schema() == null || !hasIdBelowOne(create)) {
      return body;
    }
    return renumbered(create);
  }

  static boolean hasIdBelowOne(CreateTableRequest create) {
    return TypeUtil.indexById(create.schema().asStruct()).keySet().stream().anyMatch(id -> id < 1);
  }

  private static CreateTableRequest renumbered(CreateTableRequest create) {
    Map<String, String> properties = create.properties();
    TableMetadata fresh =
        TableMetadata.newTableMetadata(
            create.schema(),
            create.spec() != null ? create.spec() : PartitionSpec.unpartitioned(),
            create.writeOrder() != null ? create.writeOrder() : SortOrder.unsorted(),
            create.location() != null ? create.location() : PLACEHOLDER_LOCATION,
            properties);
    CreateTableRequest.Builder builder =
        CreateTableRequest.builder()
            .withName(create.name())
            .withSchema(fresh.schema())
            .withPartitionSpec(fresh.spec())
            .withWriteOrder(fresh.sortOrder())
            .setProperties(properties);
    if (create.location() != null) {
      builder.withLocation(create.location());
    }
    if (create.stageCreate()) {
      builder.stageCreate();
    }
    return builder.build();
  }
}
