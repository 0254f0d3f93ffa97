package io.catalogext.shim.refresh;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.util.Json;
import io.catalogext.shim.wire.RefreshTokenCapture;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/** Fresh credentials from a source: per storage prefix, plus the table-level config ("" key). */
public final class RefreshResult {
  /** prefix ("" for table config) -> s3.* properties. */
  final Map<String, Map<String, String>> configByPrefix;
  /** prefix -> new storage-refresh-token, when the catalog rotates them. */
  final Map<String, String> refreshTokens;
  final String strategy;
  /**
   * Set when these are not fresh credentials but the source's still-valid old ones (the driver's,
   * while its refresh fails): installed, yet the refresh counts as failed, with this error.
   */
  final String degradedError;

  public RefreshResult(
      Map<String, Map<String, String>> configByPrefix, Map<String, String> refreshTokens, String strategy) {
    this(configByPrefix, refreshTokens, strategy, null);
  }

  public RefreshResult(
      Map<String, Map<String, String>> configByPrefix,
      Map<String, String> refreshTokens,
      String strategy,
      String degradedError) {
    this.configByPrefix = configByPrefix;
    this.refreshTokens = refreshTokens;
    this.strategy = strategy;
    this.degradedError = degradedError;
  }

  /**
   * Parses {"strategy": s, "config": {...}, "storage-credentials": [{"prefix", "config",
   * "storage-refresh-token"?}]}, the shape the Python bridge returns (close to the REST spec's).
   */
  static RefreshResult fromJson(JsonNode node) {
    Map<String, Map<String, String>> byPrefix = new LinkedHashMap<>();
    Map<String, String> tokens = new LinkedHashMap<>();
    Map<String, String> tableConfig = Json.stringMap(node.get("config"));
    if (tableConfig.containsKey(ShimKeys.ACCESS_KEY_ID)) {
      byPrefix.put("", tableConfig);
    }
    JsonNode creds = node.get("storage-credentials");
    if (creds != null && creds.isArray()) {
      Iterator<JsonNode> it = creds.elements();
      while (it.hasNext()) {
        JsonNode c = it.next();
        String prefix = c.path("prefix").asText("");
        byPrefix.put(prefix, Json.stringMap(c.get("config")));
        JsonNode token = c.get(RefreshTokenCapture.TOKEN_FIELD);
        if (token != null && token.isTextual()) {
          tokens.put(prefix, token.asText());
        }
      }
    }
    return new RefreshResult(byPrefix, tokens, node.path("strategy").asText("unknown"));
  }

  /**
   * Credentials for a client bound to {@code prefix}: the longest new prefix that covers it (the
   * spec's rule), else the table-level config.
   */
  Map<String, String> configFor(String prefix) {
    String best = null;
    for (String candidate : configByPrefix.keySet()) {
      if (!candidate.isEmpty()
          && prefix.startsWith(candidate)
          && (best == null || candidate.length() > best.length())) {
        best = candidate;
      }
    }
    if (best != null) {
      return configByPrefix.get(best);
    }
    if (configByPrefix.containsKey("")) {
      return configByPrefix.get("");
    }
    // A table-level client with only prefixed credentials: take the one covering the most.
    String shortest = null;
    for (String candidate : configByPrefix.keySet()) {
      if (shortest == null || candidate.length() < shortest.length()) {
        shortest = candidate;
      }
    }
    return shortest == null ? null : configByPrefix.get(shortest);
  }
}
