package io.catalogext.shim.http;

import io.catalogext.shim.errors.CatalogRedirectException;
import io.catalogext.shim.commit.CommitGuard;
import io.catalogext.shim.session.CatalogSession;

import org.apache.iceberg.exceptions.RESTException;
import org.apache.iceberg.rest.HTTPRequest.HTTPMethod;
import org.apache.iceberg.rest.RESTResponse;

/**
 * The funnel's innermost step ({@link CatalogHttpFunnel}): every mutation (a POST with a JSON
 * body, a DELETE) goes through the catalog's {@link CommitGuard} (Idempotency-Key, retries,
 * reconciliation), each of its attempts one send with the guard's headers and error handler. Reads,
 * HEADs and OAuth2 token forms are sent once; a redirect the HTTP client refused
 * ({@link NoHiddenResends}) becomes one line naming its target instead of Iceberg's "Error
 * occurred while processing GET request" around it. Iceberg 1.11+'s own reconciliation GET after a
 * commit the guard has already reconciled is not sent ({@link CommitGuard#standsDownForIceberg}).
 */
final class MutationGuard implements CatalogHttpFunnel.Interceptor {
  private final CatalogSession session;

  MutationGuard(CatalogSession session) {
    this.session = session;
  }

  @Override
  public <T extends RESTResponse> T intercept(CatalogHttpFunnel.Exchange<T> ex) {
    boolean mutation = ex.method() == HTTPMethod.DELETE
        || (ex.method() == HTTPMethod.POST && !ex.isForm());
    if (mutation) {
      CommitGuard.Request req = new CommitGuard.Request(
          ex.method().name(), ex.path(), ex.body(), ex.headers(), ex.errorHandler(), ex.undecorated());
      return session.guard.mutate(req, (headers, errorHandler) -> ex.proceed(ex.withHeaders(headers), errorHandler));
    }
    if (ex.method() == HTTPMethod.GET && CommitGuard.standsDownForIceberg(ex.path())) {
      // Sent nowhere: Iceberg keeps this as a suppressed note on the commit's CommitStateUnknownException.
      throw new IllegalStateException("catalog-ext's commit guard already checked the table after this commit's"
          + " unanswered attempt; Iceberg's own reconciliation stands down (one lookup per commit)");
    }
    try {
      return ex.proceed();
    } catch (CatalogRedirectException e) {
      throw e;
    } catch (RESTException e) {
      NoHiddenResends.Refused redirect = NoHiddenResends.refusedIn(e);
      if (redirect != null) {
        throw new CatalogRedirectException(redirect);
      }
      throw e;
    }
  }
}
