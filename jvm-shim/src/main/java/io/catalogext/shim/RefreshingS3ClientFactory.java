package io.catalogext.shim;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.refresh.AsyncRejectionRetries;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.refresh.RejectionRetries;
import io.catalogext.shim.refresh.TableCredentialsProvider;
import io.catalogext.shim.refresh.TableEntry;
import io.catalogext.shim.wire.IcebergRefreshOrigins;
import io.catalogext.shim.wire.TrustedOrigins;

import java.net.URI;
import java.util.Map;
import org.apache.iceberg.aws.AwsClientProperties;
import org.apache.iceberg.aws.HttpClientProperties;
import org.apache.iceberg.aws.s3.S3FileIOAwsClientFactory;
import org.apache.iceberg.aws.s3.S3FileIOProperties;
import org.apache.iceberg.aws.s3.signer.S3V4RestSignerClient;
import org.apache.iceberg.util.SerializableMap;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.core.client.config.SdkAdvancedClientOption;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;

/**
 * The plug point ({@code s3.client-factory-impl}): S3FileIO asks this factory for every client,
 * one per storage-credential prefix, on the driver and in executors. We build the client as
 * Iceberg would, but with credentials from the table's refreshing entry. Unlike
 * {@code client.credentials-provider}, this is honoured in Iceberg 1.10 even when the catalog
 * vends static keys, and its interface is unchanged in 1.11.
 *
 * <p>"As Iceberg would": Iceberg's default factories are package-private, so {@link #s3()} repeats
 * their chain of Iceberg's public {@code apply*} steps; S3ClientChainParityTest reads both chains
 * from the bytecode and fails when Iceberg's changes. From Iceberg 1.11 on a
 * {@code client.credentials-provider} comes first in Iceberg's own chain, which would let the shim
 * hand Iceberg's factory its provider instead (docs/jvm-dependencies.md).
 */
public final class RefreshingS3ClientFactory implements S3FileIOAwsClientFactory {
  private static final long serialVersionUID = 1L;
  private SerializableMap<String, String> properties;
  private transient volatile TableCredentialsProvider provider;

  public RefreshingS3ClientFactory() {}

  @Override
  public void initialize(Map<String, String> props) {
    this.properties = SerializableMap.copyOf(props);
  }

  @Override
  public S3Client s3() {
    S3FileIOProperties s3Props = new S3FileIOProperties(properties);
    AwsClientProperties awsProps = new AwsClientProperties(properties);
    HttpClientProperties httpProps = new HttpClientProperties(properties);
    TableCredentialsProvider tableProvider = provider();
    S3Client client = S3Client.builder()
        .applyMutation(awsProps::applyClientRegionConfiguration)
        .applyMutation(awsProps::applyLegacyMd5Plugin)
        .applyMutation(httpProps::applyHttpClientConfigurations)
        .applyMutation(s3Props::applyEndpointConfigurations)
        .applyMutation(s3Props::applyServiceConfigurations)
        .applyMutation(
            b -> {
              if (tableProvider != null) {
                b.credentialsProvider(tableProvider);
              } else {
                checkIcebergRefresh();
                s3Props.applyCredentialConfigurations(awsProps, b);
              }
            })
        .applyMutation(s3Props::applySignerConfiguration)
        .applyMutation(this::checkRemoteSigner)
        .applyMutation(s3Props::applyS3AccessGrantsConfigurations)
        .applyMutation(s3Props::applyUserAgentConfigurations)
        .applyMutation(s3Props::applyRetryConfigurations)
        .applyMutation(b -> {
          ExecutionInterceptor watch = tableProvider == null ? null : RejectionRetries.dateWatch(tableProvider);
          if (watch != null) {
            // after Iceberg's mutations, which may set an override configuration of their own
            b.overrideConfiguration(b.overrideConfiguration().toBuilder().addExecutionInterceptor(watch).build());
          }
        })
        .build();
    // Keys S3 rejects early are refreshed and the call is sent again inside it.
    return tableProvider == null ? client : RejectionRetries.wrap(client, tableProvider);
  }

  /**
   * The client S3FileIO reads through when {@code s3.analytics-accelerator.enabled} is set: the same
   * refreshing keys and the same reactive retry as {@link #s3()}. Built on the SDK's netty HTTP
   * client (in {@code iceberg-aws-bundle}), as it always was here, not on CRT (Iceberg's own
   * factory's default): the netty client is the one tested with the accelerator.
   */
  @Override
  public S3AsyncClient s3Async() {
    S3FileIOProperties s3Props = new S3FileIOProperties(properties);
    AwsClientProperties awsProps = new AwsClientProperties(properties);
    TableCredentialsProvider tableProvider = provider();
    S3AsyncClient client = S3AsyncClient.builder()
        .applyMutation(awsProps::applyClientRegionConfiguration)
        .applyMutation(
            b -> {
              if (tableProvider != null) {
                b.credentialsProvider(tableProvider);
              } else {
                checkIcebergRefresh();
                s3Props.applyCredentialConfigurations(awsProps, b); // the vended keys, as Iceberg's own
              }
            })
        .applyMutation(awsProps::applyLegacyMd5Plugin)
        .applyMutation(s3Props::applyEndpointConfigurations)
        // s3.path-style-access, as the sync client has it (Iceberg sets it on S3Client builders only)
        .applyMutation(b -> b.forcePathStyle(s3Props.isPathStyleAccess()))
        .build();
    return tableProvider == null ? client : AsyncRejectionRetries.wrap(client, tableProvider);
  }

  /**
   * The remote signer Iceberg just configured (from this FileIO's properties: the catalog's and the
   * table config's) sends the catalog's token to its endpoint and its OAuth2 client secret to its
   * token URL: both as the signer itself resolves them, each refused before anything is signed when
   * its origin is not one the user configured for the catalog. The trust set comes sealed from the
   * driver (written over any value an answer carries); a FileIO the shim's catalog did not hand out
   * has only its own properties to go by.
   */
  @SuppressWarnings("deprecation") // SdkAdvancedClientOption.SIGNER: where Iceberg's applySignerConfiguration puts it
  private void checkRemoteSigner(S3ClientBuilder builder) {
    ClientOverrideConfiguration config = builder.overrideConfiguration();
    Object signer = config == null ? null : config.advancedOption(SdkAdvancedClientOption.SIGNER).orElse(null);
    if (!(signer instanceof S3V4RestSignerClient)) {
      return;
    }
    TrustedOrigins trust = trust();
    S3V4RestSignerClient remote = (S3V4RestSignerClient) signer;
    trust.check(URI.create(remote.endpoint()), "the S3 sign requests (the remote signer's endpoint)");
    trust.check(URI.create(remote.oauth2ServerUri()), "the remote signer's OAuth2 token request");
  }

  /**
   * Where the shim's provider does not replace it, Iceberg's credential chain fetches keys from
   * {@code client.refresh-credentials-endpoint} with the catalog's auth session: the endpoint and
   * the OAuth2 token URL get the remote signer's check, before the client exists.
   */
  private void checkIcebergRefresh() {
    IcebergRefreshOrigins.check(trust(), properties, AwsClientProperties.REFRESH_CREDENTIALS_ENDPOINT,
        AwsClientProperties.REFRESH_CREDENTIALS_ENABLED, "S3");
  }

  private TrustedOrigins trust() {
    return IcebergRefreshOrigins.of(properties);
  }

  /** Null when the table came from elsewhere (no handle): Iceberg's own credentials then apply. */
  TableCredentialsProvider provider() {
    if (provider == null && properties.containsKey(ShimKeys.TABLE_HANDLE)) {
      synchronized (this) {
        if (provider == null) {
          TableEntry entry = CredentialRegistry.get().forClient(properties);
          String prefix = properties.getOrDefault(ShimKeys.CREDENTIAL_PREFIX, "");
          provider = new TableCredentialsProvider(entry, entry.seed(prefix, properties));
        }
      }
    }
    return provider;
  }
}
