package io.catalogext.shim.util;

import java.net.URI;
import java.util.Locale;

/** URLs as error messages may show them. */
public final class Urls {
  private Urls() {}

  /** {@code scheme://host[:port]/path} of a URL: no user info, query or fragment (they may hold tokens). */
  public static String shown(String url) {
    if (url == null || url.isBlank()) {
      return "(no URL)";
    }
    try {
      URI u = new URI(url.trim());
      String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT) + "://";
      String host = u.getHost() == null ? "" : u.getHost() + (u.getPort() < 0 ? "" : ":" + u.getPort());
      return scheme + host + (u.getRawPath() == null ? "" : u.getRawPath());
    } catch (Exception e) {
      return "(an unparseable URL)";
    }
  }
}
