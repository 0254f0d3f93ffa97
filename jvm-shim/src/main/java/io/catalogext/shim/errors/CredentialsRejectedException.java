package io.catalogext.shim.errors;

/**
 * S3 rejected a table's keys again right after a refresh replaced rejected ones, or the table's
 * reactive refreshes hit their rate limit: refreshing cannot help. One line naming the table, the
 * stated and observed lifetimes and the knob to look at; PySpark shows it as
 * {@code CredentialsRejectedError}.
 */
public final class CredentialsRejectedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public CredentialsRejectedException(String message, Throwable cause) {
    super(message, cause);
  }
}
