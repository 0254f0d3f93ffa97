package io.catalogext.shim.commit;

import io.catalogext.shim.commit.CommitDecision.Answer;
import io.catalogext.shim.commit.CommitDecision.Facts;
import io.catalogext.shim.commit.CommitDecision.Kind;
import io.catalogext.shim.commit.CommitDecision.Landed;
import io.catalogext.shim.commit.CommitDecision.Outcome;
import io.catalogext.shim.config.Knobs;
import io.catalogext.shim.errors.CatalogRedirectException;
import io.catalogext.shim.util.Json;
import io.catalogext.shim.wire.TablePath;

import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.RESTException;
import org.apache.iceberg.rest.ErrorHandler;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Safe mutations for one catalog: every POST/DELETE the catalog's client sends goes through
 * {@link #mutate} (the request funnel's {@code MutationGuard} step).
 *
 * <ul>
 *   <li><b>Idempotency-Key</b> (UUIDv7) on every mutation when the server advertised {@code
 *       idempotency-key-lifetime} in {@code /v1/config} (captured from that answer); the
 *       same key for every retry of one logical operation (but a stage-create, which publishes
 *       nothing, gets a new key per attempt: lakekeeper#1959), a new key per operation, and no
 *       retry once the key may have expired on the server.
 *   <li><b>Retries</b> on connection errors, timeouts, 429 and 502/503/504, with exponential
 *       backoff, full jitter and a bounded total time. Terminal 4xx are never retried.
 *   <li><b>Reconciliation</b> of table commits ({@code POST .../tables/{t}} with an
 *       UpdateTableRequest, {@code POST .../transactions/commit}): after a lost, failed or
 *       conflicting answer the table is loaded and our commit recognised by what it added (the
 *       table UUID it assigned for a create, the snapshot ids it added: both random, so the check
 *       is exact). Landed: success, once. Not landed: a {@link CommitFailedException} (Iceberg
 *       cleans up its files only then). Undecidable: {@link CommitStateUnknownException}, which
 *       makes Iceberg keep every file.
 * </ul>
 *
 * <p>Nothing below the guard re-sends a mutation: the catalog's transport retries only GET and
 * HEAD and follows no redirect (Iceberg's own HTTPClient re-sends a POST on 429 and on 503 with
 * Retry-After), so the guard sees every answer to every attempt. Every 409 on a
 * commit, and every other 4xx after an attempt that may have been applied, is reconciled here
 * before Iceberg sees it (Iceberg would delete the files of a published snapshot: the
 * apache/iceberg#13867 corruption), so the decision is always ours.
 */
public final class CommitGuard {
  static final String IDEMPOTENCY_HEADER = "Idempotency-Key";
  static final String PROP_PREFIX = "catalog-ext.commit.";

  private static final SecureRandom RANDOM = new SecureRandom();
  // Process-wide: RFC 9562's monotonic UUIDv7 counter belongs to the JVM's clock, not to a catalog.
  private static final Object UUID_LOCK = new Object();
  private static long lastUuidMs = 0;
  private static long lastUuidSeq = 0;

  /** {@code catalog-ext.commit.idempotency}: when to send Idempotency-Key headers. */
  enum IdempotencyMode {
    AUTO, // only to servers that advertise idempotency-key-lifetime
    ALWAYS, // to every server (de-duplication is still only assumed where advertised)
    NEVER
  }

  // Settings (catalog properties catalog-ext.commit.*).
  // Defaults and ranges from the knob spec (Knobs), shared with PyIceberg.
  private volatile int maxAttempts = (int) Knobs.longValue(Map.of(), PROP_PREFIX + "max-attempts");
  private volatile long baseDelayMs = Knobs.longValue(Map.of(), PROP_PREFIX + "base-delay-ms");
  private volatile long maxDelayMs = Knobs.longValue(Map.of(), PROP_PREFIX + "max-delay-ms");
  private volatile long totalTimeoutMs = Knobs.longValue(Map.of(), PROP_PREFIX + "total-timeout-ms");
  private volatile IdempotencyMode idempotencyMode = IdempotencyMode.AUTO;
  /**
   * The longest key lifetime believed. The lifetime only bounds how long we may repeat under one
   * key, and no retry loop runs past total-timeout-ms (at most one day), so any clamp above
   * 1 day / 0.9 changes no decision; 7 days leaves room and keeps the millisecond arithmetic of
   * {@link #canRetry} far from overflow (P999999999D, PT9223372036854775807S).
   */
  static final Duration MAX_KEY_LIFETIME = Duration.ofDays(7);

  private volatile String lifetimeText;
  private volatile Duration lifetime;

  // Evidence (no secrets): what happened, for status and tests.
  private final AtomicLong mutations = new AtomicLong();
  private final AtomicLong keyed = new AtomicLong();
  /** Mutations whose key was Iceberg's own (1.11+), repeated instead of replaced. */
  private final AtomicLong reusedKeys = new AtomicLong();
  private final AtomicLong retries = new AtomicLong();
  private final AtomicLong reconciledLanded = new AtomicLong();
  private final AtomicLong reconciledNotLanded = new AtomicLong();
  private final AtomicLong reconciledPending = new AtomicLong();
  private final AtomicLong reconciledUnknown = new AtomicLong();
  private final List<String> events = Collections.synchronizedList(new ArrayList<>());

  /** A guard with the default settings; its catalog session owns it (one per catalog). */
  public CommitGuard() {}

  /**
   * Reads the {@code catalog-ext.commit.*} catalog properties.
   *
   * @throws IllegalArgumentException one line naming the bad setting and what it accepts
   */
  public void configure(Map<String, String> props) {
    Set<String> known = Knobs.names("commit");
    for (String name : props.keySet()) {
      if (name.startsWith(PROP_PREFIX) && !known.contains(name)) {
        throw new IllegalArgumentException("Unknown catalog property " + name + "; known: " + String.join(", ", known));
      }
    }
    maxAttempts = (int) Knobs.longValue(props, PROP_PREFIX + "max-attempts");
    baseDelayMs = Knobs.longValue(props, PROP_PREFIX + "base-delay-ms");
    maxDelayMs = Knobs.longValue(props, PROP_PREFIX + "max-delay-ms");
    totalTimeoutMs = Knobs.longValue(props, PROP_PREFIX + "total-timeout-ms");
    idempotencyMode = IdempotencyMode.valueOf(Knobs.choice(props, PROP_PREFIX + "idempotency").toUpperCase(Locale.ROOT));
  }

  public void setIdempotencyKeyLifetime(String text) {
    Duration parsed = null;
    if (text != null) {
      try {
        parsed = Duration.parse(text.trim().toUpperCase(Locale.ROOT));
      } catch (RuntimeException e) {
        parsed = null; // unparseable: keys may be sent, but the server is not trusted to de-duplicate
        event("unparseable idempotency-key-lifetime '" + text + "': reconciling as without idempotency");
      }
      if (parsed != null && (parsed.isNegative() || parsed.isZero())) {
        parsed = null;
      }
      if (parsed != null && parsed.compareTo(MAX_KEY_LIFETIME) > 0) {
        event("idempotency-key-lifetime '" + text + "' clamped to " + MAX_KEY_LIFETIME);
        parsed = MAX_KEY_LIFETIME;
      }
    }
    this.lifetimeText = text;
    this.lifetime = parsed;
  }

  /** Whether mutations carry an Idempotency-Key. */
  public boolean idempotencyEnabled() {
    return sendsKey(idempotencyMode, lifetimeText != null);
  }

  /** Whether mutations carry a key, given the mode and whether a lifetime is advertised (the table's "key"). */
  static boolean sendsKey(IdempotencyMode mode, boolean advertised) {
    switch (mode) {
      case ALWAYS:
        return true;
      case NEVER:
        return false;
      default:
        return advertised;
    }
  }

  /** The key lifetime believed (clamped), or null (tests). */
  Duration lifetime() {
    return lifetime;
  }

  /** Whether a keyed retry is answered from the server's key store: only where advertised. */
  public boolean deduplicating() {
    return idempotencyEnabled() && lifetime != null;
  }

  /** This guard's evidence (no secrets: counts and event lines). */
  public ObjectNode evidence() {
    ObjectNode n = Json.object();
    n.put("idempotency_key_lifetime", lifetimeText);
    n.put("idempotency", idempotencyEnabled());
    n.put("mutations", mutations.get());
    n.put("keyed", keyed.get());
    n.put("reused_iceberg_keys", reusedKeys.get());
    n.put("retries", retries.get());
    n.put("reconciled_landed", reconciledLanded.get());
    n.put("reconciled_not_landed", reconciledNotLanded.get());
    n.put("reconciled_pending", reconciledPending.get());
    n.put("reconciled_unknown", reconciledUnknown.get());
    synchronized (events) {
      events.forEach(n.putArray("events")::add);
    }
    return n;
  }

  /** Forgets the evidence (tests). */
  public void forgetEvidence() {
    mutations.set(0);
    keyed.set(0);
    reusedKeys.set(0);
    retries.set(0);
    reconciledLanded.set(0);
    reconciledNotLanded.set(0);
    reconciledPending.set(0);
    reconciledUnknown.set(0);
    events.clear();
  }

  /** A line of evidence from the catalog's other safeguards (e.g. a config URL not followed). */
  public void note(String text) {
    event(text);
  }

  private void event(String text) {
    synchronized (events) {
      if (events.size() >= 200) {
        events.remove(0);
      }
      events.add(text);
    }
  }

  /** One attempt of the request, with these headers and this error handler. */
  public interface Attempt<T> {
    T send(Map<String, String> headers, Consumer<ErrorResponse> errorHandler);
  }

  /** A mutation as the funnel's {@code MutationGuard} step hands it over. */
  public static final class Request {
    final String method;
    final String path;
    final RESTRequest body;
    final Map<String, String> headers;
    final Consumer<ErrorResponse> errorHandler;
    final RESTClient reader; // the undecorated client, for reconciliation reads

    public Request(String method, String path, RESTRequest body, Map<String, String> headers,
        Consumer<ErrorResponse> errorHandler, RESTClient reader) {
      this.method = method;
      this.path = path;
      this.body = body;
      this.headers = headers == null ? Map.of() : headers;
      this.errorHandler = errorHandler;
      this.reader = reader;
    }

    String what() {
      return method + " " + shortPath(path);
    }
  }

  /** Thrown from our error-handler wrapper to take over a response before Iceberg maps it. */
  private static final class Intercepted extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final ErrorResponse error;

    Intercepted(ErrorResponse error) {
      super(null, null, false, false);
      this.error = error;
    }
  }

  /** A failed attempt: an HTTP error we intercepted or a transport failure. */
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

  /** The result of loading the table(s) after a failed attempt. */
  private static final class Reconciliation {
    static final Reconciliation NOT_CHECKED = new Reconciliation(Landed.NOT_CHECKED, null);
    final Landed landed;
    final LoadTableResponse loaded; // the table as loaded, when one table commit landed

    Reconciliation(Landed landed, LoadTableResponse loaded) {
      this.landed = landed;
      this.loaded = loaded;
    }
  }

  /** Sends a mutation: retries, Idempotency-Key and reconciliation as {@link CommitDecision} says. */

  /** Sends a mutation: retries, Idempotency-Key and reconciliation as {@link CommitDecision} says. */
  @SuppressWarnings("unchecked")
  public <T> T mutate(Request req, Attempt<T> attempt) {
    Kind kind = classify(req.method, req.path, req.body);
    Map<String, String> headers = new HashMap<>(req.headers);
    // Iceberg 1.11+ sends its own key where the server advertises a lifetime (a new one per call):
    // that key is this logical operation's, so it is the one every retry below repeats, never a
    // second key beside it (header names are case-insensitive).
    String icebergKey = removeKeys(headers);
    if (idempotencyEnabled()) {
      headers.put(IDEMPOTENCY_HEADER, icebergKey != null ? icebergKey : uuid7().toString());
      keyed.incrementAndGet();
      if (icebergKey != null) {
        reusedKeys.incrementAndGet();
      }
    }
    boolean deduplicated = deduplicating();
    mutations.incrementAndGet();
    long started = System.nanoTime();
    boolean mayHaveReached = false; // some earlier attempt may have reached the server
    // A snapshot commit answered 429 before: a refusal after it is no proof that nothing was
    // applied (a gateway may have forwarded the throttled copy), so the table decides.
    boolean throttledBefore = false;
    for (int n = 1; ; n++) {
      Failure failure;
      boolean earlier = mayHaveReached || throttledBefore;
      try {
        return attempt.send(headers, interceptor(kind, req.errorHandler, earlier));
      } catch (Intercepted e) {
        Answer answer = Answer.ofStatus(e.error.code());
        failure = new Failure(answer == null ? Answer.SERVER_ERROR : answer, e.error, null);
      } catch (CatalogRedirectException e) {
        failure = new Failure(Answer.REDIRECT, null, e);
      } catch (RESTException e) {
        if (ioCause(e) != null) {
          failure = new Failure(transportAnswer(ioCause(e)), null, e);
        } else {
          throw e;
        }
      }
      event(req.what() + " attempt " + n + ": " + failure.cause() + (headers.containsKey(IDEMPOTENCY_HEADER) ? " (keyed)" : ""));
      long delay = backoff(n);
      boolean refusedAfterThrottle = throttledBefore && failure.answer.refusal();
      Facts facts = new Facts(kind, failure.answer, mayHaveReached || refusedAfterThrottle, Landed.NOT_CHECKED,
          deduplicated, canRetry(n, started, delay, deduplicated));
      Reconciliation rec = Reconciliation.NOT_CHECKED;
      if (CommitDecision.needsReconciliation(facts)) {
        rec = reconcile(req, headers);
      }
      facts = facts.withLanded(rec.landed);
      Outcome outcome = CommitDecision.decide(facts);
      event(req.what() + ": " + facts + " -> " + outcome);
      switch (outcome) {
        case RETRY:
          mayHaveReached = facts.mayHaveReached();
          throttledBefore |= kind == Kind.SNAPSHOT_COMMIT && failure.answer == Answer.THROTTLED;
          retries.incrementAndGet();
          if (kind == Kind.STAGE && headers.containsKey(IDEMPOTENCY_HEADER)) {
            // A stage-create publishes nothing, so repeating it needs no replay, and a replay is
            // what breaks: Lakekeeper 0.13 answers a staged create repeated under its key with
            // 500 (lakekeeper#1959). Each attempt gets its own key.
            headers.put(IDEMPOTENCY_HEADER, uuid7().toString());
          }
          sleep(delay);
          break;
        case SUCCESS:
          event("commit " + shortPath(req.path) + " landed: reported once as success");
          return (T) rec.loaded; // null for a transaction (204)
        case UNKNOWN:
          throw unknown(req.what(), n, failure);
        default:
          throw failed(kind, req, failure, n);
      }
    }
  }

  /** Removes every Idempotency-Key header, whatever its case; returns the (last) value, or null. */
  private static String removeKeys(Map<String, String> headers) {
    String value = null;
    for (java.util.Iterator<Map.Entry<String, String>> it = headers.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<String, String> h = it.next();
      if (IDEMPOTENCY_HEADER.equalsIgnoreCase(h.getKey())) {
        value = h.getValue();
        it.remove();
      }
    }
    return value;
  }

  private ErrorHandler interceptor(Kind kind, Consumer<ErrorResponse> errorHandler, boolean earlierMayHaveReached) {
    return new GuardedErrors(errorHandler, code -> intercepts(kind, code, earlierMayHaveReached));
  }

  /**
   * The caller's error handler with the guard in front: the answers the guard decides are taken
   * over, the rest go to the caller's handler. An {@link ErrorHandler} itself, parsing bodies as the
   * caller's does, so an error the guard leaves to Iceberg keeps its Iceberg type and message.
   */
  static final class GuardedErrors extends ErrorHandler {
    private final Consumer<ErrorResponse> handler;
    private final java.util.function.IntPredicate intercepted;

    GuardedErrors(Consumer<ErrorResponse> handler, java.util.function.IntPredicate intercepted) {
      this.handler = handler;
      this.intercepted = intercepted;
    }

    @Override
    public ErrorResponse parseResponse(int code, String json) {
      if (handler instanceof ErrorHandler) {
        return ((ErrorHandler) handler).parseResponse(code, json);
      }
      return ErrorResponse.builder().responseCode(code).withMessage(json).build(); // what Iceberg's client does then
    }

    @Override
    public void accept(ErrorResponse error) {
      if (intercepted.test(error.code())) {
        throw new Intercepted(error);
      }
      handler.accept(error);
    }
  }

  boolean canRetry(int attempt, long startedNanos, long delayMs, boolean deduplicated) {
    long elapsedMs = (System.nanoTime() - startedNanos) / 1_000_000;
    boolean keyAlive = !deduplicated || elapsedMs + delayMs < 0.9 * lifetime.toMillis(); // never repeat a forgotten key
    return attempt < maxAttempts && elapsedMs + delayMs <= totalTimeoutMs && keyAlive;
  }

  private static Answer transportAnswer(IOException io) {
    boolean notSent = io instanceof ConnectException
        || io instanceof UnknownHostException
        || io instanceof NoRouteToHostException;
    return notSent ? Answer.NOT_SENT : Answer.LOST;
  }

  /** FAILED: the server's own answer through Iceberg's handler, or "did not land". */
  private RuntimeException failed(Kind kind, Request req, Failure failure, int attempts) {
    if (failure.answer == Answer.REDIRECT) {
      // Not a CommitFailedException: Iceberg would repeat the commit into the same redirect. This
      // one is no CleanableFailure either, so a strict-cleanup commit keeps its files.
      return failure.exception != null
          ? failure.exception
          : new CatalogRedirectException(failure.error.code(), req.method, req.path, null);
    }
    boolean commit = kind == Kind.SNAPSHOT_COMMIT || kind == Kind.PLAIN_COMMIT;
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
    boolean commit = kind == Kind.SNAPSHOT_COMMIT || kind == Kind.PLAIN_COMMIT;
    // After an attempt that may have been applied, every non-2xx on a commit is ours to decide
    // (a 401/403/404 handed to Iceberg would make it delete the files of a published snapshot).
    boolean anyAfterReached = commit && earlierMayHaveReached && code >= 400;
    // A redirect (only seen here if the HTTP client did not refuse it itself) is never Iceberg's
    // to map: its handler would call it "Unable to process" without the target.
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

  private CommitStateUnknownException unknown(String what, int attempts, Failure failure) {
    String answer = failure.answer == Answer.REDIRECT ? "answered with a redirect" : "'s answer was lost";
    return new CommitStateUnknownException(
        new RuntimeException(
            String.format(
                "%s: the catalog%s (%s, %d attempt(s)) and the table does not show"
                    + " whether the commit landed; no files were deleted, check the table before"
                    + " retrying",
                what, answer, failure.cause(), attempts)));
  }

  private long backoff(int attempt) {
    long ceiling = Math.min(maxDelayMs, baseDelayMs * (1L << Math.min(20, attempt - 1)));
    return ceiling <= 0 ? 0 : ThreadLocalRandom.current().nextLong(ceiling + 1); // full jitter
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CommitStateUnknownException(new RuntimeException("interrupted while retrying a commit"));
    }
  }

  private static Kind classify(String method, String path, RESTRequest body) {
    if ("POST".equals(method) && body instanceof UpdateTableRequest && isTablePath(path)) {
      return fingerprint((UpdateTableRequest) body).empty() ? Kind.PLAIN_COMMIT : Kind.SNAPSHOT_COMMIT;
    }
    if ("POST".equals(method) && body instanceof CommitTransactionRequest) {
      boolean any = ((CommitTransactionRequest) body).tableChanges().stream().anyMatch(c -> !fingerprint(c).empty());
      return any ? Kind.SNAPSHOT_COMMIT : Kind.PLAIN_COMMIT;
    }
    if ("POST".equals(method) && body instanceof CreateTableRequest && ((CreateTableRequest) body).stageCreate()) {
      return Kind.STAGE;
    }
    return Kind.MUTATION;
  }

  // ------------------------------------------------------------------ reconciliation

  /** What our commit would have added: the UUID it assigned (creates) and snapshot ids. */
  private static final class Fingerprint {
    boolean create;
    String uuid;
    final Set<Long> snapshotIds = new HashSet<>();

    boolean empty() {
      return uuid == null && snapshotIds.isEmpty();
    }
  }

  private static Fingerprint fingerprint(UpdateTableRequest request) {
    Fingerprint f = new Fingerprint();
    f.create =
        request.requirements().stream()
            .anyMatch(r -> r instanceof UpdateRequirement.AssertTableDoesNotExist);
    for (MetadataUpdate u : request.updates()) {
      if (f.create && u instanceof MetadataUpdate.AssignUUID) {
        f.uuid = ((MetadataUpdate.AssignUUID) u).uuid(); // random: ours alone
      } else if (u instanceof MetadataUpdate.AddSnapshot) {
        Snapshot s = ((MetadataUpdate.AddSnapshot) u).snapshot();
        f.snapshotIds.add(s.snapshotId()); // random 64-bit: ours alone
      }
    }
    return f;
  }

  private Reconciliation reconcile(Request req, Map<String, String> headers) {
    Reconciliation result;
    if (req.body instanceof UpdateTableRequest) {
      result = reconcileTable(req.path, (UpdateTableRequest) req.body, headers, req.reader);
    } else if (req.body instanceof CommitTransactionRequest) {
      List<Landed> tables = new ArrayList<>();
      for (UpdateTableRequest change : ((CommitTransactionRequest) req.body).tableChanges()) {
        String tablePath = TablePath.forTransactionChange(req.path, change.identifier());
        tables.add(tablePath == null ? Landed.UNKNOWN : reconcileTable(tablePath, change, headers, req.reader).landed);
      }
      result = new Reconciliation(CommitDecision.combine(tables), null);
    } else {
      result = new Reconciliation(Landed.UNKNOWN, null);
    }
    switch (result.landed) {
      case YES:
        reconciledLanded.incrementAndGet();
        break;
      case NO:
        reconciledNotLanded.incrementAndGet();
        break;
      case PENDING:
        reconciledPending.incrementAndGet();
        break;
      default:
        reconciledUnknown.incrementAndGet();
    }
    event("reconcile " + shortPath(req.path) + ": " + result.landed);
    return result;
  }

  private Reconciliation reconcileTable(
      String tablePath, UpdateTableRequest request, Map<String, String> headers, RESTClient reader) {
    Fingerprint f = fingerprint(request);
    if (f.empty()) {
      return new Reconciliation(Landed.UNKNOWN, null);
    }
    LoadTableResponse loaded;
    try {
      loaded = load(tablePath, headers, reader);
    } catch (NoSuchTableException e) {
      loaded = null;
    } catch (RuntimeException e) {
      return new Reconciliation(Landed.UNKNOWN, null);
    }
    TableMetadata current = loaded == null ? null : loaded.tableMetadata();
    int found = 0;
    for (long id : f.snapshotIds) {
      if (current != null && current.snapshot(id) != null) {
        found++;
      }
    }
    Landed landed = CommitDecision.landed(f.create, current != null,
        current != null && f.uuid != null && f.uuid.equals(current.uuid()), found, f.snapshotIds.size(),
        current != null && requirementsHold(request, current));
    return new Reconciliation(landed, landed == Landed.YES ? loaded : null);
  }

  /** Iceberg's own check of a commit's requirements against metadata (as the server runs it). */
  private static boolean requirementsHold(UpdateTableRequest request, TableMetadata current) {
    try {
      for (UpdateRequirement r : request.requirements()) {
        r.validate(current);
      }
      return true;
    } catch (CommitFailedException e) {
      return false;
    }
  }

  private LoadTableResponse load(String tablePath, Map<String, String> headers, RESTClient reader) {
    Map<String, String> readHeaders = new HashMap<>(headers);
    readHeaders.remove(IDEMPOTENCY_HEADER);
    RuntimeException last = null;
    for (int i = 0; i < 3; i++) {
      try {
        return reader.get(
            tablePath, Map.of(), LoadTableResponse.class, readHeaders, ErrorHandlers.tableErrorHandler());
      } catch (NoSuchTableException e) {
        throw e;
      } catch (RuntimeException e) {
        last = e;
        sleep(backoff(i + 1));
      }
    }
    throw last;
  }

  // ------------------------------------------------------------------ paths

  private static boolean isTablePath(String path) {
    TablePath p = TablePath.parse(path);
    return p != null && p.isTable();
  }

  private static String tableName(String path) {
    TablePath p = TablePath.parse(path);
    return p != null && p.isTable() ? p.displayName() : "the tables";
  }

  private static String shortPath(String path) {
    return path.split("\\?", 2)[0];
  }

  // ------------------------------------------------------------------ keys

  /** RFC 9562 UUIDv7: 48-bit Unix ms, version 7, variant 10, random bits; monotonic per JVM. */
  static UUID uuid7() {
    long ms;
    long seq;
    synchronized (UUID_LOCK) {
      ms = System.currentTimeMillis();
      if (ms <= lastUuidMs) {
        ms = lastUuidMs;
        seq = lastUuidSeq + 1;
        if (seq > 0xFFF) {
          ms++;
          seq = RANDOM.nextInt(0x800);
        }
      } else {
        seq = RANDOM.nextInt(0x800);
      }
      lastUuidMs = ms;
      lastUuidSeq = seq;
    }
    long msb = ((ms & 0xFFFFFFFFFFFFL) << 16) | (0x7L << 12) | (seq & 0xFFF);
    long lsb = (RANDOM.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
    return new UUID(msb, lsb);
  }
}
