package io.catalogext.shim.refresh;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The credential handles the driver puts in a table's FileIO config:
 * {@code <catalog session id>.<nonce>.<mac>}, the MAC an HMAC-SHA256, under a key this registry draws
 * when it starts and never shows, of the session id, the nonce and the table's identity. Whoever
 * holds a handle gets the table's keys, so a handle cannot be guessed, and one this registry did not
 * issue for exactly that table and that catalog session is refused: a table's identity (plain
 * FileIO properties anyone can write) or a session's id alone gets nothing.
 */
final class TableHandles {
  private static final String ALGORITHM = "HmacSHA256";
  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

  private final SecureRandom random = new SecureRandom();
  private final SecretKeySpec key;

  TableHandles() {
    byte[] secret = new byte[32];
    random.nextBytes(secret);
    key = new SecretKeySpec(secret, ALGORITHM);
  }

  /** A new handle of table {@code tableKey} for catalog session {@code sessionId}. */
  String issue(String sessionId, String tableKey) {
    byte[] nonce = new byte[12];
    random.nextBytes(nonce);
    String n = B64.encodeToString(nonce);
    return sessionId + "." + n + "." + mac(sessionId, n, tableKey);
  }

  /** Whether {@code handle} is one this registry issued for table {@code tableKey} (of its session). */
  boolean issuedFor(String handle, String tableKey) {
    if (handle == null) {
      return false;
    }
    String[] parts = handle.split("\\.", -1);
    if (parts.length != 3 || parts[0].isEmpty() || parts[1].isEmpty()) {
      return false;
    }
    byte[] expected = mac(parts[0], parts[1], tableKey).getBytes(StandardCharsets.US_ASCII);
    return MessageDigest.isEqual(expected, parts[2].getBytes(StandardCharsets.US_ASCII));
  }

  /** The catalog session id a handle names (not verified: see {@link #issuedFor}); "" if none. */
  static String sessionOf(String handle) {
    int dot = handle == null ? -1 : handle.indexOf('.');
    return dot < 0 ? "" : handle.substring(0, dot);
  }

  private String mac(String sessionId, String nonce, String tableKey) {
    try {
      Mac mac = Mac.getInstance(ALGORITHM); // per call: a Mac is not thread-safe, and issuing is rare
      mac.init(key);
      mac.update((sessionId + "\n" + nonce + "\n").getBytes(StandardCharsets.UTF_8));
      return B64.encodeToString(mac.doFinal(String.valueOf(tableKey).getBytes(StandardCharsets.UTF_8)));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JVM has no " + ALGORITHM + ": " + e.getMessage(), e);
    }
  }
}
