package io.catalogext.shim.commit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.RESTException;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.responses.CreateNamespaceResponse;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.GetNamespaceResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * {@link CommitGuard#mutate} on creates, drops and renames whose answer is lost after the catalog
 * applied them: looked at ({@link MutationLook}), never repeated blindly unless the catalog
 * de-duplicates the operation. Scripted attempts and a scripted catalog state; zero backoff.
 */
public class MutationLookTest {
  private static final String ROOT = "v1/wh/";
  private static final Schema SCHEMA = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  private final CommitGuard guard = new CommitGuard();
  private final List<Map<String, String>> sent = new ArrayList<>();
  private final List<String> reads = new ArrayList<>();
  /** What the catalog shows now: path -> namespace properties or table metadata. */
  private final Map<String, Object> catalog = new HashMap<>();

  public MutationLookTest() {
    guard.configure(Map.of("catalog-ext.commit.base-delay-ms", "0", "catalog-ext.commit.max-delay-ms", "0"));
  }

  @Test
  void testNamespaceCreateWhoseAnswerWasLostIsOneSuccess() {
    catalog.put(ROOT + "namespaces/db", Map.of("owner", "me"));
    Object answer = send("POST", ROOT + "namespaces", createNamespace(Map.of("owner", "me")), "lost");
    assertEquals(1, sent.size(), "not repeated: the namespace is there with the properties we sent");
    assertEquals(List.of(ROOT + "namespaces/db"), reads);
    assertEquals(Map.of("owner", "me"), ((CreateNamespaceResponse) answer).properties());
  }

  @Test
  void testPolarisAdvertisesALifetimeButANamespaceCreateIsStillLookedAt() {
    guard.setIdempotencyKeyLifetime("PT5M"); // Polaris 1.7.0: one lifetime, no replay of namespace creates
    catalog.put(ROOT + "namespaces/db", Map.of());
    send("POST", ROOT + "namespaces", createNamespace(Map.of()), "lost");
    assertEquals(1, sent.size(), "a keyed repeat would be answered 409 AlreadyExists: looked at instead");
    assertTrue(sent.get(0).containsKey(IdempotencyKeys.HEADER), "the key is still sent");
  }

  @Test
  void testARepeatAnswered409AfterALostCreateIsLookedAtAgain() {
    // Not visible at the first look (lagging), so repeated; the repeat is answered 409 because the
    // first one landed meanwhile: that 409 is ours, not a conflict.
    Object answer = send("POST", ROOT + "namespaces", createNamespace(Map.of("k", "v")), "lost",
        "409:" + ROOT + "namespaces/db={k=v}");
    assertEquals(2, sent.size());
    assertEquals(Map.of("k", "v"), ((CreateNamespaceResponse) answer).properties());
  }

  @Test
  void testANamespaceWithOtherPropertiesIsAOneLineConflict() {
    catalog.put(ROOT + "namespaces/db", Map.of("owner", "someone-else"));
    AlreadyExistsException e = assertThrows(AlreadyExistsException.class,
        () -> send("POST", ROOT + "namespaces", createNamespace(Map.of("owner", "me")), "lost"));
    assertEquals(1, sent.size());
    assertTrue(e.getMessage().contains("exists with other properties") && !e.getMessage().contains("\n"), e.getMessage());
  }

  @Test
  void testNotVisibleAndOutOfAttemptsSaysItMayHaveBeenApplied() {
    guard.configure(Map.of("catalog-ext.commit.max-attempts", "1"));
    CommitStateUnknownException e = assertThrows(CommitStateUnknownException.class,
        () -> send("POST", ROOT + "namespaces", createNamespace(Map.of()), "lost"));
    assertTrue(e.getCause().getMessage().contains("may have been applied"), e.getCause().getMessage());
  }

  @Test
  void testTableCreateIsRecognisedByItsMetadata() {
    catalog.put(ROOT + "namespaces/db/tables/t", table(SCHEMA, Map.of("p", "1")));
    LoadTableResponse answer = (LoadTableResponse) send("POST", ROOT + "namespaces/db/tables", createTable(Map.of("p", "1")), "lost");
    assertEquals(1, sent.size());
    assertEquals("1", answer.tableMetadata().properties().get("p"));

    sent.clear();
    catalog.put(ROOT + "namespaces/db/tables/t", table(SCHEMA, Map.of("p", "2")));
    assertThrows(AlreadyExistsException.class,
        () -> send("POST", ROOT + "namespaces/db/tables", createTable(Map.of("p", "1")), "lost"));
    assertEquals(1, sent.size(), "someone else's table: never repeated, never ours");
  }

  @Test
  void testTableCreateIsRepeatedUnderItsKeyWhereTheCatalogDeduplicatesIt() {
    guard.setIdempotencyKeyLifetime("PT5M");
    send("POST", ROOT + "namespaces/db/tables", createTable(Map.of()), "lost", "ok");
    assertEquals(2, sent.size(), "createTable is replayed by Polaris 1.7.0: repeated under the key");
    assertEquals(sent.get(0).get(IdempotencyKeys.HEADER), sent.get(1).get(IdempotencyKeys.HEADER));
    assertEquals(List.of(), reads, "no look needed");
  }

  @Test
  void testADropWhoseTableIsGoneIsSuccess() {
    assertEquals(null, send("DELETE", ROOT + "namespaces/db/tables/t", null, "lost"));
    assertEquals(1, sent.size());
  }

  @Test
  void testARenameIsRecognisedBySourceGoneAndTargetPresent() {
    guard.setIdempotencyKeyLifetime("PT5M"); // a repeat would be answered 404: looked at instead
    catalog.put(ROOT + "namespaces/db/tables/t2", table(SCHEMA, Map.of()));
    RenameTableRequest rename = RenameTableRequest.builder()
        .withSource(TableIdentifier.of("db", "t")).withDestination(TableIdentifier.of("db", "t2")).build();
    send("POST", ROOT + "tables/rename", rename, "lost");
    assertEquals(1, sent.size());
    assertEquals(List.of(ROOT + "namespaces/db/tables/t", ROOT + "namespaces/db/tables/t2"), reads);
  }

  // ------------------------------------------- what the profile says the catalog de-duplicates

  private void deduplicates(String operations) {
    guard.configure(Map.of("catalog-ext.commit.base-delay-ms", "0", "catalog-ext.commit.max-delay-ms", "0",
        "catalog-ext.commit.deduplicated-operations", operations));
    guard.setIdempotencyKeyLifetime("PT5M");
  }

  @Test
  void testAProfileCoveringEveryOperationTrustsAKeyedRepeatOfANamespaceCreate() {
    deduplicates("createTable,updateTable,stagedCreateCommit,commitTransaction,createNamespace,dropNamespace,"
        + "updateNamespaceProperties,dropTable,renameTable,registerTable");
    send("POST", ROOT + "namespaces", createNamespace(Map.of()), "lost", "ok");
    assertEquals(2, sent.size(), "the catalog replays namespace creates: repeated under the key");
    assertEquals(sent.get(0).get(IdempotencyKeys.HEADER), sent.get(1).get(IdempotencyKeys.HEADER));
    assertEquals(List.of(), reads, "no look needed");

    sent.clear();
    send("DELETE", ROOT + "namespaces/db/tables/t", null, "lost", "ok");
    assertEquals(2, sent.size(), "and drops");
    assertEquals(List.of(), reads);
  }

  @Test
  void testThePolarisProfilesSetLooksAtANamespaceCreate() {
    deduplicates("createTable,updateTable"); // what the polaris profile sets (Polaris 1.7.0)
    catalog.put(ROOT + "namespaces/db", Map.of());
    send("POST", ROOT + "namespaces", createNamespace(Map.of()), "lost");
    assertEquals(1, sent.size(), "looked up, not repeated into Polaris's 409");
    assertEquals(List.of(ROOT + "namespaces/db"), reads);
  }

  @Test
  void testACatalogThatReplaysNothingHasItsTableCreateLookedAt() {
    deduplicates("none");
    catalog.put(ROOT + "namespaces/db/tables/t", table(SCHEMA, Map.of()));
    send("POST", ROOT + "namespaces/db/tables", createTable(Map.of()), "lost");
    assertEquals(1, sent.size(), "createTable not replayed here: looked at, not repeated under the key");
    assertEquals(List.of(ROOT + "namespaces/db/tables/t"), reads);
  }

  @Test
  void testAnUnknownOperationNameIsOneLine() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> guard.configure(Map.of("catalog-ext.commit.deduplicated-operations", "createTable,dropEverything")));
    assertEquals("Bad catalog property catalog-ext.commit.deduplicated-operations='createTable,dropEverything': unknown"
        + " operation dropEverything; use none or some of createTable, updateTable, stagedCreateCommit,"
        + " commitTransaction, createNamespace, dropNamespace, updateNamespaceProperties, dropTable, renameTable,"
        + " registerTable", e.getMessage());
  }

  // ---------------------------------------------------------------- helpers

  private static CreateNamespaceRequest createNamespace(Map<String, String> props) {
    return CreateNamespaceRequest.builder().withNamespace(Namespace.of("db")).setProperties(new HashMap<>(props)).build();
  }

  private static CreateTableRequest createTable(Map<String, String> props) {
    return CreateTableRequest.builder().withName("t").withSchema(SCHEMA).setProperties(new HashMap<>(props)).build();
  }

  private static TableMetadata table(Schema schema, Map<String, String> props) {
    return TableMetadata.newTableMetadata(schema, PartitionSpec.unpartitioned(), "s3://b/db/t", props);
  }

  /**
   * Sends through the guard; attempt n answers {@code script[n-1]}: lost, ok, or "409:path={k=v}"
   * (the catalog first applies it: the namespace at path now exists, then answers 409).
   */
  private Object send(String method, String path, RESTRequest body, String... script) {
    Consumer<ErrorResponse> iceberg = ErrorHandlers.namespaceErrorHandler();
    int before = sent.size();
    return guard.mutate(new Mutation(method, path, body, Map.of(), iceberg, reader()), (headers, errorHandler) -> {
      sent.add(new HashMap<>(headers));
      String answer = script[sent.size() - before - 1];
      if (answer.equals("lost")) { // as Iceberg's HTTPClient reports a connection closed mid-answer
        throw new RESTException(new SocketException("Connection reset"), "Error occurred while processing %s request", method);
      }
      if (answer.startsWith("409:")) {
        String[] parts = answer.substring(4).split("=", 2);
        catalog.put(parts[0], Map.of("k", "v"));
        errorHandler.accept(ErrorResponse.builder().responseCode(409).withType("AlreadyExistsException")
            .withMessage("Namespace already exists: db").build());
        throw new AssertionError("the handler throws");
      }
      if (body instanceof CreateTableRequest) {
        return LoadTableResponse.builder().withTableMetadata(table(SCHEMA, Map.of())).build();
      }
      return null;
    });
  }

  private RESTClient reader() {
    return (RESTClient) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {RESTClient.class},
        (proxy, method, args) -> {
          if (!method.getName().equals("get")) {
            throw new AssertionError("the look only reads, not " + method.getName());
          }
          String path = (String) args[0];
          reads.add(path);
          assertTrue(!((Map<?, ?>) args[3]).containsKey(IdempotencyKeys.HEADER), "reads carry no Idempotency-Key");
          Object now = catalog.get(path);
          if (args[2] == GetNamespaceResponse.class) {
            if (now == null) {
              throw new NoSuchNamespaceException("Namespace does not exist: db");
            }
            @SuppressWarnings("unchecked")
            Map<String, String> props = (Map<String, String>) now;
            return GetNamespaceResponse.builder().withNamespace(Namespace.of("db")).setProperties(new HashMap<>(props)).build();
          }
          if (now == null) {
            throw new NoSuchTableException("Table does not exist: %s", path);
          }
          return LoadTableResponse.builder().withTableMetadata((TableMetadata) now).build();
        });
  }
}
