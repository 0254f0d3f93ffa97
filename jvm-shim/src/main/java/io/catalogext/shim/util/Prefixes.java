package io.catalogext.shim.util;

import java.util.Collection;

/**
 * The rule by which Iceberg's FileIOs pick a storage credential for a path: the longest vended
 * prefix the path starts with. The stores' FileIOs pick a table prefix's token with it, the
 * catalog refresher a prefix's storage-refresh-token. The Python twin:
 * {@code pyspark_catalog_ext.catalog.locations.longest_prefix}.
 */
public final class Prefixes {
  private Prefixes() {}

  /**
   * The longest of {@code prefixes} that {@code path} starts with (both already in one canonical
   * form), or null when none does or {@code path} is null.
   */
  public static String longest(Collection<String> prefixes, String path) {
    if (path == null) {
      return null;
    }
    String best = null;
    for (String prefix : prefixes) {
      if (path.startsWith(prefix) && (best == null || prefix.length() > best.length())) {
        best = prefix;
      }
    }
    return best;
  }
}
