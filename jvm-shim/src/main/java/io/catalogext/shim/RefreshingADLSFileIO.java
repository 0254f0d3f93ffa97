package io.catalogext.shim;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.refresh.CredentialSnapshot;
import io.catalogext.shim.refresh.TableTokens;
import io.catalogext.shim.stores.AdlsClients;
import io.catalogext.shim.stores.PrefixTokens;
import io.catalogext.shim.stores.Store;
import io.catalogext.shim.stores.StoreFileIO;
import io.catalogext.shim.stores.StorePaths;
import io.catalogext.shim.wire.IcebergRefreshOrigins;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.iceberg.azure.adlsv2.ADLSFileIO;
import org.apache.iceberg.io.DelegateFileIO;
import org.apache.iceberg.io.StorageCredential;
import org.apache.iceberg.util.SerializableFunction;

/**
 * The ADLS FileIO for tables on {@code abfs[s]://} ({@link RefreshingResolvingFileIO} hands it their
 * paths; it can be named as {@code io-impl} itself): Iceberg's ADLSFileIO,
 * whose clients sign each request with the SAS of the request's own path, read from the table's
 * entry in the shim's registry (refreshed once per table per renewal by the driver, executors
 * asking it over the plugin channel; during a staged create too; again when Azure answers that a
 * SAS is no longer valid). ADLSFileIO takes storage credentials neither itself (it does not
 * implement SupportsStorageCredentials) nor renews them on a schedule: this FileIO takes them and
 * the registry does the scheduling.
 *
 * <p>On Iceberg 1.11 and later ADLSFileIO is built through its public client-function constructor
 * ({@link AdlsClients}). Iceberg 1.10 has no such hook (no client function, no credential provider
 * for a SAS, its client builder package-private), so there one ADLSFileIO per vended prefix is made
 * with that prefix's current SAS and made again after each renewal: a file opened after a renewal
 * gets the new SAS, a file already open keeps the SAS it was opened with (a write or read that
 * outlives it fails), and nothing is retried when Azure rejects a SAS. Either way ADLSFileIO never
 * sees a refresh endpoint, so Iceberg 1.10's provider (which asks the endpoint before using the SAS
 * it was handed: a 404 for a staged table) is never built. A table the shim's catalog did not hand
 * out (no handle) gets plain ADLSFileIO.
 */
public final class RefreshingADLSFileIO extends StoreFileIO {
  private static final long serialVersionUID = 1L;
  /** ADLSFileIO's public client-function constructor (Iceberg 1.11+), or null (1.10). */
  private static final Constructor<ADLSFileIO> WITH_CLIENTS = clientFunctionConstructor();

  public RefreshingADLSFileIO() {
    Store.ADLS.require("abfss");
  }

  /** Whether this Iceberg's ADLSFileIO takes a client function (1.11+): SAS tokens are then renewed per request. */
  public static boolean signsEachRequest() {
    return WITH_CLIENTS != null;
  }

  @Override
  protected DelegateFileIO plain(Map<String, String> props, List<StorageCredential> creds) {
    // Iceberg's ADLSFileIO asks its refresh endpoint with the catalog's auth session (1.10 before
    // using the SAS it has; 1.11 once the SAS is missing or within 5 minutes of its expiry).
    IcebergRefreshOrigins.check(IcebergRefreshOrigins.of(props), props, ShimKeys.ADLS_REFRESH_ENDPOINT,
        ShimKeys.ADLS_REFRESH_ENABLED, "ADLS");
    ADLSFileIO plain = new ADLSFileIO(); // not a table of the shim's catalog: Iceberg's own
    plain.initialize(props);
    return plain;
  }

  @Override
  protected boolean ofThisStore(String prefix) {
    return StorePaths.isAdls(prefix);
  }

  @Override
  protected String canonical(String location) {
    return StorePaths.adls(location).canonical();
  }

  @Override
  protected String refreshEndpointKey() {
    return ShimKeys.ADLS_REFRESH_ENDPOINT;
  }

  @Override
  protected Routes vendedRoutes(Map<String, String> clientProps, PrefixTokens tokens) {
    return WITH_CLIENTS != null ? new PerRequest(clientProps, tokens) : new PerRenewal(clientProps, tokens);
  }

  private static Constructor<ADLSFileIO> clientFunctionConstructor() {
    try {
      return ADLSFileIO.class.getConstructor(SerializableFunction.class);
    } catch (NoSuchMethodException e) {
      return null; // Iceberg 1.10
    }
  }

  /** Iceberg 1.11+: one ADLSFileIO whose clients sign each request with the current SAS of its path. */
  private static final class PerRequest implements Routes {
    private final AdlsClients clients;
    private final ADLSFileIO io;

    PerRequest(Map<String, String> clientProps, PrefixTokens tokens) {
      this.clients = new AdlsClients(clientProps, () -> tokens);
      try {
        this.io = WITH_CLIENTS.newInstance(clients);
      } catch (InstantiationException | IllegalAccessException | InvocationTargetException e) {
        throw new IllegalStateException("cannot build ADLSFileIO with the shim's clients: " + e, e);
      }
      io.initialize(clientProps); // its adls.* settings (block sizes) and metrics; no SAS, no endpoint
    }

    @Override
    public DelegateFileIO ioFor(String path) {
      return io;
    }

    @Override
    public <T> T at(String path, Function<DelegateFileIO, T> call) {
      return clients.at(path, () -> call.apply(io));
    }

    @Override
    public void deleteFiles(Iterable<String> paths) {
      // ADLSFileIO deletes on its worker threads: their clients are built here, on this thread, first.
      List<String> all = new ArrayList<>();
      Set<String> containers = new LinkedHashSet<>();
      for (String path : paths) {
        all.add(path);
        StorePaths.AdlsPath p = StorePaths.adls(path);
        if (containers.add(p.account + "/" + p.container)) {
          clients.at(path, () -> io.client(path));
        }
      }
      io.deleteFiles(all);
    }

    @Override
    public void close() {
      io.close();
    }
  }

  /**
   * Iceberg 1.10: per vended prefix, an ADLSFileIO holding that prefix's SAS, made again once the
   * registry holds a newer one (files already open keep theirs).
   */
  private static final class PerRenewal implements Routes {
    private final Map<String, String> clientProps;
    private final PrefixTokens tokens;
    private final Map<String, Held> byPrefix = new ConcurrentHashMap<>();

    private static final class Held {
      final CredentialSnapshot snapshot;
      final ADLSFileIO io;

      Held(CredentialSnapshot snapshot, ADLSFileIO io) {
        this.snapshot = snapshot;
        this.io = io;
      }
    }

    PerRenewal(Map<String, String> clientProps, PrefixTokens tokens) {
      this.clientProps = clientProps;
      this.tokens = tokens;
    }

    @Override
    public DelegateFileIO ioFor(String path) {
      String prefix = tokens.requirePrefix(path);
      TableTokens source = tokens.forPrefix(prefix);
      CredentialSnapshot current = source.current();
      return byPrefix.compute(prefix, (p, held) -> {
        if (held != null && held.snapshot == current) {
          return held;
        }
        Map<String, String> props = new HashMap<>(clientProps);
        props.putAll(current.tokens().asProperties());
        ADLSFileIO io = new ADLSFileIO();
        io.initialize(props);
        return new Held(current, io);
      }).io;
    }

    @Override
    public void close() {
      byPrefix.values().forEach(held -> held.io.close());
      byPrefix.clear();
    }
  }
}
