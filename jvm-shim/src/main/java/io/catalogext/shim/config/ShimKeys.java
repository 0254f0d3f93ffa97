package io.catalogext.shim.config;

/** Property keys the shim adds to a table's FileIO config. One place, so Python and Java agree. */
public final class ShimKeys {
  private ShimKeys() {}

  /**
   * What users set as a Spark catalog's {@code catalog-impl} to run it on the shim: the name of the
   * shim's catalog class, for the code below it that must recognise such a catalog by its
   * configuration (ShimKeysTest checks it is that class's name).
   */
  public static final String CATALOG_IMPL = "io.catalogext.shim.ExtRESTCatalog";

  public static final String PREFIX = "catalog-ext.";
  /** Opaque id of a table's credential entry in the driver's registry. */
  public static final String TABLE_HANDLE = PREFIX + "table-handle";
  /** The table's identity (catalog, namespace, table, location) as JSON; not secret. */
  public static final String TABLE_IDENTITY = PREFIX + "table";
  /**
   * The stores a catalog's tables may be on ({@code s3,adls,gcs}, comma-separated; unset: all), as
   * {@code configure(store=...)} names them: the shim's routing FileIO refuses a table elsewhere.
   */
  public static final String STORES = PREFIX + "stores";
  /** Storage-credential prefix a client's initial credentials came from ("" = table config). */
  public static final String CREDENTIAL_PREFIX = PREFIX + "credential-prefix";
  /** Renew when less than max(min-ahead, fraction x lifetime) remains. */
  public static final String REFRESH_MIN_AHEAD_MS = PREFIX + "refresh.min-ahead-ms";
  public static final String REFRESH_LIFETIME_FRACTION = PREFIX + "refresh.lifetime-fraction";
  public static final String REFRESH_CHECK_INTERVAL_MS = PREFIX + "refresh.check-interval-ms";
  public static final String REFRESH_INITIAL_BACKOFF_MS = PREFIX + "refresh.initial-backoff-ms";
  public static final String REFRESH_MAX_BACKOFF_MS = PREFIX + "refresh.max-backoff-ms";
  /** How long a refresh (a source, the catalog, or an executor waiting on the driver) may take. */
  public static final String REFRESH_TIMEOUT_MS = PREFIX + "refresh.timeout-ms";
  /** Keys without an expiry: assumed to expire this long after their fetch (0: never). */
  public static final String REFRESH_ASSUMED_LIFETIME_MS = PREFIX + "refresh.assumed-lifetime-ms";
  /** Refreshes of one table per minute started by S3 rejecting its keys early (0: off). */
  public static final String REFRESH_REACTIVE_MAX_PER_MINUTE = PREFIX + "refresh.reactive-max-per-minute";
  /** Past this skew between the local clock and a server's Date header, use the server's clock. */
  public static final String REFRESH_MAX_CLOCK_SKEW_MS = PREFIX + "refresh.max-clock-skew-ms";
  /** Carries a storage-refresh-token from the JSON parser to the observer; never reaches FileIO. */
  public static final String CAPTURED_REFRESH_TOKEN = PREFIX + "captured-storage-refresh-token";
  /** A table answer's {@code remote-signing-config} (Iceberg 1.12), as JSON, until translated. */
  public static final String CAPTURED_SIGNING_CONFIG = PREFIX + "captured-remote-signing-config";

  /**
   * The catalog's trusted origins as the driver read them from the user's configuration
   * (wire.TrustedOrigins#sealed), handed to the table's S3 clients in every JVM, which check the
   * remote signer against them. Written over whatever value an answer carries.
   */
  public static final String SEALED_TRUSTED_ORIGINS = PREFIX + "sealed-trusted-origins";
  /** The Spark catalog's name, beside the sealed origins, for the S3 clients' messages. */
  public static final String CATALOG_NAME = PREFIX + "catalog-name";
  /**
   * The id of the catalog session that handed the table out, written over whatever value an answer
   * carries: a table handle is honoured only beside the id of the session it was issued to, so a
   * handle under another catalog gets nothing.
   */
  public static final String CATALOG_SESSION = PREFIX + "catalog-session";

  /** When the driver fetched the credentials it forwards, so executors schedule like the driver. */
  public static final String FETCHED_AT_MS = PREFIX + "fetched-at-ms";
  /**
   * A storage credential's expiry as the shim hands it to S3FileIO, instead of {@link #EXPIRES_AT_MS}:
   * from that key Iceberg 1.11+'s S3FileIO schedules its own refresh through the refresh endpoint
   * the shim took out ("Invalid credentials endpoint: null", apache/iceberg#17810), a second refresh
   * beside ours where the endpoint is kept.
   */
  public static final String CREDENTIAL_EXPIRES_AT_MS = PREFIX + "session-token-expires-at-ms";
  /** The expiry the catalog stated, when the driver schedules by a shorter learned lifetime. */
  public static final String STATED_EXPIRES_AT_MS = PREFIX + "stated-expires-at-ms";

  public static final String ACCESS_KEY_ID = "s3.access-key-id";
  public static final String SECRET_ACCESS_KEY = "s3.secret-access-key";
  public static final String SESSION_TOKEN = "s3.session-token";
  public static final String EXPIRES_AT_MS = "s3.session-token-expires-at-ms";
  public static final String REFRESH_ENDPOINT = "client.refresh-credentials-endpoint";

  /** GCS (Iceberg's GCPProperties): the vended OAuth2 token, its expiry (epoch ms) and refresh endpoint. */
  public static final String GCS_TOKEN = "gcs.oauth2.token";
  public static final String GCS_TOKEN_EXPIRES_AT = "gcs.oauth2.token-expires-at";
  public static final String GCS_REFRESH_ENDPOINT = "gcs.oauth2.refresh-credentials-endpoint";
  /** ADLS (Iceberg's AzureProperties): a SAS per host ({@code <account>.dfs.core.windows.net}) and its expiry. */
  public static final String ADLS_SAS_TOKEN_PREFIX = "adls.sas-token.";
  public static final String ADLS_SAS_EXPIRES_AT_MS_PREFIX = "adls.sas-token-expires-at-ms.";
  /** The client's endpoint per host (a URL, despite the name; Iceberg's {@code adls.connection-string.<host>}). */
  public static final String ADLS_CONNECTION_STRING_PREFIX = "adls.connection-string.";
  public static final String ADLS_REFRESH_ENDPOINT = "adls.refresh-credentials-endpoint";
  /** ADLSFileIO's switch for its own refresh from that endpoint (on unless "false"). */
  public static final String ADLS_REFRESH_ENABLED = "adls.refresh-credentials-enabled";
}
