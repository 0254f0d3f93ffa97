package io.catalogext.shim.stores;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.refresh.StoreTokens;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.io.DelegateFileIO;
import org.apache.iceberg.io.StorageCredential;

/**
 * The routing shared by the GCS and ADLS FileIOs: a table the shim's catalog did not hand out (no
 * handle) gets the store's own Iceberg FileIO; one it did gets the subclass's routes, built from the
 * table's properties without tokens or refresh endpoints and from its tokens per vended prefix.
 */
public abstract class StoreFileIO extends RoutingFileIO {
  private static final long serialVersionUID = 1L;

  /** Iceberg's own FileIO of this store for a table without handle (its refresh origins checked first). */
  protected abstract DelegateFileIO plain(Map<String, String> props, List<StorageCredential> creds);

  /** Whether a storage credential's prefix is on this store. */
  protected abstract boolean ofThisStore(String prefix);

  /** One spelling of a location for comparing prefixes; the location itself unless overridden. */
  protected String canonical(String location) {
    return location;
  }

  /** The property naming this store's own refresh endpoint, which the delegates never get. */
  protected abstract String refreshEndpointKey();

  /** The routes of a table the shim's catalog handed out. */
  protected abstract Routes vendedRoutes(Map<String, String> clientProps, PrefixTokens tokens);

  @Override
  protected final Routes newRoutes(Map<String, String> props, List<StorageCredential> creds) {
    if (!props.containsKey(ShimKeys.TABLE_HANDLE)) {
      return single(plain(props, creds));
    }
    PrefixTokens tokens = new PrefixTokens(props, creds, this::ofThisStore, this::canonical);
    return vendedRoutes(withoutSecrets(props, refreshEndpointKey()), tokens);
  }

  /** The table's properties without the tokens and the refresh endpoints the store's FileIO would use itself. */
  static Map<String, String> withoutSecrets(Map<String, String> props, String storeEndpointKey) {
    Map<String, String> out = new HashMap<>();
    props.forEach((k, v) -> {
      if (!StoreTokens.isTokenKey(k) && !k.equals(storeEndpointKey) && !k.equals(ShimKeys.REFRESH_ENDPOINT)) {
        out.put(k, v);
      }
    });
    return out;
  }
}
