package io.catalogext.shim;

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
import java.util.WeakHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.RESTException;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Safe mutations for one catalog: every POST/DELETE that {@link ObservingRESTClient} forwards goes
 * through {@link #mutate}.
 *
 * <ul>
 *   <li><b>Idempotency-Key</b> (UUIDv7) on every mutation when the server advertised {@code
 *       idempotency-key-lifetime} in {@code /v1/config} (captured by {@link ConfigCapture}); the
 *       same key for every retry of one logical operation, a new key per operation, and no retry
 *       once the key may have expired on the server.
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
 * <p>Iceberg's own HTTPClient also retries, below us: POSTs on 429, and on 503 with Retry-After
 * (IOExceptions and 500/502/504 only for idempotent methods). Such a hidden retry of a commit that
 * did land comes back as 409 (its requirements no longer hold) — the apache/iceberg#13867
 * corruption, where Iceberg then deletes the files of a published snapshot. Every 409 on a commit
 * is therefore reconciled here before Iceberg sees it, so the decision is always ours.
 */
public final class CommitGuard {
  static final String IDEMPOTENCY_HEADER = "Idempotency-Key";
  static final String PROP_PREFIX = "catalog-ext.commit.";

  private static final Map<ObservingRESTClient.CatalogState, CommitGuard> GUARDS =
      Collections.synchronizedMap(new WeakHashMap<>());
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Object UUID_LOCK = new Object();
  private static long lastUuidMs = 0;
  private static long lastUuidSeq = 0;

  private final ObservingRESTClient.CatalogState state;
  // Settings (catalog properties catalog-ext.commit.*).
  private volatile int maxAttempts = 5;
  private volatile long baseDelayMs = 200;
  private volatile long maxDelayMs = 5_000;
  private volatile long totalTimeoutMs = 60_000;
  private volatile String idempotencyMode = "auto"; // auto | always | never
  private volatile String lifetimeText;
  private volatile Duration lifetime;

  // Evidence (no secrets): what happened, for status and tests.
  private final AtomicLong mutations = new AtomicLong();
  private final AtomicLong keyed = new AtomicLong();
  private final AtomicLong retries = new AtomicLong();
  private final AtomicLong reconciledLanded = new AtomicLong();
  private final AtomicLong reconciledNotLanded = new AtomicLong();
  private final AtomicLong reconciledUnknown = new AtomicLong();
  private final List<String> events = Collections.synchronizedList(new ArrayList<>());

  private CommitGuard(ObservingRESTClient.CatalogState state) {
    this.state = state;
  }

  static CommitGuard of(ObservingRESTClient.CatalogState state) {
    synchronized (GUARDS) {
      return GUARDS.computeIfAbsent(state, CommitGuard::new);
    }
  }

  /** Reads {@code catalog-ext.commit.*} catalog properties; unknown or bad values keep defaults. */
  static void configure(ObservingRESTClient.CatalogState state, Map<String, String> props) {
    CommitGuard g = of(state);
    g.maxAttempts = (int) Math.max(1, longProp(props, "max-attempts", g.maxAttempts));
    g.baseDelayMs = Math.max(0, longProp(props, "base-delay-ms", g.baseDelayMs));
    g.maxDelayMs = Math.max(0, longProp(props, "max-delay-ms", g.maxDelayMs));
    g.totalTimeoutMs = Math.max(0, longProp(props, "total-timeout-ms", g.totalTimeoutMs));
    String mode = props.get(PROP_PREFIX + "idempotency");
    if (mode != null && (mode.equals("auto") || mode.equals("always") || mode.equals("never"))) {
      g.idempotencyMode = mode;
    }
  }

  private static long longProp(Map<String, String> props, String name, long dflt) {
    String v = props.get(PROP_PREFIX + name);
    if (v == null) {
      return dflt;
    }
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      return dflt;
    }
  }

  void setIdempotencyKeyLifetime(String text) {
    Duration parsed = null;
    if (text != null) {
      try {
        parsed = Duration.parse(text.trim().toUpperCase(Locale.ROOT));
      } catch (RuntimeException e) {
        parsed = null; // unparseable: keys are still sent, but never retried past a guess
      }
    }
    this.lifetimeText = text;
    this.lifetime = parsed;
  }

  boolean idempotencyEnabled() {
    switch (idempotencyMode) {
      case "always":
        return true;
      case "never":
        return false;
      default:
        return lifetimeText != null;
    }
  }

  /** JSON evidence for every catalog in this JVM (Python: {@code CommitGuard.describe()}). */
  public static String describe() {
    ObjectNode out = Json.object();
    List<CommitGuard> guards;
    synchronized (GUARDS) {
      guards = new ArrayList<>(GUARDS.values());
    }
    for (CommitGuard g : guards) {
      ObjectNode n = out.putObject(g.state.catalogName);
      n.put("idempotency_key_lifetime", g.lifetimeText);
      n.put("idempotency", g.idempotencyEnabled());
      n.put("mutations", g.mutations.get());
      n.put("keyed", g.keyed.get());
      n.put("retries", g.retries.get());
      n.put("reconciled_landed", g.reconciledLanded.get());
      n.put("reconciled_not_landed", g.reconciledNotLanded.get());
      n.put("reconciled_unknown", g.reconciledUnknown.get());
      synchronized (g.events) {
        g.events.forEach(n.putArray("events")::add);
      }
    }
    return Json.write(out);
  }

  /** Forget the evidence (tests). */
  public static void resetEvidence() {
    synchronized (GUARDS) {
      for (CommitGuard g : GUARDS.values()) {
        g.mutations.set(0);
        g.keyed.set(0);
        g.retries.set(0);
        g.reconciledLanded.set(0);
        g.reconciledNotLanded.set(0);
        g.reconciledUnknown.set(0);
        g.events.clear();
      }
    }
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
  interface Attempt<T> {
    T send(Map<String, String> headers, Consumer<ErrorResponse> errorHandler);
  }

  private enum Kind {
    COMMIT, // POST .../tables/{t} with an UpdateTableRequest
    TRANSACTION, // POST .../transactions/commit
    STAGE, // stage-create: no server state, always safe to repeat
    MUTATION // anything else (create, drop, rename, register, namespaces)
  }

  private enum Landed {
    YES,
    NO,
    UNKNOWN
  }

  /** Thrown from our error-handler wrapper to take over a response before Iceberg maps it. */
  private static final class Intercepted extends RuntimeException {
    final ErrorResponse error;

    Intercepted(ErrorResponse error) {
      super(null, null, false, false);
      this.error = error;
    }
  }

  /**
   * Sends a mutation. {@code reader} is the undecorated client used for reconciliation reads;
   * {@code attempt} sends once with the given headers and error handler.
   */
  @SuppressWarnings("unchecked")
  <T> T mutate(
      String method,
      String path,
      RESTRequest body,
      Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler,
      RESTClient reader,
      Attempt<T> attempt) {
    Kind kind = classify(method, path, body);
    boolean commit = kind == Kind.COMMIT || kind == Kind.TRANSACTION;
    String key = idempotencyEnabled() ? uuid7().toString() : null;
    Map<String, String> sendHeaders = new HashMap<>(headers == null ? Map.of() : headers);
    sendHeaders.remove(IDEMPOTENCY_HEADER);
    if (key != null) {
      sendHeaders.put(IDEMPOTENCY_HEADER, key); // the same key for every retry below
      keyed.incrementAndGet();
    }
    mutations.incrementAndGet();
    String what = method + " " + shortPath(path);
    long started = System.nanoTime();
    boolean maybeApplied = false; // some attempt may have reached the server and been applied
    int n = 0;
    while (true) {
      n++;
      String cause;
      boolean reached;
      ErrorResponse error = null;
      RuntimeException failure;
      try {
        return attempt.send(
            sendHeaders,
            err -> {
              if (intercepts(kind, err.code())) {
                throw new Intercepted(err);
              }
              errorHandler.accept(err);
            });
      } catch (Intercepted e) {
        error = e.error;
        failure = null;
        int code = error.code();
        cause = "HTTP " + code;
        reached = code != 429 && code != 503; // 429/503: the server says it did not apply it
      } catch (RESTException e) {
        IOException io = ioCause(e);
        if (io == null) {
          throw e;
        }
        failure = e;
        cause = io.getClass().getSimpleName();
        reached = !(io instanceof ConnectException
            || io instanceof UnknownHostException
            || io instanceof NoRouteToHostException);
      }
      maybeApplied |= reached;
      event(what + " attempt " + n + ": " + cause + (key != null ? " (keyed)" : ""));

      if (error != null && error.code() == 409) {
        if (!commit) {
          errorHandler.accept(error); // a plain mutation's conflict is final
          throw new IllegalStateException("error handler did not throw for 409");
        }
        // A conflict on a commit may be our own earlier (or hidden, inner-client) attempt.
        Landed landed = reconcile(path, body, sendHeaders, reader);
        if (landed == Landed.YES) {
          return (T) landedResponse(kind, path, sendHeaders, reader);
        }
        if (landed == Landed.UNKNOWN && maybeApplied) {
          throw unknown(what, n, "conflict after an attempt that may have been applied");
        }
        errorHandler.accept(error); // CommitFailedException: truly someone else's change
        throw new CommitFailedException("Commit failed: %s", error.message());
      }
      if (error != null && !retryableStatus(error.code())) {
        // 500 on a mutation: maybe applied, never repeated blindly.
        if (commit) {
          Landed landed = reconcile(path, body, sendHeaders, reader);
          if (landed == Landed.YES) {
            return (T) landedResponse(kind, path, sendHeaders, reader);
          }
        }
        errorHandler.accept(error);
        throw new IllegalStateException("error handler did not throw for " + error.code());
      }

      // Retryable: 429/502/503/504 or a transport failure.
      boolean safe = !reached || key != null || kind == Kind.STAGE || commit;
      if (commit && maybeApplied && key == null) {
        // No idempotency: find out before repeating. Our commits carry requirements
        // (assert-create, assert-table-uuid, assert-ref-snapshot-id), so a repeat can never
        // apply twice; a late first attempt makes the repeat answer 409, reconciled above.
        Landed landed = reconcile(path, body, sendHeaders, reader);
        if (landed == Landed.YES) {
          return (T) landedResponse(kind, path, sendHeaders, reader);
        }
      }
      long delay = backoff(n);
      long elapsedMs = (System.nanoTime() - started) / 1_000_000;
      boolean keyAlive =
          key == null
              || lifetime == null
              || elapsedMs + delay < 0.9 * lifetime.toMillis(); // never repeat a forgotten key
      if (safe && n < maxAttempts && elapsedMs + delay <= totalTimeoutMs && keyAlive) {
        retries.incrementAndGet();
        sleep(delay);
        continue;
      }
      // Out of attempts.
      if (commit) {
        Landed landed = reconcile(path, body, sendHeaders, reader);
        if (landed == Landed.YES) {
          return (T) landedResponse(kind, path, sendHeaders, reader);
        }
        if (landed == Landed.NO && !maybeApplied) {
          throw new CommitFailedException(
              "Commit to %s did not land: the catalog answered %s %d time(s) without applying it;"
                  + " nothing was published",
              tableName(path), cause, n);
        }
        throw unknown(what, n, cause);
      }
      if (error != null) {
        errorHandler.accept(error);
        throw new IllegalStateException("error handler did not throw for " + error.code());
      }
      throw failure;
    }
  }

  private static boolean intercepts(Kind kind, int code) {
    return retryableStatus(code)
        || ((kind == Kind.COMMIT || kind == Kind.TRANSACTION) && (code == 409 || code == 500));
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

  private CommitStateUnknownException unknown(String what, int attempts, String cause) {
    reconciledUnknown.incrementAndGet();
    return new CommitStateUnknownException(
        new RuntimeException(
            String.format(
                "%s: the catalog's answer was lost (%s, %d attempt(s)) and the table does not show"
                    + " whether the commit landed; no files were deleted, check the table before"
                    + " retrying",
                what, cause, attempts)));
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
    if ("POST".equals(method) && body instanceof UpdateTableRequest && tableParts(path) != null) {
      return Kind.COMMIT;
    }
    if ("POST".equals(method) && body instanceof CommitTransactionRequest) {
      return Kind.TRANSACTION;
    }
    if ("POST".equals(method) && body instanceof CreateTableRequest && ((CreateTableRequest) body).stageCreate()) {
      return Kind.STAGE;
    }
    return Kind.MUTATION;
  }

  // ------------------------------------------------------------------ reconciliation

  /** What our commit would have added: the UUID it assigned (creates) and snapshot ids. */
  private static final class Fingerprint {
    String uuid;
    final Set<Long> snapshotIds = new HashSet<>();

    boolean empty() {
      return uuid == null && snapshotIds.isEmpty();
    }
  }

  private static Fingerprint fingerprint(UpdateTableRequest request) {
    Fingerprint f = new Fingerprint();
    boolean create =
        request.requirements().stream()
            .anyMatch(r -> r instanceof UpdateRequirement.AssertTableDoesNotExist);
    for (MetadataUpdate u : request.updates()) {
      if (create && u instanceof MetadataUpdate.AssignUUID) {
        f.uuid = ((MetadataUpdate.AssignUUID) u).uuid(); // random: ours alone
      } else if (u instanceof MetadataUpdate.AddSnapshot) {
        Snapshot s = ((MetadataUpdate.AddSnapshot) u).snapshot();
        f.snapshotIds.add(s.snapshotId()); // random 64-bit: ours alone
      }
    }
    return f;
  }

  private Landed reconcile(
      String path, RESTRequest body, Map<String, String> headers, RESTClient reader) {
    Landed result;
    if (body instanceof UpdateTableRequest) {
      result = reconcileTable(path, (UpdateTableRequest) body, headers, reader);
    } else if (body instanceof CommitTransactionRequest) {
      result = Landed.YES;
      for (UpdateTableRequest change : ((CommitTransactionRequest) body).tableChanges()) {
        String tablePath = tablePathFor(path, change.identifier());
        Landed one = tablePath == null ? Landed.UNKNOWN : reconcileTable(tablePath, change, headers, reader);
        if (one == Landed.NO) {
          result = Landed.NO; // all or nothing: one missing change means the transaction failed
          break;
        }
        if (one == Landed.UNKNOWN) {
          result = Landed.UNKNOWN;
        }
      }
    } else {
      result = Landed.UNKNOWN;
    }
    (result == Landed.YES ? reconciledLanded : result == Landed.NO ? reconciledNotLanded : reconciledUnknown)
        .incrementAndGet();
    event("reconcile " + shortPath(path) + ": " + result);
    return result;
  }

  private Landed reconcileTable(
      String tablePath, UpdateTableRequest request, Map<String, String> headers, RESTClient reader) {
    Fingerprint f = fingerprint(request);
    if (f.empty()) {
      return Landed.UNKNOWN; // e.g. a property change: nothing unique to look for
    }
    TableMetadata current;
    try {
      current = load(tablePath, headers, reader).tableMetadata();
    } catch (NoSuchTableException e) {
      return Landed.NO;
    } catch (RuntimeException e) {
      return Landed.UNKNOWN;
    }
    if (f.uuid != null && !f.uuid.equals(current.uuid())) {
      return Landed.NO; // someone else's table by that name
    }
    int found = 0;
    for (long id : f.snapshotIds) {
      if (current.snapshot(id) != null) {
        found++;
      }
    }
    if (found == f.snapshotIds.size()) {
      return Landed.YES;
    }
    // Some snapshot ids missing: they may have been expired since (rare), or it never landed.
    return found == 0 && f.uuid == null ? Landed.NO : Landed.UNKNOWN;
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

  private Object landedResponse(
      Kind kind, String path, Map<String, String> headers, RESTClient reader) {
    event("commit " + shortPath(path) + " landed: reported once as success");
    if (kind == Kind.TRANSACTION) {
      return null; // the transaction endpoint answers 204
    }
    return load(path, headers, reader);
  }

  // ------------------------------------------------------------------ paths

  /** [prefix-part-before-namespaces, ns, table] of .../namespaces/{ns}/tables/{t}, else null. */
  private static String[] tableParts(String path) {
    String[] parts = path.replaceAll("^/+", "").split("/");
    for (int i = 0; i + 3 < parts.length; i++) {
      if ("namespaces".equals(parts[i]) && "tables".equals(parts[i + 2]) && i + 4 == parts.length) {
        return new String[] {String.join("/", java.util.Arrays.copyOfRange(parts, 0, i)), parts[i + 1], parts[i + 3]};
      }
    }
    return null;
  }

  private static String tablePathFor(String transactionPath, TableIdentifier ident) {
    if (ident == null) {
      return null;
    }
    String base = transactionPath.replaceAll("/+$", "");
    if (!base.endsWith("transactions/commit")) {
      return null;
    }
    base = base.substring(0, base.length() - "transactions/commit".length());
    return base
        + "namespaces/"
        + RESTUtil.encodeNamespace(ident.namespace())
        + "/tables/"
        + RESTUtil.encodeString(ident.name());
  }

  private static String tableName(String path) {
    String[] p = tableParts(path);
    if (p == null) {
      return "the tables";
    }
    return RESTUtil.decodeNamespace(p[1]) + "." + RESTUtil.decodeString(p[2]);
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
