package io.catalogext.shim.http;

import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.events.ShimMetrics;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.wire.TablePath;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The funnel's outermost step ({@link CatalogHttpFunnel}): counts every request for Spark's
 * metrics system and emits {@code stage_create.started/finished}
 * and {@code commit.started/finished} to {@link EventLog} around every stage-create and commit
 * request, whatever Spark code sent it (SQL CTAS, DataFrame writes, procedures, the staging
 * helpers). "finished" carries the outcome as the caller sees it after the commit guard's
 * retries and reconciliation: staged, committed, rejected (the catalog refused it), unknown (it may
 * have landed) or failed.
 */
public final class CommitEvents implements CatalogHttpFunnel.Interceptor {
  private final CatalogSession session;

  CommitEvents(CatalogSession session) {
    this.session = session;
  }

  @Override
  public <T extends RESTResponse> T intercept(CatalogHttpFunnel.Exchange<T> ex) {
    ShimMetrics.get().catalogRequest(); // every request Iceberg's catalog client sends, for Spark's metrics system
    String kind = kind(ex.body());
    if (kind == null) {
      return ex.proceed();
    }
    return around(kind, ex.path(), ex.body(), ex::proceed);
  }

  /** Emits started/finished around a stage-create or commit. */
  private <T> T around(String kind, String path, RESTRequest body, Supplier<T> call) {
    ObjectNode fields = describe(path, body);
    EventLog.emit(kind + ".started", fields.deepCopy());
    long started = System.nanoTime();
    try {
      T response = call.get();
      ObjectNode done = fields.deepCopy();
      done.put("outcome", "stage_create".equals(kind) ? "staged" : "committed");
      if (response instanceof LoadTableResponse && ((LoadTableResponse) response).tableMetadata() != null) {
        LoadTableResponse loaded = (LoadTableResponse) response;
        done.put("uuid", loaded.tableMetadata().uuid());
        Snapshot current = loaded.tableMetadata().currentSnapshot();
        if (current != null) {
          done.put("snapshot_id", current.snapshotId());
        }
      }
      EventLog.emit(kind + ".finished", withDuration(done, started));
      return response;
    } catch (RuntimeException e) {
      ObjectNode failed = fields.deepCopy();
      failed.put("outcome", outcome(e));
      failed.put("error_class", e.getClass().getSimpleName());
      EventLog.emit(kind + ".finished", withDuration(failed, started));
      throw e;
    }
  }

  private static String kind(RESTRequest body) {
    if (body instanceof CreateTableRequest && ((CreateTableRequest) body).stageCreate()) {
      return "stage_create";
    }
    if (body instanceof UpdateTableRequest || body instanceof CommitTransactionRequest) {
      return "commit";
    }
    return null;
  }

  private ObjectNode describe(String path, RESTRequest body) {
    ObjectNode fields = EventLog.fields();
    fields.put(EventLog.CATALOG_SESSION, session.id); // whose status shows the outcome
    TablePath tablePath = TablePath.parse(path);
    if (body instanceof CreateTableRequest) {
      fields.put("table", name(tablePath == null ? null : tablePath.namespace, ((CreateTableRequest) body).name()));
    } else if (body instanceof UpdateTableRequest) {
      UpdateTableRequest update = (UpdateTableRequest) body;
      String table = tablePath != null && tablePath.table != null
          ? name(tablePath.namespace, tablePath.table) : name(update.identifier());
      if (table != null) { // event-schemas.json: absent when the request names no table, never null
        fields.put("table", table);
      }
      addChanges(fields, update);
    } else {
      ArrayNode tables = fields.putArray("tables");
      for (UpdateTableRequest change : ((CommitTransactionRequest) body).tableChanges()) {
        tables.add(name(change.identifier()));
      }
    }
    return fields;
  }

  /** Whether the commit creates the table, and the snapshots it adds. */
  private static void addChanges(ObjectNode fields, UpdateTableRequest update) {
    boolean create = false;
    for (UpdateRequirement req : update.requirements()) {
      create |= req instanceof UpdateRequirement.AssertTableDoesNotExist;
    }
    fields.put("create", create);
    List<Long> added = new ArrayList<>();
    for (MetadataUpdate change : update.updates()) {
      if (change instanceof MetadataUpdate.AddSnapshot) {
        added.add(((MetadataUpdate.AddSnapshot) change).snapshot().snapshotId());
      }
    }
    ArrayNode ids = fields.putArray("snapshot_ids");
    added.forEach(ids::add);
  }

  private String name(List<String> namespace, String table) {
    StringBuilder b = new StringBuilder(String.valueOf(session.name));
    if (namespace != null) {
      namespace.forEach(level -> b.append('.').append(level));
    }
    return b.append('.').append(table).toString();
  }

  private String name(TableIdentifier ident) {
    return ident == null ? null : name(List.of(ident.namespace().levels()), ident.name());
  }

  private static ObjectNode withDuration(ObjectNode fields, long startedNanos) {
    fields.put("duration_s", (System.nanoTime() - startedNanos) / 1e9);
    return fields;
  }

  /** How the caller sees a failure: refused by the catalog, possibly landed, or an error. */
  public static String outcome(RuntimeException e) {
    if (e instanceof CommitStateUnknownException) {
      return "unknown";
    }
    if (e instanceof CommitFailedException || e instanceof AlreadyExistsException) {
      return "rejected";
    }
    return "failed";
  }
}
