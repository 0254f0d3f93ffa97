package io.catalogext.shim.spark;

import java.util.Arrays;
import java.util.List;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.DropTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

/**
 * Which table a SQL {@code DROP TABLE ... PURGE} on this thread asked to drop with its data.
 *
 * <p>Iceberg 1.10/1.11's {@code SparkCatalog.purgeTable} drops the table without asking the catalog
 * to purge and deletes the files itself, so the catalog sees the same request as for a plain
 * {@code DROP TABLE}. The statement is what tells them apart: a check rule of the shim's SQL
 * extension ({@code spark.sql.extensions}) sees every analysed plan before it runs, on the thread
 * that then runs it, and records a purging drop here. Iceberg 1.12's {@code rest-catalog-purge}
 * (apache/iceberg#15614: the Spark catalog then asks the REST catalog to purge) retires this.
 */
public final class PurgeStatements {
  /** A mark this old is no statement's any more (a drop that failed before it reached the catalog). */
  static final long MARK_LIFETIME_MS = 60_000L;

  private static final ThreadLocal<Mark> PURGING = new ThreadLocal<>();

  private PurgeStatements() {}

  /** The check rule: a purging drop marks its table; a plain drop of a table clears the mark. */
  public static void observe(LogicalPlan plan) {
    if (!(plan instanceof DropTable)) {
      return; // other statements (and those a drop runs itself) leave the mark alone
    }
    DropTable drop = (DropTable) plan;
    if (drop.purge() && drop.child() instanceof ResolvedIdentifier) {
      ResolvedIdentifier target = (ResolvedIdentifier) drop.child();
      List<String> levels = Arrays.asList(target.identifier().namespace());
      PURGING.set(new Mark(target.catalog().name(), levels, target.identifier().name(), System.currentTimeMillis()));
    } else {
      PURGING.remove();
    }
  }

  /**
   * Whether the statement running on this thread is a {@code DROP TABLE ... PURGE} of {@code table}
   * in Spark catalog {@code catalog}; answers once (the mark is consumed).
   */
  public static boolean requested(String catalog, TableIdentifier table) {
    Mark mark = PURGING.get();
    if (mark == null) {
      return false;
    }
    PURGING.remove();
    return System.currentTimeMillis() - mark.atMs < MARK_LIFETIME_MS && mark.catalog.equals(catalog)
        && mark.namespace.equals(Arrays.asList(table.namespace().levels())) && mark.table.equals(table.name());
  }

  private static final class Mark {
    final String catalog;
    final List<String> namespace;
    final String table;
    final long atMs;

    Mark(String catalog, List<String> namespace, String table, long atMs) {
      this.catalog = catalog;
      this.namespace = namespace;
      this.table = table;
      this.atMs = atMs;
    }
  }
}
