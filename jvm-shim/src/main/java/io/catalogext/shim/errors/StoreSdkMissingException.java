package io.catalogext.shim.errors;

/**
 * A table's files are on a store whose SDK is not on the classpath (Iceberg's Azure or GCP bundle):
 * one line naming the location's scheme, the store and what adds the SDK. Python makes it a
 * ConfigError (spark/java_errors.py). An IllegalStateException, as Iceberg's own refusals of a
 * FileIO it cannot build are.
 */
public class StoreSdkMissingException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  public StoreSdkMissingException(String message) {
    super(message);
  }
}
