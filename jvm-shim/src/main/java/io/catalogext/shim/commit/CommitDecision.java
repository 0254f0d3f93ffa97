package io.catalogext.shim.commit;

import java.util.List;

/**
 * What {@link CommitGuard} does after an attempt that did not succeed: a pure function of the
 * evidence. Its spec is the commit decision table shared with PyIceberg
 * ({@code pyspark_catalog_ext/resources/commit-decisions.json}, packaged under the shim's root package as
 * {@link #TABLE_RESOURCE}); CommitDecisionTest checks every row of it, and the Python guard is
 * tested against the same rows.
 *
 * <p>The one rule behind it: once any attempt may have reached the server, no outcome deletes
 * files ({@link Outcome#FAILED} on a commit that adds snapshots) unless the catalog proves that
 * nothing was applied ({@link Landed#NO}). "Our snapshot is not visible (yet)" is no proof: the
 * attempt may still be in flight, or the catalog's loads may lag.
 *
 * <p>Python twin: {@code pyspark_catalog_ext.commit.decision}.
 */
final class CommitDecision {
  /** The shared decision table, a resource beside this class (one copy in git, the Python package's). */
  static final String TABLE_RESOURCE = "/io/catalogext/shim/commit-decisions.json";

  private CommitDecision() {}

  /** What is being sent. */
  enum Kind {
    /** A table commit or transaction that adds snapshots or creates a table (has a fingerprint). */
    SNAPSHOT,
    /** A table commit that adds nothing recognisable: schema/property change, expire-snapshots. */
    PLAIN,
    /** stage-create: no server state, always safe to repeat. */
    STAGE,
    /** Anything else: create, drop, rename, register, namespaces (looked at after a lost answer). */
    MUTATION
  }

  /** The last attempt's answer. */
  enum Answer {
    REFUSED, // connection refused / unknown host: never reached the server
    LOST, // timeout or broken connection after sending: may have been applied
    THROTTLED, // 429: refused before processing (Iceberg itself repeats POSTs on 429)
    UNAVAILABLE, // 503: Iceberg maps it to "commit state unknown" (a gateway may have forwarded it)
    GATEWAY, // 502/504: a gateway may have forwarded it
    CONFLICT, // 409
    SERVER_ERROR, // 500
    BAD_REQUEST, // 400: Polaris <= 1.7.0 answers an unknown commit state with 400 (apache/polaris#5145)
    // Refusals: the server turned this attempt away. The guard sees them only on a commit after an
    // attempt that may have been applied (else Iceberg's handler maps them): they say nothing about
    // that earlier attempt, so the table decides, never Iceberg's cleanup.
    UNAUTHORIZED, // 401: the token may have expired meanwhile
    FORBIDDEN, // 403
    NOT_FOUND, // 404: the table may have been dropped, or a gateway lost the route
    AUTH_TIMEOUT, // 419
    CLIENT_ERROR, // any other 4xx
    // 301/302/303/307/308, never followed (the catalog's transport). Usually "not processed here", but a
    // gateway may have forwarded the request first: decided as a 400 is, never repeated.
    REDIRECT;

    /** The answer for an HTTP status, or null for statuses the guard leaves to Iceberg. */
    static Answer ofStatus(int code) {
      switch (code) {
        case 400:
          return BAD_REQUEST;
        case 409:
          return CONFLICT;
        case 429:
          return THROTTLED;
        case 500:
          return SERVER_ERROR;
        case 502:
        case 504:
          return GATEWAY;
        case 503:
          return UNAVAILABLE;
        case 401:
          return UNAUTHORIZED;
        case 403:
          return FORBIDDEN;
        case 404:
          return NOT_FOUND;
        case 419:
          return AUTH_TIMEOUT;
        case 301:
        case 302:
        case 303:
        case 307:
        case 308:
          return REDIRECT;
        default:
          if (code >= 400 && code < 500) {
            return CLIENT_ERROR;
          }
          return code > 500 ? SERVER_ERROR : null; // 501, 505, ...: applied, then failed?
      }
    }

    /** A 4xx other than 400/409/429: this attempt was refused, not applied. */
    boolean refusal() {
      return this == UNAUTHORIZED || this == FORBIDDEN || this == NOT_FOUND || this == AUTH_TIMEOUT
          || this == CLIENT_ERROR;
    }

    boolean retryable() {
      return this == REFUSED || this == LOST || this == THROTTLED || this == UNAVAILABLE || this == GATEWAY;
    }
  }

  /** Reconciliation: did our commit land, judging by the table as the catalog shows it now. */
  enum Landed {
    YES, // every snapshot id / the table UUID we added is there
    NO, // proven not applied: ours is absent and its requirements no longer hold, so it never can
    PENDING, // ours is absent but its requirements still hold: it may still land (in flight, lag)
    UNKNOWN, // unreadable table, nothing to recognise, partly there, or a mixed transaction
    NOT_CHECKED
  }

  enum Outcome {
    RETRY,
    SUCCESS, // report the landed commit once as success
    FAILED, // report failure (for a snapshot commit: Iceberg deletes its files)
    UNKNOWN // CommitStateUnknownException: every file is kept
  }

  /** Everything the decision depends on. */
  static final class Facts {
    final Kind kind;
    final Answer answer;
    final boolean earlierMayHaveReached; // an earlier attempt may have reached the server
    final Landed landed;
    // we sent a key, the server advertised a key lifetime and it de-duplicates this operation
    // (DeduplicatedOperations: Polaris 1.7.0 advertises one lifetime for every route, but replays only
    // createTable and updateTable without assert-create)
    final boolean deduplicated;
    final boolean canRetry; // attempts, total time and key lifetime all allow one more

    Facts(Kind kind, Answer answer, boolean earlierMayHaveReached, Landed landed, boolean deduplicated,
        boolean canRetry) {
      this.kind = kind;
      this.answer = answer;
      this.earlierMayHaveReached = earlierMayHaveReached;
      this.landed = landed;
      this.deduplicated = deduplicated;
      this.canRetry = canRetry;
    }

    Facts withLanded(Landed result) {
      return new Facts(kind, answer, earlierMayHaveReached, result, deduplicated, canRetry);
    }

    boolean mayHaveReached() {
      return earlierMayHaveReached || CommitDecision.mayHaveReached(kind, answer);
    }

    @Override
    public String toString() {
      return kind + " " + answer + (earlierMayHaveReached ? " after-reached" : "") + " landed=" + landed
          + (deduplicated ? " dedup" : "") + (canRetry ? " can-retry" : " no-retry");
    }
  }

  /** Whether an attempt with this answer may have reached the server (and been applied). */
  static boolean mayHaveReached(Kind kind, Answer answer) {
    switch (answer) {
      case REFUSED:
      case THROTTLED:
      case UNAUTHORIZED:
      case FORBIDDEN:
      case NOT_FOUND:
      case AUTH_TIMEOUT:
      case CLIENT_ERROR:
        return false;
      case UNAVAILABLE:
        // On commits Iceberg reads 503 as "state unknown"; other mutations keep the usual meaning.
        return kind == Kind.SNAPSHOT || kind == Kind.PLAIN;
      default:
        return true;
    }
  }

  /**
   * Whether the guard must look at the catalog before {@link #decide}: a snapshot commit's table, or
   * what a create / drop / rename / register changes (a plain commit has nothing to recognise, a
   * stage-create nothing to look at).
   */
  static boolean needsReconciliation(Facts f) {
    if (f.kind == Kind.MUTATION) {
      return mutationNeedsLook(f);
    }
    if (f.kind != Kind.SNAPSHOT || !f.mayHaveReached()) {
      return false;
    }
    if (!f.answer.retryable()) {
      return true; // 409 / 500 / 400: was it ours?
    }
    // A retryable answer: with a de-duplicating server the retry replays the stored answer, so
    // only look when no retry is left; without one, look before repeating.
    return !f.deduplicated || !f.canRetry;
  }

  /**
   * A mutation that may have been applied is looked at, never repeated blindly, unless the catalog
   * de-duplicates it under the key: a lost or gateway answer, and any error answer after an attempt
   * that may have been applied (Polaris 1.7.0 answers a namespace create it already made 409).
   */
  private static boolean mutationNeedsLook(Facts f) {
    if (!f.mayHaveReached()) {
      return false;
    }
    if (f.answer.retryable()) {
      return !f.deduplicated || !f.canRetry;
    }
    return f.earlierMayHaveReached && f.answer != Answer.REDIRECT;
  }

  static Outcome decide(Facts f) {
    switch (f.kind) {
      case SNAPSHOT:
        return snapshotCommit(f);
      case PLAIN:
        return plainCommit(f);
      default:
        return mutation(f);
    }
  }

  private static Outcome snapshotCommit(Facts f) {
    if (f.landed == Landed.YES) {
      return Outcome.SUCCESS;
    }
    if (!f.mayHaveReached()) {
      // Nothing can have been applied: a refusal is final, the rest may be repeated.
      return f.answer.retryable() && f.canRetry ? Outcome.RETRY : Outcome.FAILED;
    }
    if (f.landed == Landed.NO) {
      return Outcome.FAILED; // the catalog proves ours can never land: Iceberg may clean up
    }
    // PENDING / UNKNOWN / NOT_CHECKED after a possible apply. Repeating is safe: the commit
    // carries its requirements, so it can never apply twice (a late twin answers 409).
    boolean repeatable = f.answer.retryable() || f.answer == Answer.CONFLICT;
    return repeatable && f.canRetry ? Outcome.RETRY : Outcome.UNKNOWN;
  }

  private static Outcome plainCommit(Facts f) {
    if (f.answer == Answer.CONFLICT) {
      return Outcome.FAILED; // adds no files: Iceberg's own refresh-and-retry runs
    }
    if (f.answer.retryable()) {
      if (f.canRetry) {
        return Outcome.RETRY;
      }
      return f.mayHaveReached() ? Outcome.UNKNOWN : Outcome.FAILED;
    }
    boolean refused = f.answer == Answer.BAD_REQUEST || f.answer == Answer.REDIRECT || f.answer.refusal();
    if (refused && !f.earlierMayHaveReached) {
      return Outcome.FAILED; // a first answer 4xx: the request itself was refused
    }
    return Outcome.UNKNOWN; // 500, or a 4xx after an attempt that may have been applied
  }

  private static Outcome mutation(Facts f) {
    if (f.kind == Kind.STAGE) {
      return f.answer.retryable() && f.canRetry ? Outcome.RETRY : Outcome.FAILED; // no server state
    }
    if (f.landed == Landed.YES) {
      return Outcome.SUCCESS; // the change is there: our lost answer's, reported once
    }
    if (!f.mayHaveReached()) {
      return f.answer.retryable() && f.canRetry ? Outcome.RETRY : Outcome.FAILED;
    }
    switch (f.landed) {
      case NOT_CHECKED: // a first error answer (Iceberg's mapping), or a de-duplicated keyed repeat
        return f.answer.retryable() && f.deduplicated && f.canRetry ? Outcome.RETRY : Outcome.FAILED;
      case NO:
        return Outcome.FAILED; // something else is there: a one-line conflict
      case PENDING:
        // Not visible: repeating is safe (if ours lands late, the repeat is answered 409 and looked at again).
        return f.answer.retryable() && f.canRetry ? Outcome.RETRY : Outcome.UNKNOWN;
      default:
        return Outcome.UNKNOWN; // may have landed: said so, never guessed
    }
  }

  /** One landed state for a transaction of several tables (all or nothing on the server). */
  static Landed combine(List<Landed> tables) {
    if (tables.isEmpty()) {
      return Landed.UNKNOWN;
    }
    if (tables.stream().allMatch(l -> l == Landed.YES)) {
      return Landed.YES;
    }
    if (tables.contains(Landed.YES) || tables.contains(Landed.UNKNOWN) || tables.contains(Landed.NOT_CHECKED)) {
      return Landed.UNKNOWN; // some landed, some not: cannot both be true of one transaction
    }
    return tables.contains(Landed.PENDING) ? Landed.PENDING : Landed.NO;
  }

  /**
   * One table's landed state from what its current metadata shows.
   *
   * @param create the commit creates the table (its fingerprint includes the UUID it assigned)
   * @param exists the table exists
   * @param uuidMatches for a create: the existing table has our UUID
   * @param found how many of our snapshot ids the table has
   * @param expected how many snapshot ids our commit added
   * @param requirementsHold every requirement of our commit still holds on the current metadata
   */
  static Landed landed(boolean create, boolean exists, boolean uuidMatches, int found, int expected,
      boolean requirementsHold) {
    if (!create && expected == 0) {
      return Landed.UNKNOWN; // nothing unique to look for
    }
    if (!exists) {
      return create ? Landed.PENDING : Landed.NO; // a dropped table: our commit asserts its UUID
    }
    if (create && !uuidMatches) {
      return Landed.NO; // someone else's table by that name: our assert-create can never pass
    }
    if (found == expected) {
      return Landed.YES;
    }
    if (found > 0) {
      return Landed.UNKNOWN; // partly there: expired since? never guess
    }
    return requirementsHold ? Landed.PENDING : Landed.NO;
  }
}
