package io.catalogext.shim.refresh;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.util.Json;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * What executors and the driver plugin say to each other. On the wire each message is a
 * {@code byte[]} of JSON: Spark's RPC deserializes with the class loader it had at startup, which
 * in an executor does not see jars added with {@code spark.jars}, so only JDK types are safe there.
 */
public final class PluginMessages {
  private PluginMessages() {}

  /** "Give me table {handle}'s current credentials." */
  public static final class Request {
    public final String handle;
    public final String identityJson;
    /** Set when S3 rejected this access key id (not secret) of the table: refresh if it is current. */
    public final String staleKeyId;
    public final String staleCode;
    /** The key id (not secret) a store last accepted first in the executor: it answers the driver's wave. */
    public final String acceptedKeyId;

    public Request(String handle, String identityJson) {
      this(handle, identityJson, null, null, null);
    }

    public Request(String handle, String identityJson, String staleKeyId, String staleCode, String acceptedKeyId) {
      this.handle = handle;
      this.identityJson = identityJson;
      this.staleKeyId = staleKeyId;
      this.staleCode = staleCode;
      this.acceptedKeyId = acceptedKeyId;
    }

    public byte[] encode() {
      ObjectNode node = Json.object();
      node.put("handle", handle);
      node.put("identity", identityJson);
      if (staleKeyId != null) {
        node.put("stale_key_id", staleKeyId);
        node.put("stale_code", staleCode);
      }
      if (acceptedKeyId != null) {
        node.put("accepted_key_id", acceptedKeyId);
      }
      return Json.write(node).getBytes(StandardCharsets.UTF_8);
    }

    public static Request decode(Object message) {
      if (!(message instanceof byte[]) || ((byte[]) message).length > 64 * 1024) {
        throw new IllegalArgumentException("not a catalog-ext credential request");
      }
      JsonNode node = Json.read((byte[]) message);
      String handle = node.path("handle").asText(null);
      if (handle == null) {
        throw new IllegalArgumentException("credential request without a table handle");
      }
      return new Request(handle, node.path("identity").asText(null), node.path("stale_key_id").asText(null),
          node.path("stale_code").asText(null), node.path("accepted_key_id").asText(null));
    }

    @Override
    public String toString() {
      return "CredentialRequest{" + handle + "}";
    }
  }

  /**
   * The driver's answer: its current credentials per prefix; {@code fresh} when they are not due
   * yet; {@code refreshing} while a refresh runs; {@code error} when the last refresh failed and no
   * new one is running (the executor must fail or back off, not take the old keys as new). A reply
   * that is not fresh still carries the driver's keys while none of them has expired, each with its
   * expiry: the executor may use them until then (a catalog outage late in a lifetime).
   */
  public static final class Reply {
    public final Map<String, Map<String, String>> configByPrefix;
    public final boolean fresh;
    public final boolean refreshing;
    public final String error;
    final String strategy;
    /** The error is the driver's CredentialsRejectedException (its reactive refresh limit): final. */
    public final boolean rejected;

    public Reply(Map<String, Map<String, String>> configByPrefix, boolean fresh, boolean refreshing, String error, String strategy) {
      this(configByPrefix, fresh, refreshing, error, strategy, false);
    }

    public Reply(Map<String, Map<String, String>> configByPrefix, boolean fresh, boolean refreshing, String error,
        String strategy, boolean rejected) {
      this.configByPrefix = configByPrefix;
      this.fresh = fresh;
      this.refreshing = refreshing;
      this.error = error;
      this.strategy = strategy;
      this.rejected = rejected;
    }

    public static Reply failed(String error) {
      return new Reply(Map.of(), false, false, error, "driver");
    }

    public static Reply rejected(String error) {
      return new Reply(Map.of(), false, false, error, "driver", true);
    }

    /** Carries keys and none of them has expired at {@code nowMs} (by their own expiry). */
    public boolean hasValidKeys(long nowMs) {
      if (configByPrefix.isEmpty()) {
        return false;
      }
      for (Map<String, String> config : configByPrefix.values()) {
        String expires = config.get(ShimKeys.EXPIRES_AT_MS);
        if (!CredentialSnapshot.holdsKeys(config) || (expires != null && Long.parseLong(expires.trim()) <= nowMs)) {
          return false;
        }
      }
      return true;
    }

    public RefreshResult toResult() {
      return new RefreshResult(configByPrefix, Map.of(), strategy);
    }

    /** The driver's still-valid keys while its refresh fails: installed, the failure kept. */
    public RefreshResult toDegradedResult() {
      String why = error != null ? "the driver's refresh failed: " + error : "the driver is still refreshing";
      return new RefreshResult(configByPrefix, Map.of(), strategy, why + " (using its unexpired keys meanwhile)");
    }

    public byte[] encode() {
      ObjectNode node = Json.object();
      ObjectNode configs = node.putObject("configs");
      configByPrefix.forEach((prefix, config) -> configs.set(prefix, Json.fromMap(config)));
      node.put("fresh", fresh);
      node.put("refreshing", refreshing);
      node.put("error", error);
      node.put("strategy", strategy);
      if (rejected) {
        node.put("rejected", true);
      }
      return Json.write(node).getBytes(StandardCharsets.UTF_8);
    }

    public static Reply decode(Object message) {
      if (!(message instanceof byte[])) {
        throw new IllegalStateException("unexpected reply from the driver's catalog-ext plugin");
      }
      JsonNode node = Json.read((byte[]) message);
      Map<String, Map<String, String>> configs = new LinkedHashMap<>();
      // properties(), not fields(): fields() is deprecated in the Jackson that Iceberg 1.12 shades.
      node.path("configs").properties().forEach(e -> configs.put(e.getKey(), Json.stringMap(e.getValue())));
      return new Reply(
          configs,
          node.path("fresh").asBoolean(false),
          node.path("refreshing").asBoolean(false),
          node.hasNonNull("error") ? node.get("error").asText() : null,
          node.path("strategy").asText("driver"),
          node.path("rejected").asBoolean(false));
    }

    @Override
    public String toString() {
      // Never the keys.
      return "CredentialReply{fresh=" + fresh + ", refreshing=" + refreshing + ", error=" + (error != null) + "}";
    }
  }
}
