package io.catalogext.shim.errors;

import org.apache.iceberg.exceptions.RESTException;

/**
 * A request that would carry the catalog's credentials was about to go to an origin the user did
 * not configure for the catalog; nothing was sent. One line naming the origin and, where known,
 * the key that named it. A RESTException, as a request Iceberg could not send is.
 */
public class UntrustedOriginException extends RESTException {
  private static final long serialVersionUID = 1L;

  public UntrustedOriginException(String message) {
    super("%s", message);
  }
}
