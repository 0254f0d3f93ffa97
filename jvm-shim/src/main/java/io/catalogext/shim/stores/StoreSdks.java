package io.catalogext.shim.stores;

/**
 * The shim's GCS and ADLS FileIOs need that store's SDK beside Iceberg's runtime (which carries
 * Iceberg's own GCS and ADLS classes, not the SDKs): Iceberg's {@code iceberg-gcp-bundle} or
 * {@code iceberg-azure-bundle}. Without it, a one-line error that says so, instead of a
 * NoClassDefFoundError from deep inside the first table load.
 */
public final class StoreSdks {
  public static final String GCS = "com.google.cloud.storage.Storage";
  public static final String ADLS = "com.azure.storage.file.datalake.DataLakeFileSystemClient";

  private StoreSdks() {}

  /** Fails in one line unless class {@code sdkClass} (one of the constants) can be loaded. */
  public static void require(String sdkClass) {
    try {
      Class.forName(sdkClass, false, StoreSdks.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      boolean gcs = GCS.equals(sdkClass);
      throw new IllegalStateException((gcs ? "GCS" : "ADLS") + " tables need Iceberg's "
          + (gcs ? "iceberg-gcp-bundle" : "iceberg-azure-bundle") + " on the classpath (" + sdkClass
          + " is missing): configure(store=\"" + (gcs ? "gcs" : "adls") + "\") or `pyspark-catalog-ext spark-conf --store "
          + (gcs ? "gcs" : "adls") + "` adds it");
    }
  }
}
