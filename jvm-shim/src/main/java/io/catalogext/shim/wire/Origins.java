package io.catalogext.shim.wire;

import java.net.URI;
import java.util.Locale;

/**
 * Which server-given URLs may receive the catalog's credentials: the catalog's token, OAuth2
 * client credentials and {@code header.*} values go only to the origin (scheme, host, port) the
 * user configured.
 */
public final class Origins {
  private Origins() {}

  /** Whether {@code url} is absolute (a path is resolved against the catalog URI: same origin). */
  static boolean isAbsolute(String url) {
    String u = url == null ? "" : url.trim().toLowerCase(Locale.ROOT);
    return u.startsWith("http://") || u.startsWith("https://") || u.contains("://") || u.startsWith("//");
  }

  /** Whether absolute {@code url} has the origin of {@code base}; false when either is unparseable. */
  static boolean sameOrigin(String url, String base) {
    if (url == null || base == null) {
      return false;
    }
    try {
      URI a = new URI(url.trim());
      URI b = new URI(base.trim());
      return a.getScheme() != null && a.getScheme().equalsIgnoreCase(String.valueOf(b.getScheme()))
          && a.getRawUserInfo() == null
          && a.getHost() != null && a.getHost().equalsIgnoreCase(String.valueOf(b.getHost()))
          && port(a) == port(b);
    } catch (Exception e) {
      return false;
    }
  }

  /** Whether a server-given {@code url} may get our credentials: a path, or one of {@code trusted}'s origins. */
  public static boolean allowed(String url, String... trusted) {
    if (!isAbsolute(url)) {
      return true;
    }
    for (String t : trusted) {
      if (t != null && isAbsolute(t) && sameOrigin(url, t)) {
        return true;
      }
    }
    return false;
  }

  private static int port(URI u) {
    if (u.getPort() >= 0) {
      return u.getPort();
    }
    return "https".equalsIgnoreCase(u.getScheme()) ? 443 : "http".equalsIgnoreCase(u.getScheme()) ? 80 : -1;
  }
}
