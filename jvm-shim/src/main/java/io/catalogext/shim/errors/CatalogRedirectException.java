package io.catalogext.shim.errors;

import io.catalogext.shim.util.Urls;

import org.apache.iceberg.exceptions.RESTException;

/**
 * The catalog answered a request with a redirect (301/302/303/307/308), which catalog-ext never
 * follows: one line naming the target (without user info, query or fragment). A RESTException, as
 * Iceberg's own "Unable to process" answer would have been, so Iceberg code that catches those
 * behaves as before.
 */
public class CatalogRedirectException extends RESTException {
  private static final long serialVersionUID = 1L;
  /** The answer's status. */
  public final int status;
  /** The Location as shown in the message. */
  public final String target;

  public CatalogRedirectException(int status, String method, String path, String location) {
    super("%s", message(status, method, path, location));
    this.status = status;
    this.target = location == null || location.isBlank() ? "(no Location header)" : Urls.shown(location);
  }

  private static String message(int status, String method, String path, String location) {
    String target = location == null || location.isBlank() ? "(no Location header)" : Urls.shown(location);
    return "the catalog answered " + method + " " + Urls.shown(path) + " with HTTP " + status + ", a redirect to "
        + target + "; catalog-ext never follows a catalog's redirects (a commit sent twice or turned"
        + " into a GET could be misread): set the catalog's uri to the right address";
  }

  /** The statuses an HTTP client would follow. */
  public static boolean isRedirect(int code) {
    return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
  }
}
