package io.catalogext.shim.stores;

import io.catalogext.shim.config.ShimKeys;

import com.azure.core.http.HttpClient;
import com.azure.storage.file.datalake.DataLakeFileSystemClient;
import com.azure.storage.file.datalake.DataLakeFileSystemClientBuilder;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.iceberg.util.SerializableFunction;
import org.apache.iceberg.util.SerializableMap;

/**
 * The client function Iceberg 1.11+'s ADLSFileIO is built with (its public
 * {@code ADLSFileIO(SerializableFunction<ADLSLocation, DataLakeFileSystemClient>)}): a client for a
 * storage account and container, built as ADLSFileIO builds its own (endpoint from
 * {@code adls.connection-string.<host>}, else {@code https://<host>}; the container as file system;
 * one shared HTTP client), with {@link AdlsSasPolicy} instead of a fixed SAS.
 *
 * <p>ADLSLocation, the function's argument, is package-private in Iceberg: its account and
 * container cannot be read from here without reflection into Iceberg's privates. So the shim's
 * FileIO names the location it is about to hand ADLSFileIO ({@link #at}) on the calling thread:
 * ADLSFileIO calls the function from {@code client(path)}, synchronously, once per account and
 * container (its documented cache), and the shim's FileIO makes that first call itself, before any
 * of ADLSFileIO's own threads (bulk deletes) or lazy listings could. Should an Iceberg release call
 * the function otherwise, {@link #apply} fails in one line rather than guess the location.
 */
public final class AdlsClients implements SerializableFunction<Object, DataLakeFileSystemClient> {
  private static final long serialVersionUID = 1L;
  // One HTTP client (connection pool) for every ADLS client of this JVM, as ADLSFileIO shares its own.
  private static final HttpClient HTTP = HttpClient.createDefault();

  private final SerializableMap<String, String> properties;
  private final transient Supplier<PrefixTokens> tokens;
  private final transient ThreadLocal<StorePaths.AdlsPath> routed = new ThreadLocal<>();

  /**
   * @param properties the table's properties without secrets (endpoints per host)
   * @param tokens the table's tokens per prefix in this JVM
   */
  public AdlsClients(Map<String, String> properties, Supplier<PrefixTokens> tokens) {
    this.properties = SerializableMap.copyOf(properties);
    this.tokens = tokens;
  }

  /** Runs {@code call} (a call into ADLSFileIO about {@code location}) with the location named for the function. */
  public <T> T at(String location, Supplier<T> call) {
    StorePaths.AdlsPath outer = routed.get();
    routed.set(StorePaths.adls(location));
    try {
      return call.get();
    } finally {
      if (outer == null) {
        routed.remove();
      } else {
        routed.set(outer);
      }
    }
  }

  @Override
  public DataLakeFileSystemClient apply(Object location) {
    StorePaths.AdlsPath path = routed.get();
    if (path == null) {
      throw new IllegalStateException("ADLSFileIO asked the shim for a client outside a call the shim routed: this"
          + " Iceberg builds its ADLS clients otherwise than 1.11 and 1.12 do; name Iceberg's own ADLSFileIO as io-impl");
    }
    String endpoint = endpoint(path.host);
    DataLakeFileSystemClientBuilder builder = new DataLakeFileSystemClientBuilder().httpClient(HTTP).endpoint(endpoint);
    if (!path.container.isEmpty()) {
      builder.fileSystemName(path.container);
    }
    return builder.addPolicy(new AdlsSasPolicy(path.host, path.container, endpoint, tokens.get())).buildClient();
  }

  /** The client's endpoint for {@code host}, as Iceberg's AzureProperties picks it. */
  String endpoint(String host) {
    String connectionString = properties.get(ShimKeys.ADLS_CONNECTION_STRING_PREFIX + host);
    return connectionString != null && !connectionString.isEmpty() ? connectionString : "https://" + host;
  }
}
