package io.catalogext.shim;

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

  /** JSON {"served", "refused"}: executor requests the driver plugin answered or turned away. */
  public static String pluginStats() {
    return CredentialRegistry.get().pluginStats();
  }

  /** Refreshes one entry unless it was refreshed since {@code seenGeneration}; true if it fetched. */
  public static boolean refresh(String handle, long seenGeneration) throws Exception {
    return CredentialRegistry.get().refresh(handle, seenGeneration);
  }

  public static void enableCustomSource(String catalog) {
    CredentialRegistry.get().enableCustomSource(catalog);
  }

  public static void registerBridge(PythonCredentialBridge bridge) {
    CredentialRegistry.get().registerBridge(bridge);
  }

  public static void unregisterBridge() {
    CredentialRegistry.get().unregisterBridge();
  }

  public static void setRefreshPolicy(
      long minAheadMs, double lifetimeFraction, long checkIntervalMs, long initialBackoffMs, long maxBackoffMs,
      long timeoutMs, long assumedLifetimeMs) {
    CredentialRegistry.get().setRefreshPolicy(
        minAheadMs, lifetimeFraction, checkIntervalMs, initialBackoffMs, maxBackoffMs, timeoutMs, assumedLifetimeMs);
  }

  // ---- events (EventLog) ----

  /** JSON {"events": [...], "lost": n}: events after {@code afterSeq}. */
  public static String drainEventsAfter(long afterSeq) {
    return EventLog.drainAfter(afterSeq);
  }

  // ---- staged tables (StagedTables) ----

  /** Opens a staged create/replace; Python calls the returned handle's JSON methods. */
  public static StagedTables.Staged stage(SparkSession spark, StructType schema, String optionsJson) {
    return StagedTables.stage(spark, schema, optionsJson);
  }
}
