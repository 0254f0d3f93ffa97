package io.catalogext.shim.wire;

import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Where an HTTP request goes: scheme, host and port, parsed and canonicalised once, so two
 * spellings of one origin compare equal and nothing else does. The scheme is http or https; the
 * host is lower case, an international name in its ASCII (punycode) form, without a trailing dot,
 * an IPv6 literal in brackets; the port is explicit (80, 443 when absent). A URL with user info
 * ({@code https://user@host}), another scheme, an empty host or a bad port is refused: it is not
 * something a request of ours may go to.
 */
public final class Origin {
  public final String scheme;
  public final String host;
  public final int port;

  private Origin(String scheme, String host, int port) {
    this.scheme = scheme;
    this.host = host;
    this.port = port;
  }

  /**
   * Whether {@code url} names an origin at all ({@code scheme://...}); anything else is a path,
   * resolved under the catalog's URI (as Iceberg's HTTPRequest resolves it).
   */
  public static boolean isAbsolute(String url) {
    return url != null && ABSOLUTE.matcher(url.trim()).lookingAt();
  }

  private static final Pattern ABSOLUTE = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*://");

  /**
   * The origin of absolute URL {@code url}.
   *
   * @throws IllegalArgumentException one line saying what is wrong with it (never the URL's secrets)
   */
  public static Origin of(String url) {
    if (url == null || !isAbsolute(url)) {
      throw new IllegalArgumentException("not an absolute http(s) URL");
    }
    URI uri;
    try {
      uri = new URI(url.trim());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("not a valid URL (" + e.getReason() + ")");
    }
    return of(uri);
  }

  /** The origin of {@code uri}; see {@link #of(String)}. */
  public static Origin of(URI uri) {
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("https")) {
      throw new IllegalArgumentException("scheme '" + scheme + "' is not http or https");
    }
    String authority = uri.getRawAuthority();
    if (authority == null || authority.isEmpty()) {
      throw new IllegalArgumentException("no host");
    }
    if (authority.contains("@")) {
      throw new IllegalArgumentException("it carries user info (credentials belong in the catalog properties, not in a URL)");
    }
    String host;
    String portText = null;
    if (authority.startsWith("[")) {
      int close = authority.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("an unclosed IPv6 literal");
      }
      host = "[" + canonicalIpv6(authority.substring(1, close)) + "]";
      String rest = authority.substring(close + 1);
      if (!rest.isEmpty()) {
        if (!rest.startsWith(":")) {
          throw new IllegalArgumentException("text after the IPv6 literal");
        }
        portText = rest.substring(1);
      }
    } else {
      int colon = authority.lastIndexOf(':');
      host = colon < 0 ? authority : authority.substring(0, colon);
      portText = colon < 0 ? null : authority.substring(colon + 1);
      host = canonicalName(host);
    }
    return new Origin(scheme, host, port(scheme, portText));
  }

  private static String canonicalName(String raw) {
    if (raw.isEmpty() || raw.contains("%")) {
      throw new IllegalArgumentException(raw.isEmpty() ? "no host" : "a percent-encoded host");
    }
    String name = raw.endsWith(".") ? raw.substring(0, raw.length() - 1) : raw;
    // ASCII only: IDNA 2003 (java.net.IDN, Python's codec) and IDNA 2008 (what HTTP clients send)
    // map some names differently (ß, ς), so a non-ASCII name could be checked as one host and sent
    // to another. An international name is written in its xn-- form.
    if (!name.chars().allMatch(c -> c < 0x80)) {
      throw new IllegalArgumentException("a non-ASCII host name is refused: write it in its ASCII (xn--) form");
    }
    if (name.isEmpty()) {
      throw new IllegalArgumentException("no host");
    }
    for (String label : name.split("\\.", -1)) {
      if (label.isEmpty() || label.length() > 63) {
        throw new IllegalArgumentException("host is not a valid name");
      }
    }
    return name.toLowerCase(Locale.ROOT);
  }

  /** One spelling per IPv6 address, as RFC 5952 and Python's ipaddress write it (lower case, longest zero run as ::). */
  private static String canonicalIpv6(String literal) {
    if (literal.isEmpty() || literal.contains("%") || !literal.chars().allMatch(c -> Character.digit(c, 16) >= 0 || c == ':' || c == '.')) {
      throw new IllegalArgumentException("not a valid IPv6 literal");
    }
    byte[] bytes;
    try {
      bytes = InetAddress.getByName("[" + literal + "]").getAddress(); // a literal: no name lookup
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("not a valid IPv6 literal");
    }
    if (bytes.length != 16) {
      throw new IllegalArgumentException("not a valid IPv6 literal");
    }
    int[] words = new int[8];
    for (int i = 0; i < 8; i++) {
      words[i] = ((bytes[2 * i] & 0xff) << 8) | (bytes[2 * i + 1] & 0xff);
    }
    int bestStart = -1;
    int bestLength = 1; // a single zero word is not shortened
    for (int i = 0; i < 8; ) {
      int j = i;
      while (j < 8 && words[j] == 0) {
        j++;
      }
      if (j - i > bestLength) {
        bestStart = i;
        bestLength = j - i;
      }
      i = j == i ? i + 1 : j;
    }
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        out.append("::");
        i += bestLength - 1;
        continue;
      }
      if (out.length() > 0 && out.charAt(out.length() - 1) != ':') {
        out.append(':');
      }
      out.append(Integer.toHexString(words[i]));
    }
    return out.toString();
  }

  private static int port(String scheme, String text) {
    if (text == null || text.isEmpty()) {
      return scheme.equals("https") ? 443 : 80;
    }
    if (!text.chars().allMatch(c -> c >= '0' && c <= '9') || text.length() > 5) {
      throw new IllegalArgumentException("port '" + text + "' is not a number from 1 to 65535");
    }
    int port = Integer.parseInt(text);
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("port " + port + " is not from 1 to 65535");
    }
    return port;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Origin)) {
      return false;
    }
    Origin other = (Origin) o;
    return port == other.port && scheme.equals(other.scheme) && host.equals(other.host);
  }

  @Override
  public int hashCode() {
    return Objects.hash(scheme, host, port);
  }

  /** {@code scheme://host:port}: no path, user info or query, so safe to show. */
  @Override
  public String toString() {
    return scheme + "://" + host + ":" + port;
  }
}
