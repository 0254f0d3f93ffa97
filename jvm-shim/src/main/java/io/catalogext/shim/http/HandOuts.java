package io.catalogext.shim.http;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.refresh.CredentialSnapshot;
import io.catalogext.shim.refresh.TableContext;
import io.catalogext.shim.refresh.TableEntry;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.wire.FieldIdRenumbering;
import io.catalogext.shim.wire.RemoteSigning;
import io.catalogext.shim.wire.RestJson;
import io.catalogext.shim.wire.TablePath;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.credentials.Credential;
import org.apache.iceberg.rest.credentials.ImmutableCredential;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.LoadTableResponse;

/**
 * The funnel's hand-out step ({@link CatalogHttpFunnel}): every table the catalog hands out
 * (create, stage-create, load, register) gets a credential entry in the driver registry, and its
 * FileIO config gets the handle that lets S3 clients anywhere in the cluster find it. Create and
 * stage-create bodies get field ids from 1 on the way out ({@link FieldIdRenumbering}). Everything
 * else passes through unchanged.
 *
 * <p>Each entry refreshes under the login of its own table: the client that handed it out, then
 * the table's own auth session (a catalog may issue a login per table, and Iceberg builds a
 * table-scoped auth session from the load answer), never the login of whichever table the catalog
 * touched last.
 */
final class HandOuts implements CatalogHttpFunnel.Interceptor {
  private final CatalogSession session;
  /**
   * The entry handed out by the last answer on this thread, until Iceberg derives that table's own
   * auth-session client: it does so right after the answer, on the same thread, before any other
   * request (RESTSessionCatalog's load, create, stage-create and register). Any later request ends
   * the wait, so a client derived for anything else is never taken for the table's.
   */
  private final ThreadLocal<TableEntry> awaitingTableClient = new ThreadLocal<>();

  HandOuts(CatalogSession session) {
    this.session = session;
  }

  @Override
  public boolean adoptsTableClient(RESTClient transport) {
    TableEntry entry = awaitingTableClient.get();
    if (entry == null) {
      return false;
    }
    awaitingTableClient.remove();
    entry.useCatalogClient(transport);
    return true;
  }

  @Override
  public <T extends RESTResponse> T intercept(CatalogHttpFunnel.Exchange<T> ex) {
    if (!ex.isForm()) { // an OAuth2 token request may come in between (a table session from a credential)
      awaitingTableClient.remove();
    }
    switch (ex.method()) {
      case GET:
        return observe(ex.path(), null, ex.proceed(), ex);
      case POST:
        if (ex.isForm()) {
          return ex.proceed();
        }
        RESTRequest body = FieldIdRenumbering.apply(ex.body()); // SeaweedFS rejects field id 0 (Spark numbers from 0)
        T response = body == ex.body() ? ex.proceed() : ex.proceed(ex.withBody(body), ex.errorHandler());
        return observe(ex.path(), body, response, ex);
      default:
        return ex.proceed();
    }
  }

  @SuppressWarnings("unchecked")
  private <T extends RESTResponse> T observe(
      String path, RESTRequest body, T response, CatalogHttpFunnel.Exchange<T> ex) {
    if (!(response instanceof LoadTableResponse)) {
      return response;
    }
    TablePath tablePath = TablePath.parse(path);
    if (tablePath == null) {
      return response;
    }
    // Iceberg 1.12's remote-signing-config, as the s3.signer.* properties Iceberg 1.10 reads.
    LoadTableResponse translated = RemoteSigning.translate((LoadTableResponse) response, tablePath, body);
    // Where the answer names URLs on origins the user did not configure: for the one-line refusal,
    // should anything try to send credentials there (the transport and the S3 clients check).
    session.trust.noteServerUrls("a table answer's config", translated.config());
    LoadTableResponse loaded = sealed(translated, displayName(tablePath, body));
    if (!ex.tableScoped()) {
      // The catalog's own (contextual) login, never a table's: what catalog reads and an entry with
      // no client of its own use.
      session.observedTableOperation(ex.undecorated(), tablePath.root);
    }
    if (body instanceof UpdateTableRequest) {
      // A commit: once a create commit lands, the table is no longer staged.
      for (UpdateRequirement req : ((UpdateTableRequest) body).requirements()) {
        if (req instanceof UpdateRequirement.AssertTableDoesNotExist) {
          CredentialRegistry.get().markCommitted(session, tablePath.namespace, tablePath.table);
        }
      }
      return (T) loaded;
    }
    String table = tablePath.table;
    boolean staged = false;
    String stageRequest = null;
    if (body instanceof CreateTableRequest) {
      CreateTableRequest create = (CreateTableRequest) body;
      table = create.name();
      staged = create.stageCreate();
      if (staged) {
        stageRequest = stageRequestJson(create, loaded.tableMetadata().location());
      }
    } else if (body instanceof RegisterTableRequest) {
      table = ((RegisterTableRequest) body).name();
    }
    if (table == null) {
      return (T) loaded;
    }
    return (T) register(loaded, tablePath.namespace, table, staged, stageRequest, ex);
  }

  private LoadTableResponse register(LoadTableResponse loaded, List<String> namespace, String table, boolean staged,
      String stageRequest, CatalogHttpFunnel.Exchange<?> ex) {
    CredentialRegistry registry = CredentialRegistry.get();
    boolean vended = CredentialSnapshot.holdsKeys(loaded.config())
        || loaded.credentials().stream().anyMatch(c -> CredentialSnapshot.holdsKeys(c.config()));
    if (!registry.sources().wantsTable(session.name, vended)) {
      return loaded;
    }
    TableContext context =
        new TableContext(
            session.name,
            namespace,
            table,
            loaded.tableMetadata().location(),
            loaded.tableMetadata().uuid(),
            staged,
            stageRequest,
            refreshEndpoint(loaded.config()));
    String handle = registry.registerDriverTable(context, session, loaded.config(), loaded.credentials());
    TableEntry entry = registry.lookup(handle);
    if (entry != null) {
      // The client that handed the table out: the table's own auth session when its table
      // operations reloaded it, else the catalog's login until Iceberg derives the table's.
      entry.useCatalogClient(ex.undecorated());
      if (!ex.tableScoped()) {
        awaitingTableClient.set(entry);
      }
    }
    RefreshPolicy policy = registry.sources().policyFor(session);

    Map<String, String> config = new HashMap<>(loaded.config());
    config.put(ShimKeys.TABLE_HANDLE, handle);
    config.put(ShimKeys.TABLE_IDENTITY, context.identityJson());
    config.put(ShimKeys.REFRESH_MIN_AHEAD_MS, String.valueOf(policy.minAheadMs));
    config.put(ShimKeys.REFRESH_LIFETIME_FRACTION, String.valueOf(policy.fraction));
    config.put(ShimKeys.REFRESH_TIMEOUT_MS, String.valueOf(policy.timeoutMs));
    config.put(ShimKeys.REFRESH_REACTIVE_MAX_PER_MINUTE, String.valueOf(policy.reactiveMaxPerMinute));
    // Iceberg would build its own refreshing provider from this; ours replaces it.
    config.remove(ShimKeys.REFRESH_ENDPOINT);

    List<Credential> credentials = new ArrayList<>();
    for (Credential c : loaded.credentials()) {
      Map<String, String> cc = new HashMap<>(c.config());
      cc.remove(ShimKeys.CAPTURED_REFRESH_TOKEN);
      cc.remove(ShimKeys.REFRESH_ENDPOINT);
      String expires = cc.remove(ShimKeys.EXPIRES_AT_MS); // see ShimKeys.CREDENTIAL_EXPIRES_AT_MS
      if (expires != null) {
        cc.put(ShimKeys.CREDENTIAL_EXPIRES_AT_MS, expires);
      }
      cc.put(ShimKeys.CREDENTIAL_PREFIX, c.prefix());
      credentials.add(ImmutableCredential.builder().prefix(c.prefix()).config(cc).build());
    }
    return LoadTableResponse.builder()
        .withTableMetadata(loaded.tableMetadata())
        .addAllConfig(config)
        .addAllCredentials(credentials)
        .build();
  }

  /**
   * The refresh endpoint the table config names: the catalog-wide one, else GCS's or ADLS's (a
   * catalog vending for those stores may name only theirs). The shim's FileIOs for GCS and ADLS
   * never hand theirs to Iceberg's own FileIO; the S3 one is taken out of the config below.
   */
  private static String refreshEndpoint(Map<String, String> config) {
    for (String key : List.of(ShimKeys.REFRESH_ENDPOINT, ShimKeys.GCS_REFRESH_ENDPOINT, ShimKeys.ADLS_REFRESH_ENDPOINT)) {
      String endpoint = config.get(key);
      if (endpoint != null && !endpoint.isEmpty()) {
        return endpoint;
      }
    }
    return null;
  }

  /**
   * The answer with the catalog's trusted origins in its config, over any value the answer carries:
   * the table's S3 clients, in any JVM, check its remote signer against them. Settings only the
   * user makes are not taken from the answer, and the shim's S3 client factory (which does that
   * check) builds the table's S3 clients unless the user chose another.
   */
  private LoadTableResponse sealed(LoadTableResponse loaded, String table) {
    Map<String, String> allowed = session.userOnly.forFileIo("a table answer's config", loaded.config());
    List<Map<String, String>> allowedCredentials = new ArrayList<>();
    for (Credential c : loaded.credentials()) {
      allowedCredentials.add(session.userOnly.credentialConfig("a table answer's storage-credentials", c.config()));
    }
    String location = loaded.tableMetadata() == null ? null : loaded.tableMetadata().location();
    Map<String, String> config = new HashMap<>(session.endpoints.forTable(table, location, allowed, allowedCredentials));
    config.put(ShimKeys.SEALED_TRUSTED_ORIGINS, session.trust.sealed());
    config.put(ShimKeys.CATALOG_NAME, session.name);
    config.put(ShimKeys.CATALOG_SESSION, session.id);
    List<Credential> credentials = new ArrayList<>();
    for (int i = 0; i < loaded.credentials().size(); i++) {
      Credential c = loaded.credentials().get(i);
      if (allowedCredentials.get(i).isEmpty()) {
        continue; // nothing a server may set: no credential at all (Iceberg refuses an empty config)
      }
      Map<String, String> cc = new HashMap<>(allowedCredentials.get(i));
      String token = c.config().get(ShimKeys.CAPTURED_REFRESH_TOKEN); // the answer's own storage-refresh-token
      if (token != null) {
        cc.put(ShimKeys.CAPTURED_REFRESH_TOKEN, token);
      }
      credentials.add(ImmutableCredential.builder().prefix(c.prefix()).config(cc).build());
    }
    return LoadTableResponse.builder()
        .withTableMetadata(loaded.tableMetadata())
        .addAllConfig(config)
        .addAllCredentials(credentials)
        .build();
  }

  /** The table as messages name it: namespace and name, from the path or the create/register body. */
  private static String displayName(TablePath path, RESTRequest body) {
    String table = path.table;
    if (body instanceof CreateTableRequest) {
      table = ((CreateTableRequest) body).name();
    } else if (body instanceof RegisterTableRequest) {
      table = ((RegisterTableRequest) body).name();
    }
    return String.join(".", path.namespace) + (table == null ? "" : "." + table);
  }

  /** The stage-create body again, pinned to the location the catalog chose, for re-staging. */
  private static String stageRequestJson(CreateTableRequest create, String location) {
    CreateTableRequest pinned =
        CreateTableRequest.builder()
            .stageCreate()
            .withName(create.name())
            .withSchema(create.schema())
            .withPartitionSpec(create.spec())
            .withWriteOrder(create.writeOrder())
            .withLocation(location)
            .setProperties(create.properties())
            .build();
    try {
      return RestJson.icebergs().writeValueAsString(pinned);
    } catch (Exception e) {
      return null;
    }
  }
}
