package io.catalogext.shim;

import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.refresh.ExecutorAsks;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.spark.PurgeStatements;
import io.catalogext.shim.spark.SparkCompat;
import io.catalogext.shim.util.Json;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataTypes;
import scala.Tuple2;
import scala.Tuple3;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=io.catalogext.shim.CatalogExtSqlExtensions}: SQL function
 * {@value #FUNCTION}{@code ()}, the driver's refresh and commit status as one JSON string, read-only,
 * for clients without Py4J (Spark Connect) and for SQL users. It answers what Python's
 * {@code attach(spark).status()} reads through Py4J: the registry's entries (no secrets), the latest
 * commit and stage-create outcomes of the event ring, the driver plugin's counts.
 *
 * <p>One jar runs on Spark 3.5 (Scala 2.12) and 4.x (Scala 2.13): this class touches no Scala
 * collection (the builder ignores its argument list's type beyond {@code Iterable.isEmpty}, present
 * in both) and only API whose erased signatures are the same in both (checked with javap).
 *
 * <p>The JSON is computed when the query is analysed, which happens on the driver: evaluating in a
 * task would read an executor JVM's registry on a cluster.
 *
 * <p>A shared driver (a Spark Connect server) runs many Spark sessions: the answer is the calling
 * session's alone, the catalogs it initialised, their tables and their commit outcomes (Spark
 * analyses a query with its session active). Nothing in it is secret: no keys, no handles of
 * another session, and a refresh's last error by its type only.
 */
public final class CatalogExtSqlExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  public static final String FUNCTION = "catalog_ext_status";
  /** Commit and stage-create outcomes kept in the answer: the newest ones of the event ring. */
  static final int RECENT_OUTCOMES = 200;

  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    ExpressionInfo info = new ExpressionInfo(CatalogExtSqlExtensions.class.getName(), null, FUNCTION,
        "_FUNC_() - JSON of the catalog-ext refresh state per table and recent commit outcomes (driver, no secrets)",
        "", "", "", "", "", "", "java_udf");
    // Raw Tuple3: the builder's argument is scala.collection.Seq on 2.12 and immutable.Seq on 2.13;
    // both erase to Function1, so the same bytecode links on either.
    Tuple3 description = new Tuple3(new FunctionIdentifier(FUNCTION), info, new Builder());
    extensions.injectFunction(description);
    extensions.injectCheckRule(new PurgeCheck());
    return BoxedUnit.UNIT;
  }

  /**
   * A check rule: every analysed plan on its way to run, so a {@code DROP TABLE ... PURGE} is known
   * to the shim's catalog when Spark drops the table ({@link PurgeStatements}). Checks nothing.
   * The session argument is untouched (its class differs between Spark 3.5 and 4), hence raw types.
   */
  @SuppressWarnings("rawtypes")
  static final class PurgeCheck extends AbstractFunction1 {
    @Override
    public Object apply(Object session) {
      return new AbstractFunction1<LogicalPlan, BoxedUnit>() {
        @Override
        public BoxedUnit apply(LogicalPlan plan) {
          PurgeStatements.observe(plan);
          return BoxedUnit.UNIT;
        }
      };
    }
  }

  /** The function builder: Spark hands it the call's arguments (a Scala Seq, typed as Object here). */
  static final class Builder extends AbstractFunction1<Object, Expression> {
    @Override
    public Expression apply(Object arguments) {
      if (!((scala.collection.Iterable<?>) arguments).isEmpty()) {
        throw new IllegalArgumentException(FUNCTION + "() takes no arguments; call it as SELECT " + FUNCTION + "()");
      }
      return Literal.create(statusJson(SparkCompat.currentSession()), DataTypes.StringType);
    }
  }

  /**
   * {"catalogs": [shim catalog names], "tables": [registry entries as PythonApi.registryEntries],
   * "commits": [newest commit/stage-create outcomes], "plugin": {"served", "refused"}, "lost_events"},
   * the tables and commits of Spark session {@code sparkSession}'s catalogs only (compared by
   * identity; null: catalogs initialised outside Spark).
   */
  public static String statusJson(Object sparkSession) {
    List<CatalogSession> mine = CredentialRegistry.get().catalogs().of(sparkSession);
    Set<String> ids = new HashSet<>();
    mine.forEach(session -> ids.add(session.id));
    ObjectNode out = Json.object();
    ArrayNode catalogs = out.putArray("catalogs");
    shimCatalogs(mine).forEach(catalogs::add);
    out.set("tables", Json.read(CredentialRegistry.get().describe(mine)));
    JsonNode ring = Json.read(EventLog.drainAfter(0));
    Deque<JsonNode> outcomes = new ArrayDeque<>();
    for (JsonNode event : ring.path("events")) {
      String type = event.path("type").asText();
      boolean outcome = type.equals("commit.finished") || type.equals("stage_create.finished");
      if (outcome && ids.contains(event.path(EventLog.CATALOG_SESSION).asText())) {
        ((ObjectNode) event).remove(EventLog.CATALOG_SESSION);
        outcomes.addLast(event);
        if (outcomes.size() > RECENT_OUTCOMES) {
          outcomes.removeFirst();
        }
      }
    }
    ArrayNode commits = out.putArray("commits");
    outcomes.forEach(commits::add);
    out.put("lost_events", ring.path("lost").asLong());
    out.set("plugin", Json.read(ExecutorAsks.stats()));
    return Json.write(out);
  }

  /**
   * Shim catalogs by the driver's SparkConf (the same for every session), plus those of
   * {@code sessions} (a catalog a session defined at run time is that session's alone).
   */
  static Set<String> shimCatalogs(List<CatalogSession> sessions) {
    Set<String> names = new TreeSet<>();
    SparkEnv env = SparkEnv.get();
    if (env != null) {
      SparkConf conf = env.conf();
      String prefix = "spark.sql.catalog.";
      String suffix = ".catalog-impl";
      for (Tuple2<String, String> kv : conf.getAll()) {
        String key = kv._1();
        if (key.startsWith(prefix) && key.endsWith(suffix) && ExtRESTCatalog.class.getName().equals(kv._2())) {
          names.add(key.substring(prefix.length(), key.length() - suffix.length()));
        }
      }
    }
    for (CatalogSession session : sessions) {
      names.add(session.name);
    }
    return names;
  }
}
