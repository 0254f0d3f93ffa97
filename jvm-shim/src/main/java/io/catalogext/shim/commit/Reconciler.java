package io.catalogext.shim.commit;

import io.catalogext.shim.commit.CommitDecision.Landed;
import io.catalogext.shim.wire.TablePath;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntToLongFunction;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.LoadTableResponse;

/**
 * Did our commit land? The table (each table of a transaction) is loaded and our commit recognised
 * by what it added: the table UUID it assigned for a create, the snapshot ids it added (both
 * random: ours alone, so the check is exact), and whether its requirements still hold (if they do
 * not, it can never land). {@link CommitDecision#landed} turns that into one answer.
 */
final class Reconciler {
  /** Loads of one table before its state counts as unreadable. */
  static final int LOADS = 3;

  private final CommitEvidence evidence;
  /** The wait between loads (the guard's backoff). */
  private final IntToLongFunction backoffMs;

  Reconciler(CommitEvidence evidence, IntToLongFunction backoffMs) {
    this.evidence = evidence;
    this.backoffMs = backoffMs;
  }

  /** What a commit would have added: the UUID it assigned (creates) and snapshot ids. */
  static final class Fingerprint {
    boolean create;
    String uuid;
    final Set<Long> snapshotIds = new HashSet<>();

    boolean empty() {
      return uuid == null && snapshotIds.isEmpty();
    }
  }

  /** The result of loading the table(s) after a failed attempt (or of a {@link MutationLook}). */
  static final class Result {
    static final Result NOT_CHECKED = new Result(Landed.NOT_CHECKED, null);
    final Landed landed;
    /** The answer to return when it landed: the table as loaded (a table commit, a create), or null. */
    final Object loaded;
    /** What was seen, for messages ("namespace db exists with other properties"); null for table commits. */
    final String seen;

    Result(Landed landed, Object loaded) {
      this(landed, loaded, null);
    }

    Result(Landed landed, Object loaded, String seen) {
      this.landed = landed;
      this.loaded = loaded;
      this.seen = seen;
    }
  }

  static Fingerprint fingerprint(UpdateTableRequest request) {
    Fingerprint f = new Fingerprint();
    f.create = Mutation.createsTable(request);
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

  /** Loads the table(s) {@code req} changed, with {@code headers} (no Idempotency-Key), and decides. */
  Result reconcile(Mutation req, Map<String, String> headers) {
    Result result;
    if (req.body instanceof UpdateTableRequest) {
      result = table(req.path, (UpdateTableRequest) req.body, headers, req.reader);
    } else if (req.body instanceof CommitTransactionRequest) {
      List<Landed> tables = new ArrayList<>();
      for (UpdateTableRequest change : ((CommitTransactionRequest) req.body).tableChanges()) {
        String tablePath = TablePath.forTransactionChange(req.path, change.identifier());
        tables.add(tablePath == null ? Landed.UNKNOWN : table(tablePath, change, headers, req.reader).landed);
      }
      result = new Result(CommitDecision.combine(tables), null);
    } else {
      result = new Result(Landed.UNKNOWN, null);
    }
    return recorded(req, result);
  }

  /** Counts and notes a reconciliation's result (a table's, or a {@link MutationLook}'s) as evidence. */
  Result recorded(Mutation req, Result result) {
    evidence.reconciled(result.landed);
    evidence.event("reconcile " + req.shortPath() + ": " + result.landed + (result.seen == null ? "" : " (" + result.seen + ")"));
    return result;
  }

  private Result table(String tablePath, UpdateTableRequest request, Map<String, String> headers, RESTClient reader) {
    Fingerprint f = fingerprint(request);
    if (f.empty()) {
      return new Result(Landed.UNKNOWN, null);
    }
    LoadTableResponse loaded;
    try {
      loaded = load(tablePath, headers, reader);
    } catch (NoSuchTableException e) {
      loaded = null;
    } catch (RuntimeException e) {
      return new Result(Landed.UNKNOWN, null);
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
    return new Result(landed, landed == Landed.YES ? loaded : null);
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
    IdempotencyKeys.removeFrom(readHeaders);
    RuntimeException last = null;
    for (int i = 0; i < LOADS; i++) {
      try {
        return reader.get(tablePath, Map.of(), LoadTableResponse.class, readHeaders, ErrorHandlers.tableErrorHandler());
      } catch (NoSuchTableException e) {
        throw e;
      } catch (RuntimeException e) {
        last = e;
        CommitPolicy.sleep(backoffMs.applyAsLong(i + 1));
      }
    }
    throw last;
  }
}
