package io.catalogext.shim.stores;

import io.catalogext.shim.refresh.StoreTokens;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Store locations taken apart once, into the one canonical form per store in which a path and the
 * vended prefixes are compared ({@link io.catalogext.shim.util.Prefixes} picks the prefix).
 */
public final class StorePaths {
  /** Iceberg's ADLSLocation pattern: {@code abfs[s]|wasb[s]://[<container>@]<host>[/<path>]}. */
  private static final Pattern ADLS = Pattern.compile("^(abfss?|wasbs?)://([^/?#]+)(.*)?$");

  private StorePaths() {}

  /** An ADLS location: storage account, container ("" when none) and path, as Iceberg reads it. */
  public static final class AdlsPath {
    public final String host;
    public final String account;
    public final String container;
    public final String path;

    AdlsPath(String host, String container, String path) {
      this.host = host;
      this.account = StoreTokens.accountOf(host);
      this.container = container;
      this.path = path;
    }

    /** One spelling for every scheme and host form of the same blob: {@code account/container/path}. */
    public String canonical() {
      return account + "/" + container + "/" + path;
    }
  }

  /** {@code location} taken apart as Iceberg's ADLSLocation does; IllegalArgumentException when it is not one. */
  public static AdlsPath adls(String location) {
    Matcher m = location == null ? null : ADLS.matcher(location);
    if (m == null || !m.matches()) {
      throw new IllegalArgumentException("not an ADLS location (abfs[s]://container@account.dfs.core.windows.net/path): "
          + location);
    }
    String authority = m.group(2);
    int at = authority.indexOf('@');
    String container = at < 0 ? "" : authority.substring(0, at);
    String host = at < 0 ? authority : authority.substring(at + 1);
    String rest = m.group(3) == null ? "" : m.group(3);
    return new AdlsPath(host, container, rest.startsWith("/") ? rest.substring(1) : rest);
  }

  /** Whether {@code location} is an ADLS one ({@link #adls} takes it apart). */
  public static boolean isAdls(String location) {
    return location != null && ADLS.matcher(location).matches();
  }
}
