package io.catalogext.shim.commit;

import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;

/** A mutation (POST with a JSON body, DELETE) as the catalog client's funnel hands it to the guard. */
public final class Mutation {
  /** Whether {@code request} commits a staged create (it asserts the table does not exist yet). */
  static boolean createsTable(UpdateTableRequest request) {
    return request.requirements().stream().anyMatch(r -> r instanceof UpdateRequirement.AssertTableDoesNotExist);
  }

  final String method;
  final String path;
  final RESTRequest body;
  final Map<String, String> headers;
  final Consumer<ErrorResponse> errorHandler;
  /** The catalog's client without the guard, for reconciliation reads. */
  final RESTClient reader;

  public Mutation(String method, String path, RESTRequest body, Map<String, String> headers,
      Consumer<ErrorResponse> errorHandler, RESTClient reader) {
    this.method = method;
    this.path = path;
    this.body = body;
    this.headers = headers == null ? Map.of() : headers;
    this.errorHandler = errorHandler;
    this.reader = reader;
  }

  /** "POST v1/namespaces/db/tables/t", for evidence and messages (no query: it may hold tokens). */
  String what() {
    return method + " " + shortPath();
  }

  String shortPath() {
    return path.split("\\?", 2)[0];
  }
}
