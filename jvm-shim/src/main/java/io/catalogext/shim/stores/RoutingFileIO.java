package io.catalogext.shim.stores;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.iceberg.io.BulkDeletionFailureException;
import org.apache.iceberg.io.DelegateFileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.StorageCredential;
import org.apache.iceberg.io.SupportsStorageCredentials;
import org.apache.iceberg.util.SerializableMap;

/**
 * The shell the shim's FileIOs share: a serializable FileIO holding only its properties and storage
 * credentials, which hands every call to the FileIO that serves the call's path ({@link Routes}),
 * built on first use in each JVM (never serialized) and rebuilt when the properties or credentials
 * change. Subclasses say only how paths are routed.
 */
public abstract class RoutingFileIO implements DelegateFileIO, SupportsStorageCredentials {
  private static final long serialVersionUID = 1L;
  /** Paths handed to the delegates per bulk delete: bounded, as Iceberg's ResolvingFileIO batches them. */
  static final int DELETE_BATCH = 100_000;

  private SerializableMap<String, String> properties = SerializableMap.copyOf(Map.of());
  // a modifiable list, as Iceberg's FileIOs keep it (Kryo)
  private ArrayList<StorageCredential> credentials = new ArrayList<>();
  private transient volatile Routes routes;

  /** How paths reach the FileIOs that serve them. */
  protected interface Routes {
    /** The FileIO serving {@code path}; throws (one line) when none may. */
    DelegateFileIO ioFor(String path);

    /** {@code call} on the FileIO serving {@code path} (a route may wrap it in what the path needs). */
    default <T> T at(String path, Function<DelegateFileIO, T> call) {
      return call.apply(ioFor(path));
    }

    /** The paths handed to the FileIO serving each, in batches of at most {@link #DELETE_BATCH}. */
    default void deleteFiles(Iterable<String> paths) {
      Map<DelegateFileIO, List<String>> batch = new LinkedHashMap<>();
      int held = 0;
      for (String path : paths) {
        batch.computeIfAbsent(ioFor(path), io -> new ArrayList<>()).add(path);
        if (++held == DELETE_BATCH) {
          batch.forEach(DelegateFileIO::deleteFiles);
          batch.clear();
          held = 0;
        }
      }
      batch.forEach(DelegateFileIO::deleteFiles);
    }

    /** Closes every FileIO built so far. */
    void close();
  }

  /** Every path to {@code io}. */
  protected static Routes single(DelegateFileIO io) {
    return new Routes() {
      @Override
      public DelegateFileIO ioFor(String path) {
        return io;
      }

      @Override
      public void close() {
        io.close();
      }
    };
  }

  /** The routes for these properties and credentials (called once per JVM and change). */
  protected abstract Routes newRoutes(Map<String, String> props, List<StorageCredential> creds);

  @Override
  public void initialize(Map<String, String> props) {
    this.properties = SerializableMap.copyOf(props);
    close();
  }

  @Override
  public void setCredentials(List<StorageCredential> storageCredentials) {
    this.credentials = new ArrayList<>(storageCredentials);
    close();
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
    return routes().at(path, io -> io.newInputFile(path));
  }

  @Override
  public InputFile newInputFile(String path, long length) {
    return routes().at(path, io -> io.newInputFile(path, length));
  }

  @Override
  public OutputFile newOutputFile(String path) {
    return routes().at(path, io -> io.newOutputFile(path));
  }

  @Override
  public void deleteFile(String path) {
    routes().at(path, io -> {
      io.deleteFile(path);
      return null;
    });
  }

  @Override
  public void deleteFiles(Iterable<String> paths) throws BulkDeletionFailureException {
    routes().deleteFiles(paths);
  }

  @Override
  public Iterable<FileInfo> listPrefix(String prefix) {
    return routes().at(prefix, io -> io.listPrefix(prefix));
  }

  @Override
  public void deletePrefix(String prefix) {
    routes().at(prefix, io -> {
      io.deletePrefix(prefix);
      return null;
    });
  }

  @Override
  public synchronized void close() {
    if (routes != null) {
      routes.close();
      routes = null;
    }
  }

  /** The routes of this JVM, built on first use. */
  protected final Routes routes() {
    Routes current = routes;
    if (current == null) {
      synchronized (this) {
        if (routes == null) {
          routes = newRoutes(properties.immutableMap(), List.copyOf(credentials));
        }
        current = routes;
      }
    }
    return current;
  }
}
