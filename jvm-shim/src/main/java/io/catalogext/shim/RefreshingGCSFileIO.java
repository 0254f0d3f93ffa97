package io.catalogext.shim;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.stores.GcsStorages;
import io.catalogext.shim.stores.PrefixTokens;
import io.catalogext.shim.stores.Store;
import io.catalogext.shim.stores.StoreFileIO;
import io.catalogext.shim.wire.IcebergRefreshOrigins;
import io.catalogext.shim.wire.TrustedOrigins;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.gcp.gcs.GCSFileIO;
import org.apache.iceberg.io.DelegateFileIO;
import org.apache.iceberg.io.StorageCredential;

/**
 * The GCS FileIO for tables on {@code gs://} ({@link RefreshingResolvingFileIO} hands it their paths;
 * it can be named as {@code io-impl} itself): Iceberg's GCSFileIO, one per vended storage prefix,
 * each built through its public {@code GCSFileIO(Supplier<Storage>)} constructor with a client
 * ({@link GcsStorages}) whose token comes from the table's entry in the shim's registry, refreshed
 * once per table per renewal by the driver (executors ask it over the plugin channel), during a
 * staged create too, and again when GCS answers 401.
 *
 * <p>Why one GCSFileIO per prefix: the supplier is told no location, so one client cannot pick the
 * token of the path it serves; each delegate's client holds its own prefix's token and this FileIO
 * routes each path to the delegate of the longest vended prefix it starts with, as GCSFileIO
 * itself routes. A table the shim's catalog did not hand out (no handle) gets plain GCSFileIO.
 * GCSFileIO's own refresh (its refresh endpoint, its scheduled re-fetch) is never started: the
 * delegates get no token, no endpoint and no storage credentials.
 */
public final class RefreshingGCSFileIO extends StoreFileIO {
  private static final long serialVersionUID = 1L;
  private static final String ROOT = "gs";

  public RefreshingGCSFileIO() {
    Store.GCS.require("gs");
  }

  @Override
  protected DelegateFileIO plain(Map<String, String> props, List<StorageCredential> creds) {
    checkIcebergRefresh(props, creds);
    GCSFileIO plain = new GCSFileIO(); // not a table of the shim's catalog: Iceberg's own GCSFileIO
    plain.initialize(props);
    plain.setCredentials(creds);
    return plain;
  }

  @Override
  protected boolean ofThisStore(String prefix) {
    return prefix.startsWith(ROOT);
  }

  @Override
  protected String refreshEndpointKey() {
    return ShimKeys.GCS_REFRESH_ENDPOINT;
  }

  @Override
  protected Routes vendedRoutes(Map<String, String> clientProps, PrefixTokens byPrefix) {
    Map<String, GCSFileIO> delegates = new HashMap<>();
    delegates.put(ROOT, delegate(clientProps, byPrefix, ""));
    for (String prefix : byPrefix.prefixes()) {
      delegates.put(prefix, delegate(clientProps, byPrefix, prefix));
    }
    return new Routes() {
      /** The delegate of the longest vended prefix {@code path} starts with. */
      @Override
      public DelegateFileIO ioFor(String path) {
        String prefix = byPrefix.requirePrefix(path);
        return delegates.get(prefix.isEmpty() ? ROOT : prefix);
      }

      @Override
      public void close() {
        delegates.values().forEach(GCSFileIO::close);
      }
    };
  }

  /**
   * Iceberg's GCSFileIO refreshes on its own, with the catalog's auth session, from the endpoint its
   * properties name: per client (merged with each storage credential's config) and, from 1.11, on
   * a schedule set by the credentials' expiry, whatever its switch says. Refused before it is built
   * where that endpoint, or its OAuth2 token URL, is on an origin the user did not configure.
   */
  private static void checkIcebergRefresh(Map<String, String> props, List<StorageCredential> creds) {
    TrustedOrigins trust = IcebergRefreshOrigins.of(props);
    IcebergRefreshOrigins.check(trust, props, ShimKeys.GCS_REFRESH_ENDPOINT, null, "GCS");
    for (StorageCredential credential : creds) {
      Map<String, String> merged = new HashMap<>(props);
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
}
