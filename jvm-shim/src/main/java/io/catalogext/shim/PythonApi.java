package io.catalogext.shim;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.refresh.ExecutorAsks;
import io.catalogext.shim.refresh.PythonCredentialBridge;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.spark.CatalogReads;
import io.catalogext.shim.staging.StagedTables;
import io.catalogext.shim.util.Json;

import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;

/**
 * The one entry point Python ({@code pyspark_catalog_ext.spark.shim_api.ShimJvm}) calls into the shim.
 *
 * <p>Static methods only, each delegating to the class that does the work. Arguments and answers
 * are primitives, JSON strings or opaque handles (a {@link StagedTables.Staged}), so the Py4J
 * boundary stays narrow and Python parses every answer in one place.
 */
public final class PythonApi {
  private PythonApi() {}

  // ---- credential registry (CredentialRegistry) ----

  /** JSON array: one object per tracked table entry; no secrets. */
  public static String registryEntries() {
    return CredentialRegistry.get().describe();
  }

  /** JSON of session {@code spark}'s read-only status, as SQL {@code catalog_ext_status()} answers it there. */
  public static String status(SparkSession spark) {
    return CatalogExtSqlExtensions.statusJson(spark);
  }

  /** JSON {"served", "refused"}: executor requests the driver plugin answered or turned away. */
  public static String pluginStats() {
    return ExecutorAsks.stats();
  }

  /** Refreshes one entry unless it was refreshed since {@code seenGeneration}; true if it fetched. */
  public static boolean refresh(String handle, long seenGeneration) throws Exception {
    return CredentialRegistry.get().refresh(handle, seenGeneration);
  }

  public static void enableCustomSource(String catalog) {
    CredentialRegistry.get().sources().enableCustomSource(catalog);
  }

  public static void registerBridge(PythonCredentialBridge bridge) {
    CredentialRegistry.get().sources().registerBridge(bridge);
  }

  public static void unregisterBridge() {
    CredentialRegistry.get().sources().unregisterBridge();
  }

  /**
   * Python's RefreshPolicy for catalog {@code catalog}: its {@code catalog-ext.refresh.*} properties
   * as one JSON object, read as the catalog's own are (a bad value is Knobs' one-line error).
   */
  public static void setRefreshPolicy(String catalog, String propertiesJson) {
    CredentialRegistry.get().sources().setRefreshPolicy(catalog, RefreshPolicy.fromProperties(Json.stringMap(Json.read(propertiesJson))));
  }

  // ---- commit guards (CommitGuard) ----

  /** JSON {catalog: evidence} of every catalog's commit guard in this JVM (no secrets: counts and event lines). */
  public static String commitEvidence() {
    ObjectNode out = Json.object();
    for (CatalogSession session : CredentialRegistry.get().catalogs().all()) {
      out.set(session.name, session.guard.evidence());
    }
    return Json.write(out);
  }

  /** Forgets the commit guards' evidence (tests). */
  public static void resetCommitEvidence() {
    for (CatalogSession session : CredentialRegistry.get().catalogs().all()) {
      session.guard.forgetEvidence();
    }
  }

  // ---- events (EventLog) ----

  /** JSON {"events": [...], "lost": n}: events after {@code afterSeq}. */
  public static String drainEventsAfter(long afterSeq) {
    return EventLog.drainAfter(afterSeq);
  }

  // ---- read-only catalog access (CatalogReads): Python's tools read through Spark's catalog ----

  /** JSON {"uri" (no user info or query), "warehouse", "shim"} of Spark catalog {@code catalog}. */
  public static String catalogInfo(SparkSession spark, String catalog) {
    return CatalogReads.describe(spark, catalog);
  }

  /** JSON array of the namespaces under {@code parentJson} (a JSON array of levels; [] = top). */
  public static String listNamespaces(SparkSession spark, String catalog, String parentJson) throws Exception {
    return CatalogReads.listNamespaces(spark, catalog, CatalogReads.strings(parentJson));
  }

  public static boolean namespaceExists(SparkSession spark, String catalog, String namespaceJson) {
    return CatalogReads.namespaceExists(spark, catalog, CatalogReads.strings(namespaceJson));
  }

  /** JSON array of the identifiers (levels..., name) of the tables in {@code namespaceJson}. */
  public static String listTables(SparkSession spark, String catalog, String namespaceJson) throws Exception {
    return CatalogReads.listTables(spark, catalog, CatalogReads.strings(namespaceJson));
  }

  public static boolean tableExists(SparkSession spark, String catalog, String identifierJson) {
    return CatalogReads.tableExists(spark, catalog, CatalogReads.strings(identifierJson));
  }

  /** JSON {"metadata-location", "metadata"} of the table as the catalog has it now; no secrets. */
  public static String loadTable(SparkSession spark, String catalog, String identifierJson) {
    return CatalogReads.loadTable(spark, catalog, CatalogReads.strings(identifierJson));
  }

  /** One read-only GET of a catalog route on the catalog's own session; JSON text or "null". */
  public static String catalogGet(SparkSession spark, String catalog, String route, String paramsJson) {
    return CatalogReads.get(CatalogReads.session(spark, catalog), route, CatalogReads.params(paramsJson));
  }

  // ---- staged tables (StagedTables) ----

  /** Opens a staged create/replace; Python calls the returned handle's JSON methods. */
  public static StagedTables.Staged stage(SparkSession spark, StructType schema, String optionsJson) {
    return StagedTables.stage(spark, schema, optionsJson);
  }
}
