package io.catalogext.shim.errors;

/** Credentials ran out and could not be renewed. Fails the task, so nothing gets committed. */
public final class CredentialsExpiredException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  public CredentialsExpiredException(String message, Throwable cause) {
    super(message, cause);
  }
}
