package io.catalogext.shim.http;

import io.catalogext.shim.commit.Mutation;
import io.catalogext.shim.session.CatalogSession;

import org.apache.iceberg.rest.HTTPRequest.HTTPMethod;
import org.apache.iceberg.rest.RESTResponse;

/**
 * The funnel's innermost step ({@link CatalogHttpFunnel}): every mutation (a POST with a JSON
 * body, a DELETE) goes through the catalog's commit guard (Idempotency-Key, retries,
 * reconciliation), each of its attempts one send with the guard's headers and error handler.
 * Reads, HEADs and OAuth2 token forms are sent once.
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
    if (!mutation) {
      return ex.proceed();
    }
    Mutation req = new Mutation(
        ex.method().name(), ex.path(), ex.body(), ex.headers(), ex.errorHandler(), ex.undecorated());
    return session.guard.mutate(req, (headers, errorHandler) -> ex.proceed(ex.withHeaders(headers), errorHandler));
  }
}
