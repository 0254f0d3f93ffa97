package io.catalogext.shim.stores;

import io.catalogext.shim.refresh.TableTokens;
import io.catalogext.shim.util.Prefixes;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.iceberg.io.StorageCredential;

/**
 * Which tokens a path of one table gets, in one JVM: the storage credential of the longest vended
 * prefix the path starts with. The table config's token ("" slot) serves only a table that came
 * with no storage credentials for this store: where a catalog vended per prefix, a path under none
 * of them gets no token at all, never another prefix's (a table config holds one token per key,
 * whichever prefix it came from).
 */
public final class PrefixTokens {
  private final Map<String, String> properties;
  /** Canonical prefix -> the prefix as vended (the registry's slot name). */
  private final Map<String, String> vended = new LinkedHashMap<>();
  private final Map<String, Map<String, String>> configByPrefix = new LinkedHashMap<>();
  private final Function<String, String> canonical;
  private final Map<String, TableTokens> tokens = new ConcurrentHashMap<>();

  /**
   * @param properties the FileIO's properties (the table's handle and config)
   * @param credentials the FileIO's storage credentials; those {@code ofThisStore} accepts count
   * @param canonical one spelling of a location for comparing prefixes (ADLS: scheme and host form)
   */
  public PrefixTokens(Map<String, String> properties, List<StorageCredential> credentials, Predicate<String> ofThisStore,
      Function<String, String> canonical) {
    this.properties = properties;
    this.canonical = canonical;
    for (StorageCredential credential : credentials) {
      if (ofThisStore.test(credential.prefix())) {
        vended.put(canonical.apply(credential.prefix()), credential.prefix());
        configByPrefix.put(credential.prefix(), credential.config());
      }
    }
  }

  /** The vended prefix {@code path} falls under, "" (the table config) when none was vended, or null. */
  public String prefixFor(String path) {
    if (vended.isEmpty()) {
      return "";
    }
    String best = Prefixes.longest(vended.keySet(), canonical.apply(path));
    return best == null ? null : vended.get(best);
  }

  /** The vended prefix {@code path} falls under ("" as in {@link #prefixFor}); throws (one line) when none. */
  public String requirePrefix(String path) {
    String prefix = prefixFor(path);
    if (prefix == null) {
      throw new IllegalStateException(noPrefixMessage(path));
    }
    return prefix;
  }

  /** The tokens of vended prefix {@code prefix} ("": the table config's). */
  public TableTokens forPrefix(String prefix) {
    return tokens.computeIfAbsent(prefix, p -> TableTokens.of(properties, p, p.isEmpty() ? properties : configByPrefix.get(p)));
  }

  /** The tokens for {@code path}, or null when it is under no vended prefix. */
  public TableTokens forPath(String path) {
    String prefix = prefixFor(path);
    return prefix == null ? null : forPrefix(prefix);
  }

  /** The prefixes vended for this store, as vended. */
  public java.util.Collection<String> prefixes() {
    return vended.values();
  }

  /** The one-line refusal for a path under none of the vended prefixes. */
  public String noPrefixMessage(String path) {
    return path + " is under none of the prefixes the catalog vended credentials for (" + String.join(", ", prefixes())
        + "): no credentials are sent there";
  }
}
