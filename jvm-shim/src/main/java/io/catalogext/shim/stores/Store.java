package io.catalogext.shim.stores;

import io.catalogext.shim.errors.StoreSdkMissingException;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The stores the shim serves, told apart by a location's scheme (as Iceberg's ResolvingFileIO tells
 * them apart), each with the SDK class its FileIO needs and what adds that SDK. Iceberg's Spark
 * runtime carries Iceberg's own S3, GCS and ADLS classes but not the Azure or Google SDKs: those come
 * in Iceberg's bundles, which the package adds per store.
 */
public enum Store {
  S3("S3", "s3", "software.amazon.awssdk.services.s3.S3Client", "iceberg-aws-bundle", "s3", "s3a", "s3n"),
  ADLS("ADLS", "adls", "com.azure.storage.file.datalake.DataLakeFileSystemClient", "iceberg-azure-bundle", "abfs", "abfss", "wasb", "wasbs"),
  GCS("GCS", "gcs", "com.google.cloud.storage.Storage", "iceberg-gcp-bundle", "gs");

  /** The store's name as users know it. */
  public final String title;
  /** Its name in {@code configure(store=...)} and {@code catalog-ext.stores}. */
  public final String key;
  private final String sdkClass;
  private final String bundle;
  private final List<String> schemes;

  Store(String title, String key, String sdkClass, String bundle, String... schemes) {
    this.title = title;
    this.key = key;
    this.sdkClass = sdkClass;
    this.bundle = bundle;
    this.schemes = List.of(schemes);
  }

  /** The scheme of {@code location} ({@code abfss} of {@code abfss://c@host/p}), lower case; "" when it has none. */
  public static String schemeOf(String location) {
    int end = location == null ? -1 : location.indexOf("://");
    return end <= 0 ? "" : location.substring(0, end).toLowerCase(Locale.ROOT);
  }

  /** The store of {@code scheme}, or null. */
  public static Store ofScheme(String scheme) {
    for (Store store : values()) {
      if (store.schemes.contains(scheme)) {
        return store;
      }
    }
    return null;
  }

  /** The store named {@code key} ("s3", "adls", "gcs"), or null. */
  public static Store ofKey(String key) {
    for (Store store : values()) {
      if (store.key.equals(key)) {
        return store;
      }
    }
    return null;
  }

  /** Every scheme served, for messages. */
  public static List<String> allSchemes() {
    List<String> out = new ArrayList<>();
    for (Store store : values()) {
      out.addAll(store.schemes);
    }
    return out;
  }

  /** Whether this store's SDK can be loaded by {@code loader} (nothing is initialised). */
  public boolean sdkPresent(ClassLoader loader) {
    try {
      Class.forName(sdkClass, false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /**
   * Fails in one line unless this store's SDK can be loaded (beside the shim's classes): never a
   * NoClassDefFoundError, or an SDK's own error, from deep inside the first table load.
   */
  public void require(String scheme) {
    if (!sdkPresent(Store.class.getClassLoader())) {
      throw new StoreSdkMissingException(missingSdk(scheme));
    }
  }

  /** The one-line refusal for a location on {@code scheme} when this store's SDK is missing. */
  public String missingSdk(String scheme) {
    String how = this == S3
        ? "the package's jars carry it in every jars= mode (did spark.jars or --packages leave out the stack's jars?)"
        : "add it with configure(store=\"" + key + "\") or `pyspark-catalog-ext spark-conf --store " + key + "`";
    return "catalog-ext: tables on " + scheme + ":// are on " + title + ", whose SDK (Iceberg's " + bundle
        + ") is not on the classpath: " + how;
  }
}
