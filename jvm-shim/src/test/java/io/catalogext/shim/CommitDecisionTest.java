package io.catalogext.shim;

import io.catalogext.shim.CommitDecision.Answer;
import io.catalogext.shim.CommitDecision.Facts;
import io.catalogext.shim.CommitDecision.Kind;
import io.catalogext.shim.CommitDecision.Landed;
import io.catalogext.shim.CommitDecision.Outcome;
import java.util.List;

/** Every row of the commit decision table (README "Staged tables"). */
public class CommitDecisionTest {
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
    return decide(Kind.SNAPSHOT_COMMIT, answer, earlier, landed, dedup, canRetry);
  }

  // ---- which answers may have reached the server

  public void testOnlyRefusedConnectionsAnd429AreNeverApplied() {
    for (Answer a : Answer.values()) {
      boolean expected = a != Answer.NOT_SENT && a != Answer.THROTTLED && !a.refusal();
      Check.equal(expected, CommitDecision.mayHaveReached(Kind.SNAPSHOT_COMMIT, a), "commit " + a);
      Check.equal(expected, CommitDecision.mayHaveReached(Kind.PLAIN_COMMIT, a), "plain commit " + a);
    }
  }

  public void test503OnAMutationIsNotApplied() {
    Check.isTrue(!CommitDecision.mayHaveReached(Kind.MUTATION, Answer.UNAVAILABLE), "503 mutation");
    Check.isTrue(CommitDecision.mayHaveReached(Kind.MUTATION, Answer.GATEWAY), "502 mutation");
  }

  public void testStatusMapping() {
    Check.equal(Answer.BAD_REQUEST, Answer.ofStatus(400), "400");
    Check.equal(Answer.CONFLICT, Answer.ofStatus(409), "409");
    Check.equal(Answer.THROTTLED, Answer.ofStatus(429), "429");
    Check.equal(Answer.SERVER_ERROR, Answer.ofStatus(500), "500");
    Check.equal(Answer.GATEWAY, Answer.ofStatus(502), "502");
    Check.equal(Answer.UNAVAILABLE, Answer.ofStatus(503), "503");
    Check.equal(Answer.GATEWAY, Answer.ofStatus(504), "504");
    Check.equal(Answer.UNAUTHORIZED, Answer.ofStatus(401), "401");
    Check.equal(Answer.FORBIDDEN, Answer.ofStatus(403), "403");
    Check.equal(Answer.NOT_FOUND, Answer.ofStatus(404), "404");
    Check.equal(Answer.AUTH_TIMEOUT, Answer.ofStatus(419), "419");
    Check.equal(Answer.CLIENT_ERROR, Answer.ofStatus(422), "other 4xx");
    Check.equal(Answer.SERVER_ERROR, Answer.ofStatus(501), "other 5xx");
    Check.equal(null, Answer.ofStatus(302), "not an error");
  }

  // ---- 401/403/404/419/other 4xx after an attempt that may have been applied (issue 16)

  private static final Answer[] REFUSALS = {
    Answer.UNAUTHORIZED, Answer.FORBIDDEN, Answer.NOT_FOUND, Answer.AUTH_TIMEOUT, Answer.CLIENT_ERROR};

  public void testRefusalAfterMaybeAppliedIsReconciledFirst() {
    for (Answer a : REFUSALS) {
      for (boolean dedup : new boolean[] {true, false}) {
        for (boolean canRetry : new boolean[] {true, false}) {
          Facts f = new Facts(Kind.SNAPSHOT_COMMIT, a, REACHED_BEFORE, Landed.NOT_CHECKED, dedup, canRetry);
          Check.isTrue(CommitDecision.needsReconciliation(f), a + " after maybe-applied: load the table");
        }
      }
      Facts first = new Facts(Kind.SNAPSHOT_COMMIT, a, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY);
      Check.isTrue(!CommitDecision.needsReconciliation(first), a + " first answer: Iceberg's");
    }
  }

  public void testRefusalAfterMaybeAppliedOursLandedIsSuccess() {
    for (Answer a : REFUSALS) {
      Check.equal(Outcome.SUCCESS, snapshot(a, REACHED_BEFORE, Landed.YES, DEDUP, CAN_RETRY), a + " landed");
      Check.equal(Outcome.SUCCESS, snapshot(a, REACHED_BEFORE, Landed.YES, NO_DEDUP, OUT), a + " landed, out");
    }
  }

  public void testRefusalAfterMaybeAppliedUnsureIsUnknownNeverRetried() {
    // Unsure (not visible yet, unreadable: e.g. the reload after a 401 failed too): keep every file.
    for (Answer a : REFUSALS) {
      for (Landed l : new Landed[] {Landed.PENDING, Landed.UNKNOWN, Landed.NOT_CHECKED}) {
        for (boolean canRetry : new boolean[] {true, false}) {
          Check.equal(Outcome.UNKNOWN, snapshot(a, REACHED_BEFORE, l, DEDUP, canRetry), a + " " + l + " dedup");
          Check.equal(Outcome.UNKNOWN, snapshot(a, REACHED_BEFORE, l, NO_DEDUP, canRetry), a + " " + l);
        }
      }
    }
  }

  public void testRefusalAfterMaybeAppliedProvenNotAppliedFails() {
    for (Answer a : REFUSALS) {
      Check.equal(Outcome.FAILED, snapshot(a, REACHED_BEFORE, Landed.NO, NO_DEDUP, CAN_RETRY), a + " proven");
    }
  }

  public void testRefusalAsFirstAnswerFailsWithoutRetry() {
    for (Answer a : REFUSALS) {
      Check.equal(Outcome.FAILED, snapshot(a, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), a + " snapshot");
      Check.equal(Outcome.FAILED, decide(Kind.PLAIN_COMMIT, a, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), a + " plain");
      Check.equal(Outcome.FAILED, decide(Kind.MUTATION, a, FIRST, Landed.NOT_CHECKED, DEDUP, CAN_RETRY), a + " mutation");
    }
  }

  public void testRefusalAfterMaybeAppliedOnAPlainCommitIsUnknown() {
    for (Answer a : REFUSALS) {
      Check.equal(Outcome.UNKNOWN, decide(Kind.PLAIN_COMMIT, a, REACHED_BEFORE, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), a + " plain");
    }
  }

  // ---- snapshot commits: success whenever the table shows ours

  public void testLandedIsSuccessWhateverTheAnswer() {
    for (Answer a : Answer.values()) {
      for (boolean canRetry : new boolean[] {true, false}) {
        Check.equal(Outcome.SUCCESS, snapshot(a, REACHED_BEFORE, Landed.YES, NO_DEDUP, canRetry), a + " " + canRetry);
      }
    }
  }

  // ---- snapshot commits: nothing reached the server

  public void testNeverReachedRetriesThenFails() {
    for (Answer a : new Answer[] {Answer.NOT_SENT, Answer.THROTTLED}) {
      Check.equal(Outcome.RETRY, snapshot(a, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), a + " retry");
      Check.equal(Outcome.FAILED, snapshot(a, FIRST, Landed.NOT_CHECKED, NO_DEDUP, OUT), a + " out");
    }
  }

  public void testNeverReachedThisTimeButEarlierAttemptMayHaveIsUnknown() {
    Check.equal(Outcome.UNKNOWN, snapshot(Answer.THROTTLED, REACHED_BEFORE, Landed.PENDING, NO_DEDUP, OUT), "429 after lost");
    Check.equal(Outcome.UNKNOWN, snapshot(Answer.NOT_SENT, REACHED_BEFORE, Landed.NOT_CHECKED, DEDUP, OUT), "refused after lost");
  }

  // ---- snapshot commits: may have reached

  public void testProvenNotAppliedFails() {
    for (Answer a : Answer.values()) {
      Check.equal(Outcome.FAILED, snapshot(a, REACHED_BEFORE, Landed.NO, NO_DEDUP, CAN_RETRY), a + " can retry");
      Check.equal(Outcome.FAILED, snapshot(a, REACHED_BEFORE, Landed.NO, DEDUP, OUT), a + " out");
    }
  }

  public void testConflictWithOursNotVisibleYetRetriesThenIsUnknown() {
    // 409 while the same key is in flight, or loads that lag: never FAILED (files would be deleted).
    for (Landed l : new Landed[] {Landed.PENDING, Landed.UNKNOWN}) {
      for (boolean dedup : new boolean[] {true, false}) {
        Check.equal(Outcome.RETRY, snapshot(Answer.CONFLICT, FIRST, l, dedup, CAN_RETRY), l + " retry");
        Check.equal(Outcome.UNKNOWN, snapshot(Answer.CONFLICT, FIRST, l, dedup, OUT), l + " out");
        Check.equal(Outcome.UNKNOWN, snapshot(Answer.CONFLICT, REACHED_BEFORE, l, dedup, OUT), l + " out, earlier");
      }
    }
  }

  public void testConflictBranchAgreesWithOutOfAttemptsBranch() {
    for (Landed l : Landed.values()) {
      Outcome conflict = snapshot(Answer.CONFLICT, REACHED_BEFORE, l, NO_DEDUP, OUT);
      for (Answer a : new Answer[] {Answer.LOST, Answer.GATEWAY, Answer.UNAVAILABLE}) {
        Check.equal(conflict, snapshot(a, REACHED_BEFORE, l, NO_DEDUP, OUT), "409 vs " + a + " with " + l);
      }
    }
  }

  public void testLostAnswersRetryWhileTheyCan() {
    for (Answer a : new Answer[] {Answer.LOST, Answer.GATEWAY, Answer.UNAVAILABLE}) {
      Check.equal(Outcome.RETRY, snapshot(a, FIRST, Landed.NOT_CHECKED, DEDUP, CAN_RETRY), a + " keyed");
      Check.equal(Outcome.RETRY, snapshot(a, FIRST, Landed.PENDING, NO_DEDUP, CAN_RETRY), a + " reconciled");
      Check.equal(Outcome.UNKNOWN, snapshot(a, FIRST, Landed.PENDING, NO_DEDUP, OUT), a + " out");
      Check.equal(Outcome.UNKNOWN, snapshot(a, FIRST, Landed.UNKNOWN, DEDUP, OUT), a + " out keyed");
    }
  }

  public void testServerErrorIsUnknownUnlessProven() {
    Check.equal(Outcome.UNKNOWN, snapshot(Answer.SERVER_ERROR, FIRST, Landed.PENDING, NO_DEDUP, CAN_RETRY), "500");
    Check.equal(Outcome.UNKNOWN, snapshot(Answer.SERVER_ERROR, FIRST, Landed.UNKNOWN, DEDUP, CAN_RETRY), "500 unknown");
  }

  public void testPolaris400IsNotNotApplied() {
    Check.equal(Outcome.UNKNOWN, snapshot(Answer.BAD_REQUEST, REACHED_BEFORE, Landed.PENDING, NO_DEDUP, CAN_RETRY), "after lost");
    Check.equal(Outcome.UNKNOWN, snapshot(Answer.BAD_REQUEST, FIRST, Landed.PENDING, NO_DEDUP, CAN_RETRY), "first 400");
    Check.equal(Outcome.SUCCESS, snapshot(Answer.BAD_REQUEST, FIRST, Landed.YES, NO_DEDUP, CAN_RETRY), "applied");
    Check.equal(Outcome.FAILED, snapshot(Answer.BAD_REQUEST, FIRST, Landed.NO, NO_DEDUP, CAN_RETRY), "proven");
  }

  // ---- commits without a fingerprint (schema/property change, expire-snapshots)

  public void testPlainCommitConflictFailsSoIcebergRetries() {
    for (boolean earlier : new boolean[] {true, false}) {
      for (boolean canRetry : new boolean[] {true, false}) {
        Check.equal(Outcome.FAILED,
            decide(Kind.PLAIN_COMMIT, Answer.CONFLICT, earlier, Landed.NOT_CHECKED, NO_DEDUP, canRetry), "409");
      }
    }
  }

  public void testPlainCommitRetryableAnswers() {
    Check.equal(Outcome.RETRY, decide(Kind.PLAIN_COMMIT, Answer.LOST, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), "lost");
    Check.equal(Outcome.UNKNOWN, decide(Kind.PLAIN_COMMIT, Answer.LOST, FIRST, Landed.NOT_CHECKED, NO_DEDUP, OUT), "lost out");
    Check.equal(Outcome.FAILED, decide(Kind.PLAIN_COMMIT, Answer.THROTTLED, FIRST, Landed.NOT_CHECKED, NO_DEDUP, OUT), "429 out");
    Check.equal(Outcome.UNKNOWN, decide(Kind.PLAIN_COMMIT, Answer.THROTTLED, REACHED_BEFORE, Landed.NOT_CHECKED, NO_DEDUP, OUT), "429 after lost");
  }

  public void testPlainCommitErrors() {
    Check.equal(Outcome.UNKNOWN, decide(Kind.PLAIN_COMMIT, Answer.SERVER_ERROR, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), "500");
    Check.equal(Outcome.FAILED, decide(Kind.PLAIN_COMMIT, Answer.BAD_REQUEST, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), "400 first");
    Check.equal(Outcome.UNKNOWN, decide(Kind.PLAIN_COMMIT, Answer.BAD_REQUEST, REACHED_BEFORE, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), "400 after lost");
  }

  // ---- other mutations

  public void testMutationsRetryOnlyWhenSafe() {
    Check.equal(Outcome.RETRY, decide(Kind.MUTATION, Answer.UNAVAILABLE, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), "503");
    Check.equal(Outcome.FAILED, decide(Kind.MUTATION, Answer.LOST, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), "lost, no key");
    Check.equal(Outcome.RETRY, decide(Kind.MUTATION, Answer.LOST, FIRST, Landed.NOT_CHECKED, DEDUP, CAN_RETRY), "lost, keyed");
    Check.equal(Outcome.FAILED, decide(Kind.MUTATION, Answer.UNAVAILABLE, REACHED_BEFORE, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), "503 after lost");
    Check.equal(Outcome.RETRY, decide(Kind.STAGE, Answer.LOST, REACHED_BEFORE, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY), "stage");
    Check.equal(Outcome.FAILED, decide(Kind.STAGE, Answer.LOST, REACHED_BEFORE, Landed.NOT_CHECKED, NO_DEDUP, OUT), "stage out");
    Check.equal(Outcome.FAILED, decide(Kind.MUTATION, Answer.CONFLICT, FIRST, Landed.NOT_CHECKED, DEDUP, CAN_RETRY), "409");
  }

  // ---- when to reconcile

  public void testReconciliationOnlyWhenItDecides() {
    Facts conflict = new Facts(Kind.SNAPSHOT_COMMIT, Answer.CONFLICT, FIRST, Landed.NOT_CHECKED, DEDUP, CAN_RETRY);
    Check.isTrue(CommitDecision.needsReconciliation(conflict), "409");
    Facts keyedLost = new Facts(Kind.SNAPSHOT_COMMIT, Answer.LOST, FIRST, Landed.NOT_CHECKED, DEDUP, CAN_RETRY);
    Check.isTrue(!CommitDecision.needsReconciliation(keyedLost), "keyed retry replays");
    Facts keyedLostOut = new Facts(Kind.SNAPSHOT_COMMIT, Answer.LOST, FIRST, Landed.NOT_CHECKED, DEDUP, OUT);
    Check.isTrue(CommitDecision.needsReconciliation(keyedLostOut), "keyed, out of attempts");
    Facts plainLost = new Facts(Kind.SNAPSHOT_COMMIT, Answer.LOST, FIRST, Landed.NOT_CHECKED, NO_DEDUP, CAN_RETRY);
    Check.isTrue(CommitDecision.needsReconciliation(plainLost), "look before repeating");
    Facts refused = new Facts(Kind.SNAPSHOT_COMMIT, Answer.NOT_SENT, FIRST, Landed.NOT_CHECKED, NO_DEDUP, OUT);
    Check.isTrue(!CommitDecision.needsReconciliation(refused), "nothing sent");
    Facts plain = new Facts(Kind.PLAIN_COMMIT, Answer.CONFLICT, FIRST, Landed.NOT_CHECKED, NO_DEDUP, OUT);
    Check.isTrue(!CommitDecision.needsReconciliation(plain), "nothing to recognise");
  }

  // ---- one table's landed state

  public void testLandedFromTheTable() {
    Check.equal(Landed.UNKNOWN, CommitDecision.landed(false, true, false, 0, 0, true), "nothing to look for");
    Check.equal(Landed.PENDING, CommitDecision.landed(true, false, false, 0, 1, true), "create not visible yet");
    Check.equal(Landed.NO, CommitDecision.landed(false, false, false, 0, 1, false), "table dropped");
    Check.equal(Landed.NO, CommitDecision.landed(true, true, false, 0, 1, false), "someone else's table");
    Check.equal(Landed.YES, CommitDecision.landed(true, true, true, 1, 1, false), "our create");
    Check.equal(Landed.YES, CommitDecision.landed(true, true, true, 0, 0, false), "our empty create");
    Check.equal(Landed.YES, CommitDecision.landed(false, true, false, 2, 2, false), "our append");
    Check.equal(Landed.UNKNOWN, CommitDecision.landed(false, true, false, 1, 2, false), "partly there");
    Check.equal(Landed.PENDING, CommitDecision.landed(false, true, false, 0, 2, true), "not visible, may land");
    Check.equal(Landed.NO, CommitDecision.landed(false, true, false, 0, 2, false), "another writer won");
  }

  public void testTransactionCombines() {
    Check.equal(Landed.YES, CommitDecision.combine(List.of(Landed.YES, Landed.YES)), "all landed");
    Check.equal(Landed.NO, CommitDecision.combine(List.of(Landed.NO, Landed.NO)), "none landed");
    Check.equal(Landed.UNKNOWN, CommitDecision.combine(List.of(Landed.YES, Landed.NO)), "mixed");
    Check.equal(Landed.UNKNOWN, CommitDecision.combine(List.of(Landed.YES, Landed.PENDING)), "lagging");
    Check.equal(Landed.PENDING, CommitDecision.combine(List.of(Landed.NO, Landed.PENDING)), "may land");
    Check.equal(Landed.UNKNOWN, CommitDecision.combine(List.of(Landed.NO, Landed.UNKNOWN)), "unreadable");
    Check.equal(Landed.UNKNOWN, CommitDecision.combine(List.of()), "empty");
  }
}
