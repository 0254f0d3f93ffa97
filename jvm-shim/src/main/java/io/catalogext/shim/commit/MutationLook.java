package io.catalogext.shim.commit;

import io.catalogext.shim.commit.CommitDecision.Landed;
import io.catalogext.shim.wire.TablePath;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.ErrorHandlers;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.responses.CreateNamespaceResponse;
import org.apache.iceberg.rest.responses.GetNamespaceResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.types.TypeUtil;

/**
 * Did a create, drop, rename or register land although its answer was lost? Such a mutation adds
 * nothing random of its own to recognise it by (as a commit's snapshot ids or table UUID are), so
 * the catalog is asked what it shows now, and the change counts as ours when it is there as we sent
 * it: a namespace with the properties we sent, a table with our schema, partitioning, location and
 * properties and no snapshot yet, a registered table with our metadata file, a dropped table or
 * namespace gone, a renamed table gone from its source and present at its target. Not visible is
 * {@link Landed#PENDING}; something else there is {@link Landed#NO} (a conflict); anything else
 * (views, property updates, an unreadable catalog) {@link Landed#UNKNOWN}.
 */
final class MutationLook {
  private MutationLook() {}

  /** What the look found and the words for it ("namespace db exists with other properties"). */
  static Reconciler.Result look(Mutation req, Map<String, String> headers) {
    Map<String, String> readHeaders = new HashMap<>(headers);
    IdempotencyKeys.removeFrom(readHeaders);
    Reads reads = new Reads(req.reader, readHeaders);
    String path = req.shortPath().replaceAll("/+$", "");
    try {
      if ("POST".equals(req.method) && req.body instanceof CreateNamespaceRequest && path.endsWith("namespaces")) {
        return namespaceCreate(reads, root(path, "namespaces"), (CreateNamespaceRequest) req.body);
      }
      if ("POST".equals(req.method) && req.body instanceof RenameTableRequest && path.endsWith("tables/rename")) {
        return rename(reads, root(path, "tables/rename"), (RenameTableRequest) req.body);
      }
      TablePath table = TablePath.parse(path);
      if ("POST".equals(req.method) && req.body instanceof CreateTableRequest && table != null && !table.isTable()) {
        CreateTableRequest create = (CreateTableRequest) req.body;
        return tableCreate(reads, TablePath.table(table.root, table.namespace, create.name()), create);
      }
      if ("POST".equals(req.method) && req.body instanceof RegisterTableRequest && table != null) {
        RegisterTableRequest register = (RegisterTableRequest) req.body;
        return register(reads, TablePath.table(table.root, table.namespace, register.name()), register);
      }
      if ("DELETE".equals(req.method) && table != null && table.isTable()) {
        boolean gone = reads.table(path) == null;
        return result(gone ? Landed.YES : Landed.PENDING, null, "table " + table.displayName()
            + (gone ? " is gone" : " is still there"));
      }
      int ns = path.lastIndexOf("namespaces/");
      if ("DELETE".equals(req.method) && ns >= 0 && path.indexOf('/', ns + "namespaces/".length()) < 0) {
        boolean gone = reads.namespace(path) == null;
        return result(gone ? Landed.YES : Landed.PENDING, null, "the namespace " + (gone ? "is gone" : "is still there"));
      }
    } catch (RuntimeException e) {
      return result(Landed.UNKNOWN, null, "the catalog could not be read to tell (" + e.getClass().getSimpleName() + ")");
    }
    return result(Landed.UNKNOWN, null, "nothing shows whether it was applied");
  }

  private static Reconciler.Result namespaceCreate(Reads reads, String root, CreateNamespaceRequest req) {
    Namespace ns = req.namespace();
    String name = String.join(".", ns.levels());
    GetNamespaceResponse now = reads.namespace(TablePath.namespace(root, Arrays.asList(ns.levels())));
    if (now == null) {
      return result(Landed.PENDING, null, "namespace " + name + " is not there");
    }
    if (!contains(now.properties(), req.properties())) {
      return result(Landed.NO, null, "namespace " + name + " exists with other properties than we sent");
    }
    CreateNamespaceResponse answer =
        CreateNamespaceResponse.builder().withNamespace(ns).setProperties(now.properties()).build();
    return result(Landed.YES, answer, "namespace " + name + " exists with the properties we sent");
  }

  private static Reconciler.Result tableCreate(Reads reads, String tablePath, CreateTableRequest req) {
    LoadTableResponse now = reads.table(tablePath);
    String name = TablePath.parse(tablePath).displayName();
    if (now == null) {
      return result(Landed.PENDING, null, "table " + name + " is not there");
    }
    if (!sameTable(req, now.tableMetadata())) {
      return result(Landed.NO, null, "table " + name + " exists with other metadata than we sent");
    }
    return result(Landed.YES, now, "table " + name + " exists with our metadata");
  }

  private static Reconciler.Result register(Reads reads, String tablePath, RegisterTableRequest req) {
    LoadTableResponse now = reads.table(tablePath);
    String name = TablePath.parse(tablePath).displayName();
    if (now == null) {
      return result(Landed.PENDING, null, "table " + name + " is not there");
    }
    boolean ours = req.metadataLocation().equals(now.metadataLocation());
    return result(ours ? Landed.YES : Landed.NO, ours ? now : null,
        "table " + name + (ours ? " is registered with our metadata file" : " exists with another metadata file"));
  }

  private static Reconciler.Result rename(Reads reads, String root, RenameTableRequest req) {
    boolean source = reads.table(path(root, req.source())) != null;
    boolean target = reads.table(path(root, req.destination())) != null;
    String names = req.source() + " -> " + req.destination();
    if (!source && target) {
      return result(Landed.YES, null, "rename " + names + ": the source is gone and the target is there");
    }
    if (source && !target) {
      return result(Landed.PENDING, null, "rename " + names + ": the source is still there, the target is not");
    }
    return result(Landed.NO, null, "rename " + names + (source
        ? ": both the source and the target exist" : ": neither the source nor the target exists"));
  }

  /** Our table as created: the same columns, partitioning, location and properties, and no data yet. */
  static boolean sameTable(CreateTableRequest req, TableMetadata now) {
    if (!fresh(req.schema()).equals(fresh(now.schema()))) {
      return false;
    }
    PartitionSpec spec = req.spec() == null ? PartitionSpec.unpartitioned() : req.spec();
    if (!partitioning(spec, req.schema()).equals(partitioning(now.spec(), now.schema()))) {
      return false;
    }
    if (req.location() != null && !trim(req.location()).equals(trim(now.location()))) {
      return false;
    }
    Map<String, String> sent = new HashMap<>(req.properties());
    sent.keySet().removeAll(TableProperties.RESERVED_PROPERTIES); // format-version...: the catalog keeps them elsewhere
    return contains(now.properties(), sent) && now.snapshots().isEmpty();
  }

  /** The schema with ids assigned as a catalog assigns them on create (ours may carry others). */
  private static Object fresh(Schema schema) {
    AtomicInteger ids = new AtomicInteger();
    return TypeUtil.assignFreshIds(schema, ids::incrementAndGet).asStruct();
  }

  private static List<String> partitioning(PartitionSpec spec, Schema schema) {
    List<String> out = new ArrayList<>();
    for (PartitionField f : spec.fields()) {
      out.add(f.transform() + "(" + schema.findColumnName(f.sourceId()) + ")");
    }
    return out;
  }

  private static boolean contains(Map<String, String> now, Map<String, String> sent) {
    for (Map.Entry<String, String> e : (sent == null ? Map.<String, String>of() : sent).entrySet()) {
      if (!e.getValue().equals(now.get(e.getKey()))) {
        return false;
      }
    }
    return true;
  }

  private static String trim(String location) {
    return location.replaceAll("/+$", "");
  }

  private static String root(String path, String tail) {
    return path.substring(0, path.length() - tail.length());
  }

  private static String path(String root, TableIdentifier ident) {
    return TablePath.table(root, Arrays.asList(ident.namespace().levels()), ident.name());
  }

  private static Reconciler.Result result(Landed landed, Object answer, String seen) {
    return new Reconciler.Result(landed, answer, seen);
  }

  /** One GET each, with the mutation's headers (no Idempotency-Key); null for "does not exist". */
  private static final class Reads {
    private final RESTClient reader;
    private final Map<String, String> headers;

    Reads(RESTClient reader, Map<String, String> headers) {
      this.reader = reader;
      this.headers = headers;
    }

    LoadTableResponse table(String path) {
      try {
        return reader.get(path, Map.of(), LoadTableResponse.class, headers, ErrorHandlers.tableErrorHandler());
      } catch (NoSuchTableException | NoSuchNamespaceException e) {
        return null;
      }
    }

    GetNamespaceResponse namespace(String path) {
      try {
        return reader.get(path, Map.of(), GetNamespaceResponse.class, headers, ErrorHandlers.namespaceErrorHandler());
      } catch (NoSuchNamespaceException e) {
        return null;
      }
    }
  }
}
