package io.catalogext.shim.commit;

import io.catalogext.shim.errors.CatalogRedirectException;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotParser;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.RESTException;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * {@link CommitGuard#mutate}: the retry / reconcile loop around one table commit that adds a
 * snapshot, driven over scripted attempts (what the catalog answered each POST) and a scripted
 * reader (what the table shows when the guard loads it to reconcile). No sleeping: zero backoff.
 */
public class CommitGuardLoopTest {
  private static final String PATH = "v1/namespaces/db/tables/t";
  private static final long OURS = 7_001L;
  private static final long THEIRS = 7_002L;

  private final TableMetadata base =
      TableMetadata.newTableMetadata(
          new Schema(Types.NestedField.required(1, "id", Types.LongType.get())),
          PartitionSpec.unpartitioned(), "s3://b/db/t", Map.of());
  private final CommitGuard guard = new CommitGuard();

  /** Headers of every POST attempt, in order. */
  private final List<Map<String, String>> posts = new ArrayList<>();
  /** Table paths the guard loaded to reconcile. */
  private final List<String> loads = new ArrayList<>();
  /** Errors handed to Iceberg's own error handler (which maps them to its exceptions). */
  private final List<Integer> handedToIceberg = new ArrayList<>();
  /** What a reconciliation load answers. */
  private TableMetadata tableNow = base;

  public CommitGuardLoopTest() {
    guard.configure(Map.of("catalog-ext.commit.base-delay-ms", "0", "catalog-ext.commit.max-delay-ms", "0"));
  }

  // ------------------------------------------------------------------ the five paths

  @Test
  void testLostAnswerThatLandedIsOneSuccessAfterOnePost() {
    tableNow = withSnapshot(base, OURS);
    LoadTableResponse result = commit("lost");
    assertEquals(1, posts.size(), "one POST: the reconciliation found it, nothing is repeated");
    assertEquals(List.of(PATH), loads, "the table was loaded once to reconcile");
    assertTrue(result != null && result.tableMetadata().snapshot(OURS) != null, "success carries the table with our snapshot");
    assertEquals(List.of(), handedToIceberg, "Iceberg's handler never saw a failure");
    ObjectNode evidence = evidence();
    assertEquals(1L, evidence.get("reconciled_landed").asLong(), "counted as landed");
    assertEquals(0L, evidence.get("retries").asLong(), "no retry");
  }

  @Test
  void testLostAnswerWithAnAdvertisedKeyLifetimeIsRepeatedUnderTheSameKey() {
    guard.setIdempotencyKeyLifetime("PT30M");
    LoadTableResponse result = commit("lost", "ok");
    assertEquals(2, posts.size(), "repeated once");
    String key = posts.get(0).get(IdempotencyKeys.HEADER);
    assertTrue(key != null && java.util.UUID.fromString(key).version() == 7, "a UUIDv7 Idempotency-Key: " + key);
    assertEquals(key, posts.get(1).get(IdempotencyKeys.HEADER), "the repeat carries the same key");
    assertEquals(List.of(), loads, "a de-duplicating server replays its answer: no reconciliation load");
    assertTrue(result.tableMetadata().snapshot(OURS) != null, "the repeat's answer is returned");

    posts.clear();
    commit("ok");
    assertTrue(!key.equals(posts.get(0).get(IdempotencyKeys.HEADER)), "the next commit gets a new key");
  }

  @Test
  void testIcebergsOwnKeyIsTheOneEveryAttemptRepeats() {
    // Iceberg 1.11+ puts its own Idempotency-Key on the mutation where the server advertises a
    // lifetime; the guard repeats that key instead of replacing it or adding a second one.
    guard.setIdempotencyKeyLifetime("PT30M");
    String iceberg = "01890a5d-ac96-774b-bcce-b302099a8057";
    for (String name : List.of("Idempotency-Key", "idempotency-key")) {
      posts.clear();
      commit(Map.of("X-Client", "test", name, iceberg), "lost", "503", "ok");
      assertEquals(3, posts.size(), "repeated twice");
      for (Map<String, String> h : posts) {
        assertEquals(List.of(iceberg), keysIn(h), "every attempt carries Iceberg's key and no other (sent as " + name + ")");
      }
    }
    assertEquals(2L, evidence().get("reused_iceberg_keys").asLong(), "counted as reused");
  }

  @Test
  void testIcebergsKeyIsDroppedWhereTheGuardSendsNone() {
    guard.configure(Map.of("catalog-ext.commit.idempotency", "never",
        "catalog-ext.commit.base-delay-ms", "0", "catalog-ext.commit.max-delay-ms", "0"));
    commit(Map.of("idempotency-key", "01890a5d-ac96-774b-bcce-b302099a8057"), "ok");
    assertEquals(List.of(), keysIn(posts.get(0)), "idempotency=never: no key at all");
  }

  private static List<String> keysIn(Map<String, String> headers) {
    List<String> keys = new ArrayList<>();
    headers.forEach((k, v) -> {
      if (k.equalsIgnoreCase(IdempotencyKeys.HEADER)) {
        keys.add(v);
      }
    });
    return keys;
  }

  @Test
  void testConflictWhileTheSameKeyIsInFlightWaitsAndRepeats() {
    guard.setIdempotencyKeyLifetime("PT30M");
    // The first answer is lost; its repeat meets the first attempt still running (409), and our
    // snapshot is not there yet while the commit's requirements still hold: pending, so repeat.
    LoadTableResponse result = commit("lost", "409", "ok");
    assertEquals(3, posts.size(), "repeated after the 409");
    String key = posts.get(0).get(IdempotencyKeys.HEADER);
    for (Map<String, String> h : posts) {
      assertEquals(key, h.get(IdempotencyKeys.HEADER), "every attempt under one key");
    }
    assertEquals(List.of(PATH), loads, "the 409 was reconciled once");
    assertEquals(List.of(), handedToIceberg, "the 409 never reached Iceberg (it would clean up the files)");
    assertTrue(result.tableMetadata().snapshot(OURS) != null, "the last answer is returned");
    ObjectNode evidence = evidence();
    assertEquals(1L, evidence.get("reconciled_pending").asLong(), "reconciled as pending");
    assertEquals(2L, evidence.get("retries").asLong(), "two retries");
  }

  @Test
  void testServerErrorsUntilTheAttemptsRunOutAreUnknownAndKeepTheFiles() {
    guard.configure(Map.of("catalog-ext.commit.max-attempts", "2", "catalog-ext.commit.base-delay-ms", "0",
        "catalog-ext.commit.max-delay-ms", "0"));
    CommitStateUnknownException e =
        assertThrows(CommitStateUnknownException.class, () -> commit("503", "502"));
    assertEquals(2, posts.size(), "max-attempts=2: two POSTs, no third");
    assertEquals(List.of(PATH, PATH), loads, "each answer was reconciled (no de-duplicating server)");
    assertEquals(List.of(), handedToIceberg, "decided by the guard, not Iceberg's handler");
    assertTrue(e.getMessage().contains("no files were deleted") && e.getMessage().contains("2 attempt(s)"), e.getMessage());
    assertEquals(2L, evidence().get("reconciled_pending").asLong(), "pending both times");
  }

  @Test
  void testConflictOnADataCommitThatCannotLandIsIcebergsCommitFailed() {
    tableNow = withSnapshot(base, THEIRS); // someone else committed: our assert-ref-snapshot-id fails
    assertThrows(CommitFailedException.class, () -> commit("409")); // not CommitStateUnknownException
    assertEquals(1, posts.size(), "not repeated: Iceberg refreshes and retries itself");
    assertEquals(List.of(PATH), loads, "reconciled before Iceberg may clean up");
    assertEquals(List.of(409), handedToIceberg, "Iceberg's own handler mapped the 409");
    assertEquals(1L, evidence().get("reconciled_not_landed").asLong(), "proven not landed");
  }

  // ------------------------------------------------------------------ 429 then a refusal; redirects

  @Test
  void testRefusalAfterA429IsReconciledBeforeIcebergSeesIt() {
    // A gateway forwarded the throttled copy (it landed), then refused the repeat: success once.
    tableNow = withSnapshot(base, OURS);
    LoadTableResponse result = commit("429", "403");
    assertTrue(result != null && result.tableMetadata().snapshot(OURS) != null, "success with our snapshot");
    assertEquals(List.of(PATH), loads, "the 403 was reconciled");
    assertEquals(List.of(), handedToIceberg, "Iceberg's handler never saw the 403 (it would delete the files)");

    // Not visible: it may still land, so unknown and every file kept (not Iceberg's Forbidden).
    tableNow = base;
    posts.clear();
    loads.clear();
    CommitStateUnknownException e = assertThrows(CommitStateUnknownException.class, () -> commit("429", "401"));
    assertTrue(e.getMessage().contains("HTTP 401"), e.getMessage());
    assertEquals(List.of(), handedToIceberg, "decided by the guard");
  }

  @Test
  void testThrottledEveryTimeStillFailsWithoutALoad() {
    guard.configure(Map.of("catalog-ext.commit.max-attempts", "2", "catalog-ext.commit.base-delay-ms", "0",
        "catalog-ext.commit.max-delay-ms", "0"));
    assertThrows(CommitFailedException.class, () -> commit("429", "429")); // refused twice: nothing published
    assertEquals(List.of(), loads, "a 429 is not reconciled");
  }

  @Test
  void testRedirectOnACommitIsReconciledNeverRepeated() {
    tableNow = withSnapshot(base, OURS); // a gateway applied it, then redirected
    LoadTableResponse landed = commit("307");
    assertTrue(landed.tableMetadata().snapshot(OURS) != null, "landed: success once");

    tableNow = base;
    posts.clear();
    CommitStateUnknownException e = assertThrows(CommitStateUnknownException.class, () -> commit("303"));
    assertEquals(1, posts.size(), "a redirect is never repeated");
    String text = e.getCause().getMessage();
    assertTrue(text.contains("answered with a redirect (HTTP 303 redirect to http://elsewhere.example/v1/x, not followed"),
        text);
    assertEquals(List.of(), handedToIceberg, "decided by the guard");
  }

  // ------------------------------------------------------------------ scripting

  /** Sends our commit through the guard; attempt n answers {@code script[n-1]}: lost, ok or an HTTP status. */
  private LoadTableResponse commit(String... script) {
    return commit(Map.of("X-Client", "test"), script);
  }

  private LoadTableResponse commit(Map<String, String> sent, String... script) {
    UpdateTableRequest body =
        UpdateTableRequest.create(
            TableIdentifier.of("db", "t"),
            List.of(new UpdateRequirement.AssertTableUUID(base.uuid()),
                new UpdateRequirement.AssertRefSnapshotID("main", null)),
            List.of(new MetadataUpdate.AddSnapshot(snapshot(OURS))));
    Consumer<ErrorResponse> iceberg =
        err -> {
          handedToIceberg.add(err.code());
          ErrorHandlers.tableCommitHandler().accept(err);
        };
    int before = posts.size();
    return guard.mutate(
        new Mutation("POST", PATH, body, sent, iceberg, reader()),
        (headers, errorHandler) -> {
          posts.add(new HashMap<>(headers));
          int n = posts.size() - before;
          if (n > script.length) {
            throw new AssertionError("attempt " + n + " was not expected (script: " + String.join(", ", script) + ")");
          }
          String answer = script[n - 1];
          if (answer.equals("lost")) { // as Iceberg's HTTPClient reports a read timeout
            throw new RESTException(new SocketTimeoutException("Read timed out"), "Error occurred while processing %s request", "POST");
          }
          if (answer.equals("ok")) {
            return LoadTableResponse.builder().withTableMetadata(withSnapshot(base, OURS)).build();
          }
          int code = Integer.parseInt(answer);
          if (CatalogRedirectException.isRedirect(code)) { // as the catalog's transport refuses it
            throw new CatalogRedirectException(code, "POST", "/" + PATH, "http://elsewhere.example/v1/x?sig=secret");
          }
          errorHandler.accept(ErrorResponse.builder().responseCode(code).withType("Scripted").withMessage("scripted " + code).build());
          throw new RESTException("Unhandled error: %s", code); // as HTTPClient does after its handler
        });
  }

  /** The undecorated client the guard reconciles through: GETs answer {@link #tableNow}. */
  private RESTClient reader() {
    return (RESTClient) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {RESTClient.class},
        (proxy, method, args) -> {
          if (method.getName().equals("close")) {
            return null;
          }
          if (!method.getName().equals("get")) {
            throw new AssertionError("the reader only loads tables, not " + method.getName());
          }
          loads.add((String) args[0]);
          assertTrue(!((Map<?, ?>) args[3]).containsKey(IdempotencyKeys.HEADER), "loads carry no Idempotency-Key");
          return LoadTableResponse.builder().withTableMetadata(tableNow).build();
        });
  }

  private ObjectNode evidence() {
    return guard.evidence();
  }

  private static Snapshot snapshot(long id) {
    return SnapshotParser.fromJson(
        "{\"sequence-number\":1,\"snapshot-id\":" + id + ",\"timestamp-ms\":1700000000000,"
            + "\"summary\":{\"operation\":\"append\"},\"manifest-list\":\"s3://b/db/t/metadata/snap-" + id + ".avro\","
            + "\"schema-id\":0}");
  }

  private static TableMetadata withSnapshot(TableMetadata meta, long id) {
    return TableMetadata.buildFrom(meta).addSnapshot(snapshot(id)).setBranchSnapshot(id, "main").build();
  }
}
