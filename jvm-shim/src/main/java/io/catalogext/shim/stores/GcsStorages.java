package io.catalogext.shim.stores;

import io.catalogext.shim.refresh.TableTokens;

import com.google.api.gax.rpc.FixedHeaderProvider;
import com.google.cloud.storage.Storage;
import com.google.cloud.storage.StorageOptions;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.iceberg.EnvironmentContext;
import org.apache.iceberg.gcp.GCPProperties;

/**
 * The {@code Storage} client GCSFileIO gets from the shim for one table prefix: built as Iceberg's
 * own (PrefixedStorage: the same user agent, project, client-lib token and host, from the same
 * {@code gcs.*} properties), with {@link GcsTokenCredentials} instead of a fixed token.
 */
public final class GcsStorages {
  private static final String USER_AGENT = "gcsfileio/" + EnvironmentContext.get();

  private GcsStorages() {}

  /** A client for {@code properties} (the table's non-secret {@code gcs.*}) sending {@code tokens}' token. */
  public static Storage build(Map<String, String> properties, Supplier<TableTokens> tokens) {
    GCPProperties gcp = new GCPProperties(properties);
    StorageOptions.Builder builder = StorageOptions.newBuilder()
        .setHeaderProvider(FixedHeaderProvider.create(Map.of("User-agent", USER_AGENT)));
    gcp.projectId().ifPresent(builder::setProjectId);
    gcp.clientLibToken().ifPresent(builder::setClientLibToken);
    gcp.serviceHost().ifPresent(builder::setHost);
    builder.setCredentials(new GcsTokenCredentials(tokens));
    return builder.build().getService();
  }
}
