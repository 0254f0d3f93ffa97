package io.catalogext.shim.commit;

import io.catalogext.shim.commit.CommitDecision.Answer;
import io.catalogext.shim.commit.CommitDecision.Facts;
import io.catalogext.shim.commit.CommitDecision.Kind;
import io.catalogext.shim.commit.CommitDecision.Landed;
import io.catalogext.shim.commit.CommitDecision.Outcome;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Every row of the shared commit decision table ({@link CommitDecision#TABLE_RESOURCE}, the same rows
 * tests/unit/commit/test_commit_decisions.py checks PyIceberg's guard against), then the properties over
 * every enum value and the Java-only parts (status interception, transactions) that are not rows.
 */
public class CommitDecisionTest {
  private static final JsonNode TABLE = readTable();

  private static JsonNode readTable() {
    try (InputStream in = CommitDecision.class.getResourceAsStream(CommitDecision.TABLE_RESOURCE)) {
      assertTrue(in != null, CommitDecision.TABLE_RESOURCE + " is missing from the shim jar");
      return Json.MAPPER.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The JVM's kind of a row's {@code commit}: the same name, as the spec spells it. */
  private static Kind kind(String commit) {
    return named(Kind.class, commit);
  }

  /** A row's {@code answer}: an HTTP status, or {@code refused}/{@code lost} by name. */
  private static Answer answer(JsonNode a) {
    return a.isInt() ? Answer.ofStatus(a.asInt()) : named(Answer.class, a.asText());
  }

  private static <E extends Enum<E>> E named(Class<E> type, String text) {
    return Enum.valueOf(type, text.toUpperCase(Locale.ROOT).replace('-', '_'));
  }

  @Test
  void testEveryRowOfTheSharedTable() {
    int rows = 0;
    for (JsonNode row : TABLE.get("rows")) {
      String id = row.get("id").asText();
      boolean advertised = row.get("lifetime").asText().equals("advertised");
      CommitPolicy policy = CommitPolicy.fromProperties(Map.of("catalog-ext.commit.idempotency", row.get("key_mode").asText()));
      boolean sendsKey = policy.sendsKeys(advertised);
      assertEquals(row.get("key").asText(), sendsKey ? "sent" : "none", id + ": key");
      boolean covered = !row.has("covered") || row.get("covered").asBoolean(); // de-duplicated under the key
      Facts f = new Facts(kind(row.get("commit").asText()), answer(row.get("answer")), row.get("earlier").asBoolean(),
          Landed.NOT_CHECKED, sendsKey && advertised && covered, row.get("can_retry").asBoolean());
      assertEquals(row.get("reconcile").asBoolean(), CommitDecision.needsReconciliation(f), id + ": reconcile");
      Outcome outcome = CommitDecision.decide(f.withLanded(named(Landed.class, row.get("landed").asText())));
      assertEquals(named(Outcome.class, row.get("outcome").asText()), outcome, id + ": outcome");
      rows++;
    }
    assertTrue(rows >= 60, "rows checked: " + rows);
  }

  @Test
  void testEveryLandedRowOfTheSharedTable() {
    int rows = 0;
    for (JsonNode row : TABLE.get("landed")) {
      Landed landed = CommitDecision.landed(row.get("create").asBoolean(), row.get("exists").asBoolean(),
          row.get("uuid_matches").asBoolean(), row.get("found").asInt(), row.get("expected").asInt(),
          row.get("requirements_hold").asBoolean());
      assertEquals(named(Landed.class, row.get("landed").asText()), landed, row.get("why").asText());
      rows++;
    }
    assertTrue(rows >= 10, "landed rows checked: " + rows);
  }

  @Test
  void testTheTableCoversEveryKindAndAnswer() {
    Set<Kind> kinds = EnumSet.noneOf(Kind.class);
    Set<Answer> answers = EnumSet.noneOf(Answer.class);
    Set<Outcome> outcomes = EnumSet.noneOf(Outcome.class);
    for (JsonNode row : TABLE.get("rows")) {
      kinds.add(kind(row.get("commit").asText()));
      answers.add(answer(row.get("answer")));
      outcomes.add(named(Outcome.class, row.get("outcome").asText()));
    }
    assertEquals(EnumSet.allOf(Kind.class), kinds, "kinds");
    assertEquals(EnumSet.allOf(Answer.class), answers, "answers");
    assertEquals(EnumSet.allOf(Outcome.class), outcomes, "outcomes");
  }

  // ---- statuses the guard decides (the rest go to Iceberg's own error handler)

  @Test
  void testEvery5xxOnACommitIsTheGuards() {
    for (Kind k : new Kind[] {Kind.SNAPSHOT, Kind.PLAIN}) {
      for (int code : new int[] {400, 409, 429, 500, 501, 502, 503, 504, 505}) {
        assertTrue(CommitGuard.intercepts(k, code, false), k + " first " + code);
      }
      for (int code : new int[] {401, 403, 404, 419, 422}) {
        assertTrue(!CommitGuard.intercepts(k, code, false), k + " first " + code + ": Iceberg's refusal");
        assertTrue(CommitGuard.intercepts(k, code, true), k + " " + code + " after maybe-applied");
      }
    }
    assertTrue(!CommitGuard.intercepts(Kind.MUTATION, 500, false), "a first 500 on a drop: Iceberg's");
    for (int code : new int[] {400, 404, 409, 500}) {
      assertTrue(CommitGuard.intercepts(Kind.MUTATION, code, true), code + " after a lost drop or create: looked at");
    }
    assertTrue(CommitGuard.intercepts(Kind.MUTATION, 503, false), "503 on a drop: retried");
  }

  private static final boolean REACHED_BEFORE = true;
  private static final boolean FIRST = false;
  private static final boolean DEDUP = true;
  private static final boolean NO_DEDUP = false;
  private static final boolean CAN_RETRY = true;
  private static final boolean OUT = false;

  private static Outcome decide(Kind kind, Answer answer, boolean earlier, Landed landed, boolean dedup,
      boolean canRetry) {
    return CommitDecision.decide(new Facts(kind, answer, earlier, landed, dedup, canRetry));
  }

  private static Outcome snapshot(Answer answer, boolean earlier, Landed landed, boolean dedup, boolean canRetry) {
    return decide(Kind.SNAPSHOT, answer, earlier, landed, dedup, canRetry);
  }

  // ---- which answers may have reached the server

  @Test
  void testOnlyRefusedConnectionsAnd429AreNeverApplied() {
    for (Answer a : Answer.values()) {
      boolean expected = a != Answer.REFUSED && a != Answer.THROTTLED && !a.refusal();
      assertEquals(expected, CommitDecision.mayHaveReached(Kind.SNAPSHOT, a), "commit " + a);
      assertEquals(expected, CommitDecision.mayHaveReached(Kind.PLAIN, a), "plain commit " + a);
    }
  }

  @Test
  void test503OnAMutationIsNotApplied() {
    assertTrue(!CommitDecision.mayHaveReached(Kind.MUTATION, Answer.UNAVAILABLE), "503 mutation");
    assertTrue(CommitDecision.mayHaveReached(Kind.MUTATION, Answer.GATEWAY), "502 mutation");
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(nullValues = "none", value = {
    "400, BAD_REQUEST", "409, CONFLICT", "429, THROTTLED", "500, SERVER_ERROR", "502, GATEWAY", "503, UNAVAILABLE",
    "504, GATEWAY", "401, UNAUTHORIZED", "403, FORBIDDEN", "404, NOT_FOUND", "419, AUTH_TIMEOUT",
    "422, CLIENT_ERROR", // other 4xx
    "501, SERVER_ERROR", // other 5xx
    "301, REDIRECT", "302, REDIRECT", "303, REDIRECT", "307, REDIRECT", "308, REDIRECT", // never followed
    "304, none", "200, none"}) // not an error, success
  void testStatusMapping(int status, Answer expected) {
    assertEquals(expected, Answer.ofStatus(status), String.valueOf(status));
  }

  // ---- 401/403/404/419/other 4xx after an attempt that may have been applied

  private static final Answer[] REFUSALS = {
    Answer.UNAUTHORIZED, Answer.FORBIDDEN, Answer.NOT_FOUND, Answer.AUTH_TIMEOUT, Answer.CLIENT_ERROR};

  @Test
  void testRefusalAfterMaybeAppliedIsReconciledFirst() {
    for (Answer a : REFUSALS) {
      for (boolean dedup : new boolean[] {true, false}) {
        for (boolean canRetry : new boolean[] {true, false}) {
          Facts f = new Facts(Kind.SNAPSHOT, a, REACHED_BEFORE, Landed.NOT_CHECKED, dedup, canRetry);
          assertTrue(CommitDecision.needsReconciliation(f), a + " after maybe-applied: load the table");
        }
      }
      Facts first = new Facts(Kind.SNAPSHOT, a, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY);
      assertTrue(!CommitDecision.needsReconciliation(first), a + " first answer: Iceberg's");
    }
  }

  @Test
  void testRefusalAfterMaybeAppliedUnsureIsUnknownNeverRetried() {
    // Unsure (not visible yet, unreadable: e.g. the reload after a 401 failed too): keep every file.
    for (Answer a : REFUSALS) {
      for (Landed l : new Landed[] {Landed.PENDING, Landed.UNKNOWN, Landed.NOT_CHECKED}) {
        for (boolean canRetry : new boolean[] {true, false}) {
          assertEquals(Outcome.UNKNOWN, snapshot(a, REACHED_BEFORE, l, DEDUP, canRetry), a + " " + l + " dedup");
          assertEquals(Outcome.UNKNOWN, snapshot(a, REACHED_BEFORE, l, NO_DEDUP, canRetry), a + " " + l);
        }
      }
    }
  }

  // ---- snapshot commits: success whenever the table shows ours

  @Test
  void testLandedIsSuccessWhateverTheAnswer() {
    for (Answer a : Answer.values()) {
      for (boolean canRetry : new boolean[] {true, false}) {
        assertEquals(Outcome.SUCCESS, snapshot(a, REACHED_BEFORE, Landed.YES, NO_DEDUP, canRetry), a + " " + canRetry);
      }
    }
  }

  // ---- snapshot commits: may have reached

  @Test
  void testProvenNotAppliedFails() {
    for (Answer a : Answer.values()) {
      assertEquals(Outcome.FAILED, snapshot(a, REACHED_BEFORE, Landed.NO, NO_DEDUP, CAN_RETRY), a + " can retry");
      assertEquals(Outcome.FAILED, snapshot(a, REACHED_BEFORE, Landed.NO, DEDUP, OUT), a + " out");
    }
  }

  @Test
  void testConflictWithOursNotVisibleYetRetriesThenIsUnknown() {
    // 409 while the same key is in flight, or loads that lag: never FAILED (files would be deleted).
    for (Landed l : new Landed[] {Landed.PENDING, Landed.UNKNOWN}) {
      for (boolean dedup : new boolean[] {true, false}) {
        assertEquals(Outcome.RETRY, snapshot(Answer.CONFLICT, FIRST, l, dedup, CAN_RETRY), l + " retry");
        assertEquals(Outcome.UNKNOWN, snapshot(Answer.CONFLICT, FIRST, l, dedup, OUT), l + " out");
        assertEquals(Outcome.UNKNOWN, snapshot(Answer.CONFLICT, REACHED_BEFORE, l, dedup, OUT), l + " out, earlier");
      }
    }
  }

  @Test
  void testConflictBranchAgreesWithOutOfAttemptsBranch() {
    for (Landed l : Landed.values()) {
      Outcome conflict = snapshot(Answer.CONFLICT, REACHED_BEFORE, l, NO_DEDUP, OUT);
      for (Answer a : new Answer[] {Answer.LOST, Answer.GATEWAY, Answer.UNAVAILABLE}) {
        assertEquals(conflict, snapshot(a, REACHED_BEFORE, l, NO_DEDUP, OUT), "409 vs " + a + " with " + l);
      }
    }
  }

  // ---- redirects (never followed: the catalog's transport). The shared table has rows for the JVM-only
  // kinds; these are the commit rows, decided as a 400 is (PyIceberg has no redirect answer).

  @Test
  void testRedirectOnASnapshotCommitIsReconciledAndNeverDeletesUnproven() {
    for (boolean earlier : new boolean[] {FIRST, REACHED_BEFORE}) {
      for (boolean canRetry : new boolean[] {CAN_RETRY, OUT}) {
        Facts f = new Facts(Kind.SNAPSHOT, Answer.REDIRECT, earlier, Landed.NOT_CHECKED, NO_DEDUP, canRetry);
        assertTrue(CommitDecision.needsReconciliation(f), "a 3xx on a snapshot commit: load the table first");
        assertEquals(Outcome.SUCCESS, snapshot(Answer.REDIRECT, earlier, Landed.YES, NO_DEDUP, canRetry), "landed");
        assertEquals(Outcome.FAILED, snapshot(Answer.REDIRECT, earlier, Landed.NO, NO_DEDUP, canRetry), "can never land");
        for (Landed l : new Landed[] {Landed.PENDING, Landed.UNKNOWN}) {
          // A gateway may have forwarded it before redirecting: never failed, never repeated.
          assertEquals(Outcome.UNKNOWN, snapshot(Answer.REDIRECT, earlier, l, NO_DEDUP, canRetry), l + " " + earlier);
          assertEquals(Outcome.UNKNOWN, snapshot(Answer.REDIRECT, earlier, l, DEDUP, canRetry), l + " dedup");
        }
      }
    }
    assertTrue(!Answer.REDIRECT.retryable(), "a redirect is not repeated");
  }

  @Test
  void testRedirectOnOtherRequestsIsARefusal() {
    assertEquals(Outcome.FAILED, decide(Kind.PLAIN, Answer.REDIRECT, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY),
        "plain commit, first");
    assertEquals(Outcome.UNKNOWN,
        decide(Kind.PLAIN, Answer.REDIRECT, REACHED_BEFORE, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY),
        "plain commit after a possible apply");
    for (Kind k : new Kind[] {Kind.MUTATION, Kind.STAGE}) {
      for (boolean dedup : new boolean[] {DEDUP, NO_DEDUP}) {
        assertEquals(Outcome.FAILED, decide(k, Answer.REDIRECT, FIRST, Landed.NOT_CHECKED, dedup, CAN_RETRY), k + "");
      }
    }
    for (Kind k : Kind.values()) {
      for (int code : new int[] {301, 302, 303, 307, 308}) {
        assertTrue(CommitGuard.intercepts(k, code, false), k + " " + code + ": never Iceberg's handler");
      }
    }
  }

  @Test
  void testTransactionCombines() {
    assertEquals(Landed.YES, CommitDecision.combine(List.of(Landed.YES, Landed.YES)), "all landed");
    assertEquals(Landed.NO, CommitDecision.combine(List.of(Landed.NO, Landed.NO)), "none landed");
    assertEquals(Landed.UNKNOWN, CommitDecision.combine(List.of(Landed.YES, Landed.NO)), "mixed");
    assertEquals(Landed.UNKNOWN, CommitDecision.combine(List.of(Landed.YES, Landed.PENDING)), "lagging");
    assertEquals(Landed.PENDING, CommitDecision.combine(List.of(Landed.NO, Landed.PENDING)), "may land");
    assertEquals(Landed.UNKNOWN, CommitDecision.combine(List.of(Landed.NO, Landed.UNKNOWN)), "unreadable");
    assertEquals(Landed.UNKNOWN, CommitDecision.combine(List.of()), "empty");
  }
}
