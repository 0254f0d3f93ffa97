package io.catalogext.shim.commit;

import io.catalogext.shim.config.SharedSpecs;
import io.catalogext.shim.wire.TablePath;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Which operations the catalog replays under an Idempotency-Key: {@code
 * catalog-ext.commit.deduplicated-operations} (a profile sets it per catalog family and release),
 * with names and the narrowest set from the shared decision table ({@code deduplicated_operations}
 * of commit-decisions.json, which Python reads too). A catalog advertises one lifetime for all of
 * itself but need not replay every operation under it (Polaris 1.7.0 replays only createTable and
 * updateTable without assert-create).
 */
final class DeduplicatedOperations {
  static final String KNOB = "catalog-ext.commit.deduplicated-operations"; // under CommitPolicy.PREFIX
  private static final JsonNode SPEC = SharedSpecs.read(CommitDecision.TABLE_RESOURCE).get("deduplicated_operations");

  private DeduplicatedOperations() {}

  /**
   * The set the knob names; unset or blank: the narrowest set; {@code none}: no operation.
   *
   * @throws IllegalArgumentException one line, word for word what Python says, for an unknown name
   */
  static Set<String> parse(String raw) {
    String text = raw == null ? "" : raw.trim();
    if (text.isEmpty()) {
      Set<String> narrowest = new LinkedHashSet<>();
      SPEC.get("narrowest").forEach(n -> narrowest.add(n.asText()));
      return Collections.unmodifiableSet(narrowest);
    }
    List<String> names = new ArrayList<>();
    for (String part : text.split(",")) {
      if (!part.trim().isEmpty()) {
        names.add(part.trim());
      }
    }
    if (names.equals(List.of("none"))) {
      return Set.of();
    }
    for (String name : names) {
      if (!SPEC.get("operations").has(name)) {
        List<String> known = new ArrayList<>();
        SPEC.get("operations").fieldNames().forEachRemaining(known::add);
        throw new IllegalArgumentException("Bad catalog property " + KNOB + "='" + text + "': unknown operation " + name
            + "; use none or some of " + String.join(", ", known));
      }
    }
    return Collections.unmodifiableSet(new LinkedHashSet<>(names));
  }

  /** The decision table's name for this request's operation, or null (views, anything else: never trusted). */
  static String of(Mutation req) {
    Object body = req.body;
    if (body instanceof UpdateTableRequest) {
      return Mutation.createsTable((UpdateTableRequest) body) ? "stagedCreateCommit" : "updateTable";
    }
    if (body instanceof CreateTableRequest) {
      return ((CreateTableRequest) body).stageCreate() ? null : "createTable"; // a stage-create needs no replay
    }
    if (body instanceof CommitTransactionRequest) {
      return "commitTransaction";
    }
    if (body instanceof CreateNamespaceRequest) {
      return "createNamespace";
    }
    if (body instanceof UpdateNamespacePropertiesRequest) {
      return "updateNamespaceProperties";
    }
    if (body instanceof RenameTableRequest) {
      return "renameTable";
    }
    if (body instanceof RegisterTableRequest) {
      return "registerTable";
    }
    if ("DELETE".equals(req.method)) {
      String path = req.shortPath().replaceAll("/+$", "");
      TablePath table = TablePath.parse(path);
      if (table != null && table.isTable()) {
        return "dropTable"; // TablePath parses tables only, never views
      }
      int ns = path.lastIndexOf("namespaces/");
      return ns >= 0 && path.indexOf('/', ns + "namespaces/".length()) < 0 ? "dropNamespace" : null;
    }
    return null;
  }
}
