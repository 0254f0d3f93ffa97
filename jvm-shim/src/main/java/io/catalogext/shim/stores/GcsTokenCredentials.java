package io.catalogext.shim.stores;

import io.catalogext.shim.refresh.CredentialSnapshot;
import io.catalogext.shim.refresh.TableTokens;

import com.google.auth.Credentials;
import java.io.IOException;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The credentials a GCS client of one table prefix sends: the prefix's current token from the
 * table's entry, read for every request (google-auth's {@code Credentials} contract:
 * {@link #getRequestMetadata} per request, {@link #refresh} when GCS answers 401). So the refresh
 * margins are the shim's, not google-auth's (which would not send a token with under 3 minutes
 * left), and the catalog is asked once per table per renewal, by the driver.
 *
 * <p>The reactive refresh: google-auth's HTTP adapter calls {@link #refresh} when GCS answers 401
 * ({@code invalid_token}) and then sends the request again with {@link #getRequestMetadata}. Here
 * that reports the token this thread last sent as rejected and waits for a new one (single-flight);
 * a token a reactive refresh just handed out that is rejected before GCS took it ends the task with
 * the registry's one-line error. A 403 (outside the token's scope) never comes here.
 */
public final class GcsTokenCredentials extends Credentials {
  private static final long serialVersionUID = 1L;
  /** Held by the Storage client of one prefix, built in this JVM; never serialized with it. */
  private final transient Supplier<TableTokens> tokens;
  /** The token this thread sent last, for the rejection report (google-auth calls refresh on the sending thread). */
  private final transient ThreadLocal<CredentialSnapshot> lastSent = new ThreadLocal<>();

  public GcsTokenCredentials(Supplier<TableTokens> tokens) {
    this.tokens = tokens;
  }

  @Override
  public String getAuthenticationType() {
    return "OAuth2";
  }

  @Override
  public Map<String, List<String>> getRequestMetadata(URI uri) throws IOException {
    TableTokens source = tokens.get();
    CredentialSnapshot snapshot = source.current();
    if (lastSent.get() == snapshot) {
      source.accepted(snapshot); // the last request with it drew no 401 (refresh() would have cleared this)
    }
    lastSent.set(snapshot);
    return Map.of("Authorization", List.of("Bearer " + snapshot.tokens().gcsToken()));
  }

  @Override
  public boolean hasRequestMetadata() {
    return true;
  }

  @Override
  public boolean hasRequestMetadataOnly() {
    return true;
  }

  /** GCS answered 401 to this thread's last request: new tokens before it is sent again. */
  @Override
  public void refresh() throws IOException {
    TableTokens source = tokens.get();
    CredentialSnapshot used = lastSent.get();
    lastSent.remove();
    if (used == null) {
      return; // nothing sent from this thread: the next request reads the current token anyway
    }
    long started = System.nanoTime();
    if (!source.onRejected(used, "401 invalid_token", null)) {
      throw new IOException("GCS answered 401 to a token this table did not hand out: not renewed");
    }
    source.retried((System.nanoTime() - started) / 1_000_000L);
  }

  @Override
  public String toString() {
    return "GcsTokenCredentials{" + tokens.get() + "}"; // never the token
  }
}
