package io.catalogext.shim.http;

import io.catalogext.shim.commit.Mutation;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.OneLine;
import io.catalogext.shim.wire.TablePath;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.rest.HTTPRequest.HTTPMethod;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.ReportMetricsRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The funnel's innermost step ({@link CatalogHttpFunnel}): every mutation (a POST with a JSON
 * body, a DELETE) goes through the catalog's commit guard (Idempotency-Key, retries,
 * reconciliation), each of its attempts one send with the guard's headers and error handler.
 * Reads, HEADs and OAuth2 token forms are sent once.
 *
 * <p>A metrics report changes nothing, so it is no mutation: sent once, and a refusal is one debug
 * line (Iceberg's RESTMetricsReporter would log it as a 40-line stack). A staged table's reports
 * (a CTAS or {@code writeTo().create()} reports its append before the table is committed) are not
 * sent at all: the table does not exist yet, and Polaris answers every one of them 404.
 */
final class MutationGuard implements CatalogHttpFunnel.Interceptor {
  private static final Logger LOG = LoggerFactory.getLogger(MutationGuard.class);
  /** Tables staged and not committed yet (their paths); bounded. */
  private static final int STAGED = 256;

  private final CatalogSession session;
  private final Set<String> staged = Collections.newSetFromMap(Collections.synchronizedMap(
      new LinkedHashMap<String, Boolean>() {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
          return size() > STAGED;
        }
      }));

  MutationGuard(CatalogSession session) {
    this.session = session;
  }

  @Override
  public <T extends RESTResponse> T intercept(CatalogHttpFunnel.Exchange<T> ex) {
    if (ex.method() == HTTPMethod.POST && ex.body() instanceof ReportMetricsRequest) {
      return report(ex);
    }
    boolean mutation = ex.method() == HTTPMethod.DELETE
        || (ex.method() == HTTPMethod.POST && !ex.isForm());
    if (!mutation) {
      return ex.proceed();
    }
    Mutation req = new Mutation(
        ex.method().name(), ex.path(), ex.body(), ex.headers(), ex.errorHandler(), ex.undecorated());
    T answer = session.guard.mutate(req, (headers, errorHandler) -> ex.proceed(ex.withHeaders(headers), errorHandler));
    if (ex.body() instanceof CreateTableRequest && ((CreateTableRequest) ex.body()).stageCreate()) {
      TablePath tables = TablePath.parse(ex.path());
      if (tables != null) {
        staged.add(bare(TablePath.table(tables.root, tables.namespace, ((CreateTableRequest) ex.body()).name())));
      }
    } else if (ex.body() instanceof UpdateTableRequest) {
      staged.remove(bare(ex.path())); // committed (or another commit to it): its reports go out again
    }
    return answer;
  }

  private <T extends RESTResponse> T report(CatalogHttpFunnel.Exchange<T> ex) {
    String path = bare(ex.path());
    String table = path.endsWith("/metrics") ? path.substring(0, path.length() - "/metrics".length()) : path;
    if (staged.contains(table)) {
      LOG.debug("metrics report of a staged table not sent: {}", path);
      return null;
    }
    try {
      return ex.proceed();
    } catch (RuntimeException e) {
      LOG.debug("metrics report {} not accepted: {}: {}", path, e.getClass().getSimpleName(), OneLine.of(e));
      return null;
    }
  }

  private static String bare(String path) {
    return path.split("\\?", 2)[0].replaceAll("^/+", "");
  }
}
