package io.catalogext.shim.commit;

import java.util.function.Consumer;
import java.util.function.IntPredicate;
import org.apache.iceberg.rest.ErrorHandler;
import org.apache.iceberg.rest.responses.ErrorResponse;

/**
 * The caller's error handler with the commit guard in front: the answers the guard decides are
 * taken over ({@link Intercepted}), the rest go to the caller's handler. An {@link ErrorHandler}
 * itself, parsing error bodies as the caller's does: an error the guard leaves to Iceberg keeps its
 * Iceberg type and message (a plain lambda here would make the HTTP client skip the body, and
 * Iceberg's handler then see no error type).
 */
final class GuardedErrors extends ErrorHandler {
  private final Consumer<ErrorResponse> handler;
  private final IntPredicate takenOver;

  GuardedErrors(Consumer<ErrorResponse> handler, IntPredicate takenOver) {
    this.handler = handler;
    this.takenOver = takenOver;
  }

  @Override
  public ErrorResponse parseResponse(int code, String json) {
    if (handler instanceof ErrorHandler) {
      return ((ErrorHandler) handler).parseResponse(code, json);
    }
    return ErrorResponse.builder().responseCode(code).withMessage(json).build(); // as Iceberg's client does then
  }

  @Override
  public void accept(ErrorResponse error) {
    if (takenOver.test(error.code())) {
      throw new Intercepted(error);
    }
    handler.accept(error);
  }

  /** Thrown from the handler to take an answer over before Iceberg maps it. */
  static final class Intercepted extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient ErrorResponse error;

    Intercepted(ErrorResponse error) {
      super(null, null, false, false);
      this.error = error;
    }
  }
}
