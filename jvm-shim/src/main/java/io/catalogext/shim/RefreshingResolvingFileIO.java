package io.catalogext.shim;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.stores.RoutingFileIO;
import io.catalogext.shim.stores.Store;

import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.io.DelegateFileIO;
import org.apache.iceberg.io.StorageCredential;
import org.apache.iceberg.io.SupportsStorageCredentials;

/**
 * The shim's default {@code io-impl}: one FileIO for a catalog whose tables are on S3, ADLS and GCS
 * together, routing each path by its scheme as Iceberg's ResolvingFileIO does ({@code s3}, {@code s3a},
 * {@code s3n} to S3FileIO with the shim's refreshing client factory; {@code abfs[s]}, {@code wasb[s]}
 * to {@link RefreshingADLSFileIO}; {@code gs} to {@link RefreshingGCSFileIO}). Every delegate gets this
 * FileIO's properties and storage credentials as they are, so all of them draw their tokens from the
 * same registry entry (the table handle in the properties) and each picks the credentials of its
 * own store's prefixes.
 *
 * <p>A store's delegate, and with it the store's SDK, is loaded only when a path of that store is
 * met: a catalog whose tables are all on S3 never needs the Azure or Google SDK. A path whose store's
 * SDK is missing fails in one line naming the scheme, the store and what adds it; a store the user
 * left out of {@code catalog-ext.stores} ({@code configure(store=...)}) and a scheme of no store
 * are refused in one line too (Iceberg's ResolvingFileIO would try Hadoop's FileIO there; the shim
 * refreshes no credentials for it).
 */
public final class RefreshingResolvingFileIO extends RoutingFileIO {
  private static final long serialVersionUID = 1L;
  /** The FileIO serving each store (by name: a class is loaded only once its store is met). */
  private static final Map<Store, String> FILE_IO = Map.of(
      Store.S3, "org.apache.iceberg.aws.s3.S3FileIO",
      Store.ADLS, "io.catalogext.shim.RefreshingADLSFileIO",
      Store.GCS, "io.catalogext.shim.RefreshingGCSFileIO");

  public RefreshingResolvingFileIO() {}

  @Override
  protected Routes newRoutes(Map<String, String> props, List<StorageCredential> creds) {
    return new ByScheme(props, creds, allowed(props.get(ShimKeys.STORES)));
  }

  /** The FileIO serving {@code path} in this JVM (built when its store is first met). */
  DelegateFileIO delegateFor(String path) {
    return routes().ioFor(path);
  }

  /** The stores {@code catalog-ext.stores} names (all when unset); one line for a name of no store. */
  static Set<Store> allowed(String names) {
    if (names == null || names.isBlank()) {
      return EnumSet.allOf(Store.class);
    }
    Set<Store> out = EnumSet.noneOf(Store.class);
    for (String name : names.split(",")) {
      Store store = Store.ofKey(name.trim().toLowerCase(Locale.ROOT));
      if (store == null) {
        throw new IllegalArgumentException("catalog-ext: " + ShimKeys.STORES + " names " + name.trim()
            + ", not a store: use s3, adls or gcs, comma-separated");
      }
      out.add(store);
    }
    return out;
  }

  /** One delegate per store, built on the first path of that store. */
  private static final class ByScheme implements Routes {
    private final Map<String, String> props;
    private final List<StorageCredential> creds;
    private final Set<Store> allowed;
    private final Map<Store, DelegateFileIO> built = new EnumMap<>(Store.class);

    ByScheme(Map<String, String> props, List<StorageCredential> creds, Set<Store> allowed) {
      this.props = props;
      this.creds = creds;
      this.allowed = allowed;
    }

    @Override
    public DelegateFileIO ioFor(String path) {
      String scheme = Store.schemeOf(path);
      Store store = Store.ofScheme(scheme);
      if (store == null) {
        throw new IllegalArgumentException("catalog-ext: " + path + " is on no store the shim serves (schemes "
            + String.join(", ", Store.allSchemes()) + "): name Iceberg's own FileIO as the catalog's io-impl for it");
      }
      if (!allowed.contains(store)) {
        throw new IllegalStateException("catalog-ext: tables on " + scheme + ":// are on " + store.title
            + ", and this catalog serves only " + keys(allowed) + " (store=): add \"" + store.key
            + "\" to store= or leave store= out");
      }
      synchronized (built) {
        return built.computeIfAbsent(store, s -> load(s, scheme));
      }
    }

    private DelegateFileIO load(Store store, String scheme) {
      store.require(scheme);
      Map<String, String> delegateProps = new HashMap<>(props);
      // this FileIO keeps the creation stack trace, as ResolvingFileIO does for S3FileIO
      delegateProps.put("init-creation-stacktrace", "false");
      DelegateFileIO io = newInstance(FILE_IO.get(store));
      if (io instanceof SupportsStorageCredentials) {
        ((SupportsStorageCredentials) io).setCredentials(new ArrayList<>(creds)); // each takes its store's prefixes
      }
      io.initialize(delegateProps);
      return io;
    }

    private static DelegateFileIO newInstance(String className) {
      try {
        Class<?> type = Class.forName(className, true, RefreshingResolvingFileIO.class.getClassLoader());
        return (DelegateFileIO) type.getDeclaredConstructor().newInstance();
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause();
        throw cause instanceof RuntimeException ? (RuntimeException) cause : new IllegalStateException(cause);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("catalog-ext: cannot build " + className + ": " + e, e);
      }
    }

    private static String keys(Set<Store> stores) {
      List<String> out = new ArrayList<>();
      stores.forEach(s -> out.add(s.key));
      return String.join(", ", out);
    }

    @Override
    public void close() {
      synchronized (built) {
        built.values().forEach(DelegateFileIO::close);
        built.clear();
      }
    }
  }
}
