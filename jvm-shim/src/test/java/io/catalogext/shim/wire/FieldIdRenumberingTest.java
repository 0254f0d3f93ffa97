package io.catalogext.shim.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.junit.jupiter.api.Test;

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
    assertTrue(out instanceof CreateTableRequest, "still a create request");
    return (CreateTableRequest) out;
  }

  @Test
  void testEveryIdIsAtLeastOneAndNamesKeepTheirTypes() {
    Schema before = sparkLikeSchema();
    CreateTableRequest out = renumber(request(before, false));
    Map<Integer, Types.NestedField> byId = TypeUtil.indexById(out.schema().asStruct());
    assertEquals(10, byId.size(), "field count");
    assertTrue(byId.keySet().stream().allMatch(id -> id >= 1), "ids >= 1: " + byId.keySet());
    for (String name : new String[] {"id", "name", "point.x", "tags.element", "attrs.key", "attrs.value"}) {
      assertEquals(before.findType(name), out.schema().findType(name), "type of " + name);
    }
    assertTrue(!FieldIdRenumbering.hasIdBelowOne(out), "no id below 1 left");
  }

  @Test
  void testPartitionSourceIdsFollowTheirColumns() {
    CreateTableRequest out = renumber(request(sparkLikeSchema(), false));
    Schema schema = out.schema();
    assertEquals(3, out.spec().fields().size(), "partition fields");
    String[] columns = {"id", "name", "point.x"};
    String[] transforms = {"bucket[16]", "identity", "truncate[10]"};
    for (int i = 0; i < columns.length; i++) {
      PartitionField field = out.spec().fields().get(i);
      assertEquals(columns[i], schema.findColumnName(field.sourceId()), "partition source " + i);
      assertEquals(transforms[i], field.transform().toString(), "transform " + i);
      assertTrue(field.sourceId() >= 1, "source id >= 1");
    }
  }

  @Test
  void testSortOrderAndIdentifierFieldsFollowTheirColumns() {
    CreateTableRequest out = renumber(request(sparkLikeSchema(), false));
    SortField first = out.writeOrder().fields().get(0);
    SortField second = out.writeOrder().fields().get(1);
    assertEquals("id", out.schema().findColumnName(first.sourceId()), "first sort column");
    assertEquals(SortDirection.DESC, first.direction(), "first direction");
    assertEquals("point.y", out.schema().findColumnName(second.sourceId()), "second sort column");
    assertEquals(NullOrder.NULLS_FIRST, second.nullOrder(), "second null order");
    assertEquals(Set.of("id"), out.schema().identifierFieldNames(), "identifier fields");
    assertTrue(out.schema().identifierFieldIds().stream().allMatch(id -> id >= 1), "identifier ids >= 1");
  }

  @Test
  void testNameLocationPropertiesAndStagingAreKept() {
    CreateTableRequest staged =
        CreateTableRequest.builder()
            .stageCreate()
            .withName("s")
            .withLocation("s3://bucket/ns/s")
            .withSchema(sparkLikeSchema())
            .setProperties(new java.util.HashMap<>(Map.of("owner", "me")))
            .build();
    CreateTableRequest out = renumber(staged);
    assertTrue(out.stageCreate(), "still a stage-create");
    assertEquals("s", out.name(), "name");
    assertEquals("s3://bucket/ns/s", out.location(), "location");
    assertEquals(Map.of("owner", "me"), out.properties(), "properties");
    assertTrue(!renumber(request(sparkLikeSchema(), false)).stageCreate(), "a plain create stays plain");
    assertEquals(null, renumber(request(sparkLikeSchema(), false)).location(), "no location invented");
  }

  @Test
  void testValidIdsAndOtherRequestsPassThroughUntouched() {
    CreateTableRequest valid = request(TypeUtil.assignIncreasingFreshIds(sparkLikeSchema()), true);
    assertTrue(FieldIdRenumbering.apply(valid) == valid, "a request with ids >= 1 is sent as built");
    RegisterTableRequest register =
        ImmutableRegisterTableRequest.builder().name("t").metadataLocation("s3://b/m.json").build();
    assertTrue(FieldIdRenumbering.apply(register) == register, "other requests pass through");
    assertTrue(FieldIdRenumbering.apply(null) == null, "no body passes through");
  }
}
