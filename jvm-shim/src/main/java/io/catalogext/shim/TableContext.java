package io.catalogext.shim;

import java.util.List;

/** What a refresh source needs to know about a table. Holds no secrets. */
final class TableContext {
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

  TableContext(
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

  String qualifiedName() {
    return catalog + "." + String.join(".", namespace) + "." + table;
  }

  @Override
  public String toString() {
    return "TableContext{" + qualifiedName() + (staged ? ", staged" : "") + "}";
  }
}
