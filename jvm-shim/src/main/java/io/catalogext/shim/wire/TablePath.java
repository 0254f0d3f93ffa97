package io.catalogext.shim.wire;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTUtil;

/**
 * The one parser and builder of the REST spec's table paths: {@code {root}namespaces/{ns}/tables},
 * {@code {root}namespaces/{ns}/tables/{table}} and {@code {root}namespaces/{ns}/register}, where
 * root is {@code v1/{prefix}/} as the catalog's own requests spell it. Namespaces and names are
 * encoded and decoded with Iceberg's {@link RESTUtil} (the 0x1F separator, percent-encoding).
 */
public final class TablePath {
  /** Everything before "namespaces/", e.g. {@code v1/warehouse/} ("" when the path starts there). */
  public final String root;

  public final List<String> namespace;
  /** The table's name; null for {@code .../tables} (create, list) and {@code .../register}. */
  public final String table;

  private TablePath(String root, List<String> namespace, String table) {
    this.root = root;
    this.namespace = Collections.unmodifiableList(namespace);
    this.table = table;
  }

  /** A table path, or null for any other path (including {@code .../tables/{t}/credentials}). */
  public static TablePath parse(String path) {
    String clean = path.split("\\?", 2)[0];
    String stripped = clean.replaceAll("^/+", "");
    String[] parts = stripped.split("/");
    int i = Arrays.asList(parts).indexOf("namespaces");
    if (i < 0 || parts.length < i + 3) {
      return null;
    }
    String kind = parts[i + 2];
    String table = null;
    if ("tables".equals(kind)) {
      if (parts.length > i + 4) {
        return null; // e.g. .../tables/{t}/credentials or /metrics
      }
      table = parts.length == i + 4 ? RESTUtil.decodeString(parts[i + 3]) : null;
    } else if (!"register".equals(kind) || parts.length != i + 3) {
      return null;
    }
    String leading = clean.substring(0, clean.length() - stripped.length());
    String root = leading + (i == 0 ? "" : String.join("/", Arrays.copyOfRange(parts, 0, i)) + "/");
    return new TablePath(root, decodeNamespace(parts[i + 1]), table);
  }

  /**
   * Namespace levels in a path: each level URL-encoded, joined by the spec's default separator {@code %1F}.
   * Ours, not RESTUtil's: its encodeNamespace/decodeNamespace take a separator argument from Iceberg 1.12 on
   * and did not before, so no single call compiles against both.
   */
  private static final String NAMESPACE_SEPARATOR = "%1F";

  static String encodeNamespace(List<String> levels) {
    StringBuilder out = new StringBuilder();
    for (String level : levels) {
      if (out.length() > 0) {
        out.append(NAMESPACE_SEPARATOR);
      }
      out.append(RESTUtil.encodeString(level));
    }
    return out.toString();
  }

  static List<String> decodeNamespace(String encoded) {
    List<String> levels = new java.util.ArrayList<>();
    for (String level : encoded.split(NAMESPACE_SEPARATOR, -1)) {
      levels.add(RESTUtil.decodeString(level));
    }
    return levels;
  }

  /** {@code {root}namespaces/{ns}} */
  public static String namespace(String root, List<String> namespace) {
    return root + "namespaces/" + encodeNamespace(namespace);
  }

  /** {@code {root}namespaces/{ns}/tables} */
  public static String tables(String root, List<String> namespace) {
    return namespace(root, namespace) + "/tables";
  }

  /** {@code {root}namespaces/{ns}/tables/{table}} */
  public static String table(String root, List<String> namespace, String table) {
    return tables(root, namespace) + "/" + RESTUtil.encodeString(table);
  }

  /** The table path of one change of a {@code {root}transactions/commit} request, else null. */
  public static String forTransactionChange(String transactionPath, TableIdentifier ident) {
    String base = transactionPath.split("\\?", 2)[0].replaceAll("/+$", "");
    if (ident == null || !base.endsWith("transactions/commit")) {
      return null;
    }
    String root = base.substring(0, base.length() - "transactions/commit".length());
    return table(root, Arrays.asList(ident.namespace().levels()), ident.name());
  }

  /** Whether this names one table ({@code .../tables/{table}}). */
  public boolean isTable() {
    return table != null;
  }

  /** "ns1.ns2.table" for messages. */
  public String displayName() {
    return String.join(".", namespace) + "." + table;
  }
}
