package io.catalogext.shim;

import io.catalogext.shim.config.ShimKeys;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.io.DelegateFileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.ImmutableStorageCredential;
import org.apache.iceberg.io.StorageCredential;
import org.apache.iceberg.io.SupportsStorageCredentials;
import org.junit.jupiter.api.Test;

/**
 * The shim's default FileIO routes each path by its scheme to its store's FileIO, built only when a
 * path of that store is met, each with the same properties (so the same registry entry) and
 * credentials; a store whose SDK is missing, one the user left out, and a scheme of no store each
 * fail in one line. The missing SDKs are real: the shim's classes are loaded by a class loader that
 * cannot see the Azure and Google SDKs, as on a Spark classpath without their bundles.
 */
public class RefreshingResolvingFileIOTest {
  private static final String ADLS = "abfss://box@acct.dfs.core.windows.net/wh/t/metadata/v1.json";
  private static final String GCS = "gs://bucket/wh/t/metadata/v1.json";
  private static final String S3 = "s3://bucket/wh/t/metadata/v1.json";

  private static Map<String, String> props() {
    Map<String, String> props = new HashMap<>();
    props.put("client.region", "us-east-1"); // S3FileIO's client needs one; nothing is sent
    props.put("s3.endpoint", "http://127.0.0.1:9");
    props.put("adls.connection-string.acct.dfs.core.windows.net", "http://127.0.0.1:9/acct");
    props.put("gcs.service.host", "http://127.0.0.1:9");
    props.put("gcs.project-id", "p");
    return props;
  }

  private static RefreshingResolvingFileIO router(Map<String, String> props, List<StorageCredential> credentials) {
    RefreshingResolvingFileIO io = new RefreshingResolvingFileIO();
    io.setCredentials(credentials);
    io.initialize(props);
    return io;
  }

  @Test
  void eachSchemeReachesItsStoresFileIOBuiltOncePerStore() {
    try (RefreshingResolvingFileIO io = router(props(), List.of())) {
      DelegateFileIO s3 = io.delegateFor(S3);
      assertTrue(s3 instanceof S3FileIO, s3.getClass().getName());
      assertSame(s3, io.delegateFor("s3a://bucket/x"));
      assertSame(s3, io.delegateFor("S3N://bucket/x"));
      DelegateFileIO adls = io.delegateFor(ADLS);
      assertTrue(adls instanceof RefreshingADLSFileIO, adls.getClass().getName());
      for (String other : List.of("abfs://box@acct.dfs.core.windows.net/x", "wasb://box@acct.blob.core.windows.net/x",
          "wasbs://box@acct.blob.core.windows.net/x")) {
        assertSame(adls, io.delegateFor(other));
      }
      DelegateFileIO gcs = io.delegateFor(GCS);
      assertTrue(gcs instanceof RefreshingGCSFileIO, gcs.getClass().getName());
      assertNotSame(s3, gcs);
      assertEquals(S3, io.newInputFile(S3).location()); // S3FileIO builds its client: no region error
    }
  }

  @Test
  void everyDelegateGetsTheSameTableEntryAndCredentials() {
    Map<String, String> props = props();
    props.put(ShimKeys.TABLE_HANDLE, "handle-1");
    List<StorageCredential> credentials = List.of(
        ImmutableStorageCredential.builder().prefix("s3://bucket/wh").config(Map.of("s3.access-key-id", "k")).build(),
        ImmutableStorageCredential.builder().prefix("gs://bucket/wh").config(Map.of("gcs.oauth2.token", "t")).build());
    try (RefreshingResolvingFileIO io = router(props, credentials)) {
      for (String path : List.of(S3, ADLS, GCS)) {
        DelegateFileIO delegate = io.delegateFor(path);
        assertEquals("handle-1", delegate.properties().get(ShimKeys.TABLE_HANDLE), path);
        assertEquals(credentials, ((SupportsStorageCredentials) delegate).credentials(), path);
      }
    }
  }

  @Test
  void aStoreLeftOutOfStoresAndASchemeOfNoStoreAreRefusedInOneLine() {
    Map<String, String> props = props();
    props.put(ShimKeys.STORES, "s3, adls");
    try (RefreshingResolvingFileIO io = router(props, List.of())) {
      assertTrue(io.delegateFor(S3) instanceof S3FileIO);
      IllegalStateException refused = assertThrows(IllegalStateException.class, () -> io.newInputFile(GCS));
      assertOneLine(refused.getMessage(), "gs://", "GCS", "only s3, adls", "add \"gcs\" to store=");
      IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> io.newInputFile("hdfs://nn/wh/t"));
      assertOneLine(unknown.getMessage(), "hdfs://nn/wh/t", "is on no store", "io-impl");
    }
    props.put(ShimKeys.STORES, "s3,nfs");
    try (RefreshingResolvingFileIO io = router(props, List.of())) {
      IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> io.newInputFile(S3));
      assertOneLine(bad.getMessage(), ShimKeys.STORES, "nfs", "s3, adls or gcs");
    }
  }

  @Test
  void aStoreWithoutItsSdkFailsInOneLineAndNeverBreaksS3() throws Exception {
    try (HidingLoader loader = new HidingLoader("com.azure.", "com.google.")) {
      FileIO io = (FileIO) loader.loadClass(RefreshingResolvingFileIO.class.getName()).getDeclaredConstructor().newInstance();
      assertSame(loader, io.getClass().getClassLoader()); // the shim's classes see no SDK
      io.initialize(props());
      assertEquals(S3, io.newInputFile(S3).location());
      IllegalStateException adls = assertThrows(IllegalStateException.class, () -> io.newInputFile(ADLS));
      assertOneLine(adls.getMessage(), "abfss://", "ADLS", "iceberg-azure-bundle", "configure(store=\"adls\")", "--store adls");
      IllegalStateException gcs = assertThrows(IllegalStateException.class, () -> io.newOutputFile(GCS));
      assertOneLine(gcs.getMessage(), "gs://", "GCS", "iceberg-gcp-bundle", "configure(store=\"gcs\")", "--store gcs");
      assertEquals(S3, io.newInputFile(S3).location()); // still serving S3
      io.close();
    }
  }

  @Test
  void aSerializedRouterBuildsItsDelegatesAgainWhereItLands() throws Exception {
    Map<String, String> props = props();
    props.put(ShimKeys.TABLE_HANDLE, "handle-2");
    try (RefreshingResolvingFileIO io = router(props, List.of())) {
      DelegateFileIO before = io.delegateFor(S3);
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
        out.writeObject(io);
      }
      try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()));
          RefreshingResolvingFileIO copy = (RefreshingResolvingFileIO) in.readObject()) {
        assertEquals("handle-2", copy.properties().get(ShimKeys.TABLE_HANDLE));
        DelegateFileIO after = copy.delegateFor(S3);
        assertTrue(after instanceof S3FileIO);
        assertNotSame(before, after);
      }
    }
  }

  private static void assertOneLine(String message, String... parts) {
    assertFalse(message.contains("\n"), message);
    for (String part : parts) {
      assertTrue(message.contains(part), "'" + part + "' not in: " + message);
    }
  }

  /**
   * Loads the shim's own classes itself (so what they load goes through it) and refuses the hidden
   * packages; everything else (Iceberg, the AWS SDK, the JDK) comes from the test's class path.
   */
  private static final class HidingLoader extends URLClassLoader {
    private final String[] hidden;

    HidingLoader(String... hidden) {
      super(new URL[] {RefreshingResolvingFileIO.class.getProtectionDomain().getCodeSource().getLocation()},
          RefreshingResolvingFileIOTest.class.getClassLoader());
      this.hidden = hidden;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      for (String prefix : hidden) {
        if (name.startsWith(prefix)) {
          throw new ClassNotFoundException(name + " (hidden by the test)");
        }
      }
      if (!name.startsWith("io.catalogext.shim.")) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> loaded = findLoadedClass(name);
        return loaded != null ? loaded : findClass(name);
      }
    }

    @Override
    public void close() throws IOException {
      super.close();
    }
  }
}
