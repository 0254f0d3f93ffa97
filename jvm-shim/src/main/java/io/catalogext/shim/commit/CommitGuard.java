package io.catalogext.shim.commit;

import io.catalogext.shim.commit.CommitDecision.Answer;
import io.catalogext.shim.commit.CommitDecision.Facts;
import io.catalogext.shim.commit.CommitDecision.Kind;
import io.catalogext.shim.commit.CommitDecision.Landed;
import io.catalogext.shim.commit.CommitDecision.Outcome;
import io.catalogext.shim.errors.CatalogRedirectException;
import io.catalogext.shim.wire.TablePath;

import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.RESTException;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Safe mutations for one catalog: every POST/DELETE the catalog's client sends goes through
 * {@link #mutate} (the request funnel's mutation step), attempt after attempt until
 * {@link CommitDecision} says what the evidence means.
 *
 * <ul>
 *   <li><b>Idempotency-Key</b> (UUIDv7, {@link IdempotencyKeys}) on every mutation when the server
 *       advertised {@code idempotency-key-lifetime} in {@code /v1/config}, as {@link CommitPolicy}
 *       says; the same key for every retry of one logical operation (but a stage-create, which
 *       publishes nothing, gets a new key per attempt: lakekeeper#1959), a new key per operation,
 *       and no retry once the key may have expired on the server.
 *   <li><b>Retries</b> on connection errors, timeouts, 429 and 502/503/504, with exponential
 *       backoff, full jitter and a bounded total time ({@link CommitPolicy}). Terminal 4xx are
 *       never retried.
 *   <li><b>Reconciliation</b> of table commits ({@link Reconciler}): after a lost, failed or
 *       conflicting answer. Landed: success, once. Not landed: a {@link CommitFailedException}
 *       (Iceberg cleans up its files only then). Undecidable: {@link CommitStateUnknownException},
 *       which makes Iceberg keep every file.
 * </ul>
 *
 * <p>Nothing below the guard re-sends a mutation: the catalog's transport retries only GET and
 * HEAD and follows no redirect (Iceberg's own HTTPClient re-sends a POST on 429 and on 503 with
 * Retry-After), so the guard sees every answer to every attempt. Every 409 on a commit, and every
 * other 4xx after an attempt that may have been applied, is reconciled here before Iceberg sees
 * it (Iceberg would delete the files of a published snapshot: the apache/iceberg#13867
 * corruption), so the decision is always ours. What happened is kept as {@link CommitEvidence}.
 */
public final class CommitGuard {
  private volatile CommitPolicy policy = CommitPolicy.defaults();
  private final IdempotencyKeys keys = new IdempotencyKeys();
  private final CommitEvidence evidence = new CommitEvidence();
  private final Reconciler reconciler = new Reconciler(evidence, attempt -> policy.backoffMs(attempt));

  /** A guard with the default policy; its catalog session owns it (one per catalog). */
  public CommitGuard() {}

  /**
   * Reads the {@code catalog-ext.commit.*} catalog properties.
   *
   * @throws IllegalArgumentException one line naming the bad setting and what it accepts
   */
  public void configure(Map<String, String> props) {
    policy = CommitPolicy.fromProperties(props);
  }

  /** The lifetime {@code /v1/config} advertised for Idempotency-Keys, or null. */
  public void setIdempotencyKeyLifetime(String text) {
    String note = keys.advertise(text);
    if (note != null) {
      evidence.event(note);
    }
  }

  /** Whether mutations carry an Idempotency-Key. */
  public boolean idempotencyEnabled() {
    return policy.sendsKeys(keys.advertised());
  }

  /** Whether a keyed retry is answered from the server's key store: only where advertised. */
  public boolean deduplicating() {
    return idempotencyEnabled() && keys.lifetime() != null;
  }

  /** This guard's evidence (no secrets: counts and event lines). */
  public ObjectNode evidence() {
    return evidence.toJson(keys.advertisedText(), idempotencyEnabled());
  }

  /** Forgets the evidence (tests). */
  public void forgetEvidence() {
    evidence.forget();
  }

  /** A line of evidence from the catalog's other safeguards. */
  public void note(String text) {
    evidence.event(text);
  }

  /** One attempt of the request, with these headers and this error handler. */
  public interface Attempt<T> {
    T send(Map<String, String> headers, Consumer<ErrorResponse> errorHandler);
  }

  /** A failed attempt: an HTTP error the guard took over, or a transport failure. */
  private static final class Failure {
    final Answer answer;
    final ErrorResponse error; // or null
    final RuntimeException exception; // or null

    Failure(Answer answer, ErrorResponse error, RuntimeException exception) {
      this.answer = answer;
      this.error = error;
      this.exception = exception;
    }

    String cause() {
      if (exception instanceof CatalogRedirectException) {
        CatalogRedirectException redirect = (CatalogRedirectException) exception;
        return "HTTP " + redirect.status + " redirect to " + redirect.target + ", not followed";
      }
      return error != null ? "HTTP " + error.code() : ioCause(exception).getClass().getSimpleName();
    }
  }

  /** Sends a mutation: retries, Idempotency-Key and reconciliation as {@link CommitDecision} says. */
  @SuppressWarnings("unchecked")
  public <T> T mutate(Mutation req, Attempt<T> attempt) {
    CommitPolicy policy = this.policy; // one policy for the whole operation
    Kind kind = classify(req.method, req.path, req.body);
    Map<String, String> headers = new HashMap<>(req.headers);
    // Iceberg 1.11+ sends its own key where the server advertises a lifetime (a new one per call):
    // that key is this logical operation's, so it is the one every retry below repeats, never a
    // second key beside it (header names are case-insensitive).
    String icebergKey = IdempotencyKeys.removeFrom(headers);
    if (policy.sendsKeys(keys.advertised())) {
      headers.put(IdempotencyKeys.HEADER, icebergKey != null ? icebergKey : IdempotencyKeys.uuid7().toString());
      evidence.keyed.incrementAndGet();
      if (icebergKey != null) {
        evidence.reusedKeys.incrementAndGet();
      }
    }
    boolean deduplicated = policy.sendsKeys(keys.advertised()) && keys.lifetime() != null
        && policy.deduplicates(DeduplicatedOperations.of(req));
    evidence.mutations.incrementAndGet();
    long started = System.nanoTime();
    boolean mayHaveReached = false; // some earlier attempt may have reached the server
    // A snapshot commit answered 429 before: a refusal after it is no proof that nothing was
    // applied (a gateway may have forwarded the throttled copy), so the table decides.
    boolean throttledBefore = false;
    for (int n = 1; ; n++) {
      Failure failure;
      boolean earlier = mayHaveReached || throttledBefore;
      try {
        return attempt.send(headers, new GuardedErrors(req.errorHandler, code -> intercepts(kind, code, earlier)));
      } catch (GuardedErrors.Intercepted e) {
        Answer answer = Answer.ofStatus(e.error.code());
        failure = new Failure(answer == null ? Answer.SERVER_ERROR : answer, e.error, null);
      } catch (CatalogRedirectException e) {
        failure = new Failure(Answer.REDIRECT, null, e);
      } catch (RESTException e) {
        if (ioCause(e) == null) {
          throw e;
        }
        failure = new Failure(transportAnswer(ioCause(e)), null, e);
      }
      evidence.event(req.what() + " attempt " + n + ": " + failure.cause()
          + (headers.containsKey(IdempotencyKeys.HEADER) ? " (keyed)" : ""));
      long delay = policy.backoffMs(n);
      boolean refusedAfterThrottle = throttledBefore && failure.answer.refusal();
      Facts facts = new Facts(kind, failure.answer, mayHaveReached || refusedAfterThrottle, Landed.NOT_CHECKED,
          deduplicated, canRetry(policy, n, started, delay, deduplicated));
      Reconciler.Result rec = Reconciler.Result.NOT_CHECKED;
      if (CommitDecision.needsReconciliation(facts)) {
        rec = kind == Kind.MUTATION
            ? reconciler.recorded(req, MutationLook.look(req, headers))
            : reconciler.reconcile(req, headers);
      }
      facts = facts.withLanded(rec.landed);
      Outcome outcome = CommitDecision.decide(facts);
      evidence.event(req.what() + ": " + facts + " -> " + outcome);
      switch (outcome) {
        case RETRY:
          mayHaveReached = facts.mayHaveReached();
          throttledBefore |= kind == Kind.SNAPSHOT && failure.answer == Answer.THROTTLED;
          evidence.retries.incrementAndGet();
          if (kind == Kind.STAGE && headers.containsKey(IdempotencyKeys.HEADER)) {
            // A stage-create publishes nothing, so repeating it needs no replay, and a replay is
            // what breaks: Lakekeeper 0.13 answers a staged create repeated under its key with
            // 500 (lakekeeper#1959). Each attempt gets its own key.
            headers.put(IdempotencyKeys.HEADER, IdempotencyKeys.uuid7().toString());
          }
          CommitPolicy.sleep(delay);
          break;
        case SUCCESS:
          evidence.event((kind == Kind.MUTATION ? req.what() : "commit " + req.shortPath())
              + " landed: reported once as success");
          return (T) rec.loaded; // null for a transaction (204), a drop or a rename
        case UNKNOWN:
          throw unknown(req.what(), n, failure, rec.seen);
        default:
          throw kind == Kind.MUTATION && rec.landed == Landed.NO
              ? conflict(req, failure, rec.seen)
              : failed(kind, req, failure, n);
      }
    }
  }

  /** Whether another attempt fits the policy's bounds and, for a de-duplicated key, its lifetime. */
  boolean canRetry(CommitPolicy policy, int attempt, long startedNanos, long delayMs, boolean deduplicated) {
    long elapsedMs = (System.nanoTime() - startedNanos) / 1_000_000;
    boolean keyAlive = !deduplicated || keys.alive(elapsedMs, delayMs); // never repeat a forgotten key
    return policy.allowsAnother(attempt, elapsedMs, delayMs) && keyAlive;
  }

  /** The key lifetime believed (clamped), or null (tests). */
  java.time.Duration lifetime() {
    return keys.lifetime();
  }

  private static Answer transportAnswer(IOException io) {
    boolean notSent = io instanceof ConnectException
        || io instanceof UnknownHostException
        || io instanceof NoRouteToHostException;
    return notSent ? Answer.REFUSED : Answer.LOST;
  }

  /** FAILED: the server's own answer through Iceberg's handler, or "did not land". */
  private static RuntimeException failed(Kind kind, Mutation req, Failure failure, int attempts) {
    if (failure.answer == Answer.REDIRECT) {
      // Not a CommitFailedException: Iceberg would repeat the commit into the same redirect. This
      // one is no CleanableFailure either, so a strict-cleanup commit keeps its files.
      return failure.exception != null
          ? failure.exception
          : new CatalogRedirectException(failure.error.code(), req.method, req.path, null);
    }
    boolean commit = kind == Kind.SNAPSHOT || kind == Kind.PLAIN;
    if (commit && failure.answer.retryable()) {
      return new CommitFailedException(
          "Commit to %s did not land: the catalog answered %s %d time(s) without applying it;"
              + " nothing was published",
          tableName(req.path), failure.cause(), attempts);
    }
    if (failure.error == null) {
      return failure.exception;
    }
    req.errorHandler.accept(failure.error); // Iceberg's mapping: 409 -> CommitFailedException, ...
    return new IllegalStateException("error handler did not throw for " + failure.error.code());
  }

  /** Whether the guard decides this error answer (else Iceberg's own error handler does). */
  static boolean intercepts(Kind kind, int code, boolean earlierMayHaveReached) {
    boolean commit = kind == Kind.SNAPSHOT || kind == Kind.PLAIN;
    // After an attempt that may have been applied, every non-2xx on a commit is ours to decide
    // (a 401/403/404 handed to Iceberg would make it delete the files of a published snapshot).
    // So on a create, drop or rename: a 409 or 404 after a lost attempt may be that attempt's own
    // doing, and is looked at (MutationLook).
    boolean anyAfterReached = (commit || kind == Kind.MUTATION) && earlierMayHaveReached && code >= 400;
    // A redirect (only seen here if the transport did not refuse it itself) is never Iceberg's to
    // map: its handler would call it "Unable to process" without the target.
    if (CatalogRedirectException.isRedirect(code)) {
      return true;
    }
    // Every 5xx on a commit may have been applied first (CommitDecision.Answer.ofStatus): a 501/505
    // handed to Iceberg would end the job although the commit may be published (table row 501-*).
    return retryableStatus(code) || anyAfterReached || (commit && (code == 400 || code == 409 || code >= 500));
  }

  private static boolean retryableStatus(int code) {
    return code == 429 || code == 502 || code == 503 || code == 504;
  }

  private static IOException ioCause(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof IOException) {
        return (IOException) t;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  /** A mutation whose answer was lost, and something else is there: one line, Iceberg's type for it. */
  private static RuntimeException conflict(Mutation req, Failure failure, String seen) {
    String text = String.format("%s: the catalog's answer was lost (%s) and %s; nothing was repeated,"
        + " check the name", req.what(), failure.cause(), seen);
    if (seen != null && seen.contains("neither the source nor the target")) {
      return new NoSuchTableException("%s", text);
    }
    return new AlreadyExistsException("%s", text);
  }

  private static CommitStateUnknownException unknown(String what, int attempts, Failure failure, String seen) {
    if (seen != null) { // a mutation: said in its own words
      return new CommitStateUnknownException(new RuntimeException(String.format(
          "%s: the catalog's answer was lost (%s, %d attempt(s)) and %s; the change may have been applied:"
              + " check before repeating it", what, failure.cause(), attempts, seen)));
    }
    String answer = failure.answer == Answer.REDIRECT ? "answered with a redirect" : "'s answer was lost";
    return new CommitStateUnknownException(
        new RuntimeException(
            String.format(
                "%s: the catalog%s (%s, %d attempt(s)) and the table does not show"
                    + " whether the commit landed; no files were deleted, check the table before"
                    + " retrying",
                what, answer, failure.cause(), attempts)));
  }

  private static Kind classify(String method, String path, RESTRequest body) {
    if ("POST".equals(method) && body instanceof UpdateTableRequest && isTablePath(path)) {
      return Reconciler.fingerprint((UpdateTableRequest) body).empty() ? Kind.PLAIN : Kind.SNAPSHOT;
    }
    if ("POST".equals(method) && body instanceof CommitTransactionRequest) {
      boolean any = ((CommitTransactionRequest) body).tableChanges().stream()
          .anyMatch(c -> !Reconciler.fingerprint(c).empty());
      return any ? Kind.SNAPSHOT : Kind.PLAIN;
    }
    if ("POST".equals(method) && body instanceof CreateTableRequest && ((CreateTableRequest) body).stageCreate()) {
      return Kind.STAGE;
    }
    return Kind.MUTATION;
  }

  private static boolean isTablePath(String path) {
    TablePath p = TablePath.parse(path);
    return p != null && p.isTable();
  }

  private static String tableName(String path) {
    TablePath p = TablePath.parse(path);
    return p != null && p.isTable() ? p.displayName() : "the tables";
  }
}
