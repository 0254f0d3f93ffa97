package io.catalogext.shim.refresh;

import io.catalogext.shim.config.RefreshPolicy;

import java.util.Map;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/** What a refresh source ({@link EntryRefresher}) knows of the table entry it fetches keys for. */
public interface RefreshSubject {
  /** The entry's opaque handle. */
  String handle();

  TableContext context();

  RefreshPolicy policy();

  /**
   * Driver: the auth-session client of this table's own login, which the catalog refresh sends
   * through; null: none of its own (the catalog session's is used).
   */
  default RESTClient catalogClient() {
    return null;
  }

  /** Driver: prefix -> storage-refresh-token. Secret: never logged or described. */
  Map<String, String> refreshTokens();

  /** Executors: the key id S3 rejected (not secret), which the driver refreshes if still current; else null. */
  String staleKeyId();

  /** The S3 error code of that rejection, or null. */
  String staleCode();

  /** Executors: the key id a store last accepted first (not secret), which the driver's wave needs; else null. */
  default String acceptedKeyId() {
    return null;
  }

  /** Non-secret status: what a user's Python source is told about the table. */
  ObjectNode describe();
}
