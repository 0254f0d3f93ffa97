package io.catalogext.shim.refresh;

import io.catalogext.shim.util.Json;

import java.util.List;

/** What a refresh source needs to know about a table. Holds no secrets. */
public final class TableContext {
  final String catalog;
  final List<String> namespace;
  final String table;
  final String location;
  final String tableUuid;
  /** Body of the stage-create request, replayed by the re-stage strategy; null if not staged. */
  final String stageCreateRequestJson;
  /** A refresh endpoint the server sent in the table config, if any. */
  final String refreshEndpoint;
  /** Staged until its create commit lands; a committed table can't be re-staged. */
  volatile boolean staged;

  public TableContext(
      String catalog,
      List<String> namespace,
      String table,
      String location,
      String tableUuid,
      boolean staged,
      String stageCreateRequestJson,
      String refreshEndpoint) {
    this.catalog = catalog;
    this.namespace = List.copyOf(namespace);
    this.table = table;
    this.location = location;
    this.tableUuid = tableUuid;
    this.staged = staged;
    this.stageCreateRequestJson = stageCreateRequestJson;
    this.refreshEndpoint = refreshEndpoint;
  }

  /** The identity carried in FileIO properties, so any JVM can name (and rebuild) the entry. */
  public String identityJson() {
    var node = Json.object();
    node.put("catalog", catalog);
    var ns = node.putArray("namespace");
    namespace.forEach(ns::add);
    node.put("table", table);
    node.put("location", location);
    return Json.write(node);
  }

  /** A committed-table context from {@link #identityJson()}; "unknown" parts if absent. */
  public static TableContext fromIdentity(String json) {
    if (json == null) {
      return new TableContext("unknown", List.of(), "unknown", null, null, false, null, null);
    }
    var node = Json.read(json);
    List<String> ns = new java.util.ArrayList<>();
    node.path("namespace").forEach(n -> ns.add(n.asText()));
    return new TableContext(
        node.path("catalog").asText("unknown"),
        ns,
        node.path("table").asText("unknown"),
        node.path("location").asText(null),
        null,
        false,
        null,
        null);
  }

  /** Entries with the same key hold credentials for the same storage: they can share them. */
  String tableKey() {
    return qualifiedName() + "@" + location;
  }

  /** The table as named by FileIO properties or an executor (anyone's text), as one line. */
  String shownName() {
    return qualifiedName().replaceAll("\\s+", " ");
  }

  String qualifiedName() {
    return catalog + "." + String.join(".", namespace) + "." + table;
  }

  @Override
  public String toString() {
    return "TableContext{" + qualifiedName() + (staged ? ", staged" : "") + "}";
  }
}
