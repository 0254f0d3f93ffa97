package io.catalogext.shim;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.refresh.StoreTokens;
import io.catalogext.shim.stores.GcsStorages;
import io.catalogext.shim.stores.PrefixTokens;
import io.catalogext.shim.stores.Store;
import io.catalogext.shim.wire.IcebergRefreshOrigins;
import io.catalogext.shim.wire.TrustedOrigins;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.iceberg.gcp.gcs.GCSFileIO;
import org.apache.iceberg.io.BulkDeletionFailureException;
import org.apache.iceberg.io.DelegateFileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.StorageCredential;
import org.apache.iceberg.io.SupportsStorageCredentials;
import org.apache.iceberg.util.SerializableMap;

/**
 * The GCS FileIO to name as {@code io-impl} for tables on {@code gs://}: Iceberg's GCSFileIO, one
 * per vended storage prefix, each built through its public {@code GCSFileIO(Supplier<Storage>)}
 * constructor with a client ({@link GcsStorages}) whose token comes from the table's entry in the
 * shim's registry, refreshed once per table per renewal by the driver (executors ask it over the
 * plugin channel), during a staged create too, and again when GCS answers 401.
 *
 * <p>Why one GCSFileIO per prefix: the supplier is told no location, so one client cannot pick the
 * token of the path it serves; each delegate's client holds its own prefix's token and this FileIO
 * routes each path to the delegate of the longest vended prefix it starts with, as GCSFileIO
 * itself routes. A table the shim's catalog did not hand out (no handle) gets plain GCSFileIO.
 * GCSFileIO's own refresh (its refresh endpoint, its scheduled re-fetch) is never started: the
 * delegates get no token, no endpoint and no storage credentials.
 */
public final class RefreshingGCSFileIO implements DelegateFileIO, SupportsStorageCredentials {
  private static final long serialVersionUID = 1L;
  private static final String ROOT = "gs";

  private SerializableMap<String, String> properties = SerializableMap.copyOf(Map.of());
  // a modifiable list, as GCSFileIO keeps it (Kryo)
  private ArrayList<StorageCredential> credentials = new ArrayList<>();
  /** Prefix ("gs": any path) -> its GCSFileIO, built on first use in each JVM. */
  private transient volatile Map<String, GCSFileIO> delegates;
  private transient volatile PrefixTokens tokens;

  public RefreshingGCSFileIO() {
    Store.GCS.require("gs");
  }

  @Override
  public void initialize(Map<String, String> props) {
    this.properties = SerializableMap.copyOf(props);
    reset();
  }

  @Override
  public void setCredentials(List<StorageCredential> storageCredentials) {
    this.credentials = new ArrayList<>(storageCredentials);
    reset();
  }

  @Override
  public List<StorageCredential> credentials() {
    return List.copyOf(credentials);
  }

  @Override
  public Map<String, String> properties() {
    return properties.immutableMap();
  }

  @Override
  public InputFile newInputFile(String path) {
    return delegateFor(path).newInputFile(path);
  }

  @Override
  public InputFile newInputFile(String path, long length) {
    return delegateFor(path).newInputFile(path, length);
  }

  @Override
  public OutputFile newOutputFile(String path) {
    return delegateFor(path).newOutputFile(path);
  }

  @Override
  public void deleteFile(String path) {
    delegateFor(path).deleteFile(path);
  }

  @Override
  public void deleteFiles(Iterable<String> paths) throws BulkDeletionFailureException {
    Map<GCSFileIO, List<String>> byDelegate = new LinkedHashMap<>();
    for (String path : paths) {
      byDelegate.computeIfAbsent(delegateFor(path), d -> new ArrayList<>()).add(path);
    }
    for (Map.Entry<GCSFileIO, List<String>> e : byDelegate.entrySet()) {
      e.getKey().deleteFiles(e.getValue());
    }
  }

  @Override
  public Iterable<FileInfo> listPrefix(String prefix) {
    return delegateFor(prefix).listPrefix(prefix);
  }

  @Override
  public void deletePrefix(String prefix) {
    delegateFor(prefix).deletePrefix(prefix);
  }

  @Override
  public synchronized void close() {
    if (delegates != null) {
      delegates.values().forEach(GCSFileIO::close);
      delegates = null;
    }
  }

  private synchronized void reset() {
    close();
    tokens = null;
  }

  /** The delegate of the longest vended prefix {@code path} starts with. */
  private GCSFileIO delegateFor(String path) {
    Map<String, GCSFileIO> built = delegates();
    if (tokens == null) {
      return built.get(ROOT); // not a table of the shim's catalog: Iceberg's own GCSFileIO
    }
    String prefix = tokens.prefixFor(path);
    if (prefix == null) {
      throw new IllegalStateException(tokens.noPrefixMessage(path));
    }
    return built.get(prefix.isEmpty() ? ROOT : prefix);
  }

  private Map<String, GCSFileIO> delegates() {
    Map<String, GCSFileIO> built = delegates;
    if (built == null) {
      synchronized (this) {
        if (delegates == null) {
          delegates = build();
        }
        built = delegates;
      }
    }
    return built;
  }

  private Map<String, GCSFileIO> build() {
    Map<String, GCSFileIO> out = new HashMap<>();
    if (!properties.containsKey(ShimKeys.TABLE_HANDLE)) {
      checkIcebergRefresh();
      GCSFileIO plain = new GCSFileIO();
      plain.initialize(properties);
      plain.setCredentials(credentials);
      out.put(ROOT, plain);
      return out;
    }
    PrefixTokens byPrefix = new PrefixTokens(properties, credentials, p -> p.startsWith(ROOT), Function.identity());
    Map<String, String> clientProps = withoutSecrets(properties);
    out.put(ROOT, delegate(clientProps, byPrefix, ""));
    for (String prefix : byPrefix.prefixes()) {
      out.put(prefix, delegate(clientProps, byPrefix, prefix));
    }
    tokens = byPrefix;
    return out;
  }

  /**
   * Iceberg's GCSFileIO refreshes on its own, with the catalog's auth session, from the endpoint its
   * properties name: per client (merged with each storage credential's config) and, from 1.11, on
   * a schedule set by the credentials' expiry, whatever its switch says. Refused before it is built
   * where that endpoint, or its OAuth2 token URL, is on an origin the user did not configure.
   */
  private void checkIcebergRefresh() {
    TrustedOrigins trust = IcebergRefreshOrigins.of(properties);
    IcebergRefreshOrigins.check(trust, properties, ShimKeys.GCS_REFRESH_ENDPOINT, null, "GCS");
    for (StorageCredential credential : credentials) {
      Map<String, String> merged = new HashMap<>(properties);
      merged.putAll(credential.config());
      trust.noteServerUrls("the storage credential of " + credential.prefix(), credential.config());
      IcebergRefreshOrigins.check(trust, merged, ShimKeys.GCS_REFRESH_ENDPOINT, null, "GCS");
    }
  }

  private static GCSFileIO delegate(Map<String, String> clientProps, PrefixTokens byPrefix, String prefix) {
    GCSFileIO io = new GCSFileIO(() -> GcsStorages.build(clientProps, () -> byPrefix.forPrefix(prefix)));
    io.initialize(clientProps); // its gcs.* settings (batch sizes, chunk sizes) and metrics; no token
    return io;
  }

  /** The table's properties without the tokens and the refresh endpoint GCSFileIO would use on its own. */
  static Map<String, String> withoutSecrets(Map<String, String> props) {
    Map<String, String> out = new HashMap<>();
    props.forEach((k, v) -> {
      if (!StoreTokens.isTokenKey(k) && !k.equals(ShimKeys.GCS_REFRESH_ENDPOINT) && !k.equals(ShimKeys.REFRESH_ENDPOINT)) {
        out.put(k, v);
      }
    });
    return out;
  }
}
