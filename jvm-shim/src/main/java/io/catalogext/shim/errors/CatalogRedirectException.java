package io.catalogext.shim.errors;

import io.catalogext.shim.http.NoHiddenResends;

import org.apache.iceberg.exceptions.RESTException;

/**
 * The catalog answered a request with a redirect (301/302/303/307/308), which catalog-ext never
 * follows: one line naming the target. A RESTException, as Iceberg's own "Unable to process"
 * answer would have been, so Iceberg code that catches those behaves as before.
 */
public class CatalogRedirectException extends RESTException {
  private static final long serialVersionUID = 1L;

  public CatalogRedirectException(NoHiddenResends.Refused refused) {
    super(refused, "%s", refused.getMessage());
  }
}
