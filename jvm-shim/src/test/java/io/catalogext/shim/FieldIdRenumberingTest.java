package io.catalogext.shim;

import java.util.Map;
import java.util.Set;
import org.apache.iceberg.NullOrder;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortDirection;
import org.apache.iceberg.SortField;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.ImmutableRegisterTableRequest;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/** Create requests get field ids from 1 with partition, sort and identifier references moved along. */
public class FieldIdRenumberingTest {
  /** Numbered from 0 as Spark's schema conversion does, with nested struct, list and map fields. */
  private static Schema sparkLikeSchema() {
    return new Schema(
        java.util.Arrays.asList(
            Types.NestedField.required(0, "id", Types.LongType.get()),
            Types.NestedField.optional(1, "name", Types.StringType.get()),
            Types.NestedField.optional(
                2,
                "point",
                Types.StructType.of(
                    Types.NestedField.optional(5, "x", Types.LongType.get()),
                    Types.NestedField.optional(6, "y", Types.DoubleType.get()))),
            Types.NestedField.optional(3, "tags", Types.ListType.ofOptional(7, Types.StringType.get())),
            Types.NestedField.optional(
                4, "attrs", Types.MapType.ofOptional(8, 9, Types.StringType.get(), Types.IntegerType.get()))),
        Set.of(0));
  }

  private static CreateTableRequest request(Schema schema, boolean stage) {
    PartitionSpec spec =
        PartitionSpec.builderFor(schema).bucket("id", 16).identity("name").truncate("point.x", 10).build();
    SortOrder order =
        SortOrder.builderFor(schema)
            .sortBy("id", SortDirection.DESC, NullOrder.NULLS_LAST)
            .sortBy("point.y", SortDirection.ASC, NullOrder.NULLS_FIRST)
            .build();
    CreateTableRequest.Builder builder =
        CreateTableRequest.builder()
            .withName("t")
            .withSchema(schema)
            .withPartitionSpec(spec)
            .withWriteOrder(order)
            .setProperties(new java.util.HashMap<>(Map.of("format-version", "2", "owner", "me")));
    if (stage) {
      builder.stageCreate();
    }
    return builder.build();
  }

  private static CreateTableRequest renumber(RESTRequest body) {
    RESTRequest out = FieldIdRenumbering.apply(body);
    Check.isTrue(out instanceof CreateTableRequest, "still a create request");
    return (CreateTableRequest) out;
  }

  public void testEveryIdIsAtLeastOneAndNamesKeepTheirTypes() {
    Schema before = sparkLikeSchema();
    CreateTableRequest out = renumber(request(before, false));
    Map<Integer, Types.NestedField> byId = TypeUtil.indexById(out.schema().asStruct());
    Check.equal(10, byId.size(), "field count");
    Check.isTrue(byId.keySet().stream().allMatch(id -> id >= 1), "ids >= 1: " + byId.keySet());
    for (String name : new String[] {"id", "name", "point.x", "tags.element", "attrs.key", "attrs.value"}) {
      Check.equal(before.findType(name), out.schema().findType(name), "type of " + name);
    }
    Check.isTrue(!FieldIdRenumbering.hasIdBelowOne(out), "no id below 1 left");
  }

  public void testPartitionSourceIdsFollowTheirColumns() {
    CreateTableRequest out = renumber(request(sparkLikeSchema(), false));
    Schema schema = out.schema();
    Check.equal(3, out.spec().fields().size(), "partition fields");
    String[] columns = {"id", "name", "point.x"};
    String[] transforms = {"bucket[16]", "identity", "truncate[10]"};
    for (int i = 0; i < columns.length; i++) {
      PartitionField field = out.spec().fields().get(i);
      Check.equal(columns[i], schema.findColumnName(field.sourceId()), "partition source " + i);
      Check.equal(transforms[i], field.transform().toString(), "transform " + i);
      Check.isTrue(field.sourceId() >= 1, "source id >= 1");
    }
  }

  public void testSortOrderAndIdentifierFieldsFollowTheirColumns() {
    CreateTableRequest out = renumber(request(sparkLikeSchema(), false));
    SortField first = out.writeOrder().fields().get(0);
    SortField second = out.writeOrder().fields().get(1);
    Check.equal("id", out.schema().findColumnName(first.sourceId()), "first sort column");
    Check.equal(SortDirection.DESC, first.direction(), "first direction");
    Check.equal("point.y", out.schema().findColumnName(second.sourceId()), "second sort column");
    Check.equal(NullOrder.NULLS_FIRST, second.nullOrder(), "second null order");
    Check.equal(Set.of("id"), out.schema().identifierFieldNames(), "identifier fields");
    Check.isTrue(out.schema().identifierFieldIds().stream().allMatch(id -> id >= 1), "identifier ids >= 1");
  }

  public void testNameLocationPropertiesAndStagingAreKept() {
    CreateTableRequest staged =
        CreateTableRequest.builder()
            .stageCreate()
            .withName("s")
            .withLocation("s3://bucket/ns/s")
            .withSchema(sparkLikeSchema())
            .setProperties(new java.util.HashMap<>(Map.of("owner", "me")))
            .build();
    CreateTableRequest out = renumber(staged);
    Check.isTrue(out.stageCreate(), "still a stage-create");
    Check.equal("s", out.name(), "name");
    Check.equal("s3://bucket/ns/s", out.location(), "location");
    Check.equal(Map.of("owner", "me"), out.properties(), "properties");
    Check.isTrue(!renumber(request(sparkLikeSchema(), false)).stageCreate(), "a plain create stays plain");
    Check.equal(null, renumber(request(sparkLikeSchema(), false)).location(), "no location invented");
  }

  public void testValidIdsAndOtherRequestsPassThroughUntouched() {
    CreateTableRequest valid = request(TypeUtil.assignIncreasingFreshIds(sparkLikeSchema()), true);
    Check.isTrue(FieldIdRenumbering.apply(valid) == valid, "a request with ids >= 1 is sent as built");
    RegisterTableRequest register =
        ImmutableRegisterTableRequest.builder().name("t").metadataLocation("s3://b/m.json").build();
    Check.isTrue(FieldIdRenumbering.apply(register) == register, "other requests pass through");
    Check.isTrue(FieldIdRenumbering.apply(null) == null, "no body passes through");
  }
}
