package io.catalogext.shim.wire;

import io.catalogext.shim.config.TrustRules;

import io.catalogext.shim.errors.UntrustedOriginException;

import java.net.URI;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;

/**
 * The origins a catalog's credentials may go to: the catalog URI's origin and those the user
 * configured (their own {@code oauth2-server-uri}, {@code s3.signer.uri} / {@code signer.uri}, and
 * {@value #KNOB}), all from the catalog properties the user set, never from an answer. Checked
 * where requests are sent ({@link #check}): whatever property, answer or redirect named a URL, a
 * request to another origin is refused before anything is sent.
 *
 * <p>It also remembers where servers named URLs on other origins ({@link #noteServerUrls}), so the
 * refusal can say which key of which answer asked for it.
 */
public final class TrustedOrigins {
  /** Extra origins, comma-separated (the knob spec's {@code catalog-ext.trusted-origins}). */
  public static final String KNOB = "catalog-ext.trusted-origins";
  /** The user's own URLs that receive the catalog's credentials besides its uri: allowed by construction. */
  private static final List<String> USER_URLS = TrustRules.USER_URL_KEYS;
  /** Server-named URLs remembered for messages; a bound, not a cache of anything that decides. */
  private static final int MAX_NOTED = 64;

  private final String catalog;
  private final Set<Origin> origins;
  private final Map<Origin, String> namedBy =
      Collections.synchronizedMap(new LinkedHashMap<Origin, String>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<Origin, String> eldest) {
          return size() > MAX_NOTED;
        }
      });

  private TrustedOrigins(String catalog, Set<Origin> origins) {
    this.catalog = catalog;
    this.origins = Collections.unmodifiableSet(origins);
  }

  /**
   * The trust set of catalog {@code catalog} from the properties the user configured.
   *
   * @throws IllegalArgumentException one line naming a URL property or origin that cannot be parsed
   */
  public static TrustedOrigins fromUserProperties(String catalog, Map<String, String> props) {
    Set<Origin> origins = new LinkedHashSet<>();
    for (String key : USER_URLS) {
      String value = props.get(key);
      if (value != null && Origin.isAbsolute(value)) {
        origins.add(parse(key, value));
      }
    }
    origins.addAll(parseList(KNOB, props.get(KNOB)));
    return new TrustedOrigins(catalog, origins);
  }

  /** A trust set written by {@link #sealed()} (in another JVM). */
  public static TrustedOrigins fromSealed(String catalog, String sealed) {
    return new TrustedOrigins(catalog, new LinkedHashSet<>(parseList("the sealed trusted origins", sealed)));
  }

  private static Set<Origin> parseList(String key, String list) {
    Set<Origin> out = new LinkedHashSet<>();
    if (list == null) {
      return out;
    }
    for (String item : list.split(",")) {
      if (!item.isBlank()) {
        out.add(parse(key, item.trim()));
      }
    }
    return out;
  }

  private static Origin parse(String key, String value) {
    try {
      Origin origin = Origin.of(value);
      if (KNOB.equals(key) && !pathless(value)) {
        throw new IllegalArgumentException("an origin has no path, query or fragment");
      }
      return origin;
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("Bad catalog property " + key + ": " + e.getMessage()
          + (KNOB.equals(key) ? "; list origins as scheme://host[:port], comma-separated" : ""));
    }
  }

  private static boolean pathless(String value) {
    URI u = URI.create(value.trim());
    return (u.getRawPath() == null || u.getRawPath().isEmpty() || u.getRawPath().equals("/"))
        && u.getRawQuery() == null && u.getRawFragment() == null;
  }

  /** The origins, as a list {@link #fromSealed} reads back. */
  public String sealed() {
    StringJoiner out = new StringJoiner(",");
    origins.forEach(o -> out.add(o.toString()));
    return out.toString();
  }

  public Set<Origin> origins() {
    return origins;
  }

  /** Whether a request to absolute {@code url} may carry the catalog's credentials. */
  public boolean allows(URI url) {
    try {
      return origins.contains(Origin.of(url));
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * Refuses {@code request} ("POST the OAuth2 token request", ...) to absolute {@code url} unless
   * its origin is trusted.
   *
   * @throws UntrustedOriginException one line: the origin, who named it (where known), how to allow it
   */
  public void check(URI url, String request) {
    Origin origin;
    try {
      origin = Origin.of(url);
    } catch (IllegalArgumentException e) {
      throw new UntrustedOriginException("catalog-ext refused to send " + request + " for catalog " + catalog
          + " to a URL it does not accept: " + e.getMessage());
    }
    if (origins.contains(origin)) {
      return;
    }
    String source = namedBy.get(origin);
    throw new UntrustedOriginException("catalog-ext refused to send " + request + " for catalog " + catalog + " to "
        + origin + (source == null ? "" : " (named by " + source + ")") + ": the catalog's credentials go only to"
        + " the origins its user configured (" + String.join(", ", describe()) + "); if that server is yours,"
        + " add " + origin + " to " + KNOB);
  }

  private Set<String> describe() {
    Set<String> out = new LinkedHashSet<>();
    origins.forEach(o -> out.add(o.toString()));
    return out;
  }

  /**
   * Remembers, for messages, every value of {@code values} that is a URL on an untrusted origin, as
   * named by {@code source} ("/v1/config overrides", "the table config of db.t"). Decides nothing.
   */
  public void noteServerUrls(String source, Map<String, String> values) {
    values.forEach((key, value) -> {
      if (value != null && Origin.isAbsolute(value)) {
        try {
          Origin origin = Origin.of(value);
          if (!origins.contains(origin)) {
            namedBy.put(origin, source + " " + key);
          }
        } catch (IllegalArgumentException e) {
          // not a URL a request could go to
        }
      }
    });
  }

  @Override
  public String toString() {
    return "TrustedOrigins" + describe();
  }
}
