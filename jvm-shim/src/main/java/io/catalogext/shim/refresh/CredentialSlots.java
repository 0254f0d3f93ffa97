package io.catalogext.shim.refresh;

import io.catalogext.shim.config.ShimKeys;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import org.apache.iceberg.rest.credentials.Credential;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;

/**
 * A table entry's keys: a slot per storage prefix, which the S3 clients' providers read without a
 * lock, and, on the driver, the catalog's storage-refresh-token per prefix (secret: never logged
 * or described). New keys replace a slot's only where they are fresh or outlive the held ones.
 */
final class CredentialSlots {
  /** Builds the snapshot of s3.* properties {@code config} at {@code nowMs} (null: no keys in it). */
  interface Snapshots extends BiFunction<Map<String, String>, Long, CredentialSnapshot> {}

  private final Map<String, CredentialSlot> slots = new ConcurrentHashMap<>();
  private final Map<String, String> refreshTokens = new ConcurrentHashMap<>();

  /** The slot of {@code prefix}, seeded with {@code snapshot} when it has none yet. */
  CredentialSlot seed(String prefix, Map<String, String> config, CredentialSnapshot snapshot) {
    CredentialSlot slot = slots.computeIfAbsent(prefix, p -> new CredentialSlot(snapshot));
    if (slot.current == null && snapshot != null) {
      slot.current = snapshot;
    }
    keepToken(prefix, config);
    return slot;
  }

  private void keepToken(String prefix, Map<String, String> config) {
    String token = config.get(ShimKeys.CAPTURED_REFRESH_TOKEN);
    if (token != null) {
      refreshTokens.put(prefix, token);
    }
  }

  /** The keys of {@code prefix}, else of the table config (""), else null. */
  CredentialSnapshot snapshot(String prefix) {
    CredentialSlot slot = slots.get(prefix);
    if (slot == null || slot.current == null) {
      slot = slots.get("");
    }
    return slot == null ? null : slot.current;
  }

  /** The slots by prefix (live). */
  Map<String, CredentialSlot> all() {
    return slots;
  }

  /** Prefix -> storage-refresh-token (live; the driver's). */
  Map<String, String> refreshTokens() {
    return refreshTokens;
  }

  /** The catalog handed the table out again: its keys where they outlive the ones held. */
  void adopt(Map<String, String> tableConfig, List<Credential> credentials, long now, Snapshots snapshots) {
    Map<String, Map<String, String>> byPrefix = new LinkedHashMap<>();
    byPrefix.put("", tableConfig);
    credentials.forEach(c -> byPrefix.put(c.prefix(), c.config()));
    byPrefix.forEach((prefix, config) -> {
      CredentialSnapshot snap = snapshots.apply(config, now);
      CredentialSlot slot = slots.computeIfAbsent(prefix, p -> new CredentialSlot(snap));
      CredentialSnapshot held = slot.current;
      if (snap != null && (held == null || snap.expiresAtMs > held.expiresAtMs)) {
        slot.current = snap;
      }
      keepToken(prefix, config);
    });
  }

  /**
   * Installs a refresh's keys in every slot this JVM has a client for: fresh keys always, a
   * degraded result's (the driver's still-valid old keys) only where they outlive the held ones.
   */
  void install(RefreshResult result, long now, Snapshots snapshots) {
    if (slots.isEmpty()) {
      result.configByPrefix.keySet().forEach(prefix -> slots.putIfAbsent(prefix, new CredentialSlot(null)));
    }
    for (Map.Entry<String, CredentialSlot> e : slots.entrySet()) {
      Map<String, String> config = result.configFor(e.getKey());
      CredentialSnapshot snap = config == null ? null : snapshots.apply(config, now);
      CredentialSnapshot held = e.getValue().current;
      if (snap != null && (result.degradedError == null || held == null || snap.expiresAtMs > held.expiresAtMs)) {
        e.getValue().current = snap;
      }
    }
    refreshTokens.putAll(result.refreshTokens);
  }

  /**
   * Whether {@code result} hands out exactly the keys every slot holds: no renewal then, but a
   * catalog's credential cache answering (Polaris hands a table location's keys back while its
   * cache entry lives).
   */
  boolean holds(RefreshResult result) {
    if (slots.isEmpty()) {
      return false;
    }
    for (Map.Entry<String, CredentialSlot> e : slots.entrySet()) {
      CredentialSnapshot held = e.getValue().current;
      Map<String, String> config = result.configFor(e.getKey());
      if (held == null || config == null || !held.sameKeys(config)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether every slot's keys come with an expiry the catalog stated. Keys without one (scheduled
   * by an assumed lifetime) that the catalog hands out again are static keys, not a cache: they
   * are taken again as a renewal, with a new assumed lifetime.
   */
  boolean allStatedExpiry() {
    return !slots.isEmpty() && slots.values().stream()
        .allMatch(slot -> slot.current != null && slot.current.statedExpiresAtMs != Long.MAX_VALUE);
  }

  /** The keys that expire first (they decide when the table needs its next refresh). */
  Optional<CredentialSnapshot> soonest() {
    return slots.values().stream()
        .map(slot -> slot.current)
        .filter(snap -> snap != null && snap.expiresAtMs != Long.MAX_VALUE)
        .min((a, b) -> Long.compare(a.expiresAtMs, b.expiresAtMs));
  }

  /** Whether every slot's keys have expired (or it has none). */
  boolean allExpired(long now) {
    return slots.values().stream().allMatch(sl -> sl.current == null || sl.current.expiresAtMs <= now);
  }

  /** The earliest expiry after {@code now} among the slots (Long.MAX_VALUE: none). */
  long earliestExpiryAfter(long now) {
    long earliest = Long.MAX_VALUE;
    for (CredentialSlot slot : slots.values()) {
      CredentialSnapshot s = slot.current;
      if (s != null && s.expiresAtMs > now && s.expiresAtMs < earliest) {
        earliest = s.expiresAtMs;
      }
    }
    return earliest;
  }

  /** Flags every snapshot due, so a provider still holding one leaves the hot path. */
  void markAllDue() {
    for (CredentialSlot slot : slots.values()) {
      CredentialSnapshot s = slot.current;
      if (s != null) {
        s.due = true;
      }
    }
  }

  /**
   * The ticker's pass: flags the snapshots whose refresh time has come (the providers' hot path
   * reads that flag, not the clock) and clears the readers' usage marks.
   *
   * @return whether any slot was read since the last pass
   */
  boolean tick(long now) {
    boolean used = false;
    for (CredentialSlot slot : slots.values()) {
      if (slot.used) {
        slot.used = false;
        used = true;
      }
      CredentialSnapshot s = slot.current;
      if (s != null && !s.due && now >= s.dueAtMs) {
        s.due = true;
      }
    }
    return used;
  }

  /** Timing of every slot's keys (no keys): for status. */
  void describeInto(ArrayNode prefixes) {
    slots.forEach((prefix, slot) -> {
      CredentialSnapshot snap = slot.current;
      if (snap == null) {
        return;
      }
      var p = prefixes.addObject();
      p.put("prefix", prefix);
      p.put("fetched_at_ms", snap.fetchedAtMs);
      p.put("expires_at_ms", snap.expiresAtMs == Long.MAX_VALUE ? -1 : snap.expiresAtMs);
      p.put("refresh_at_ms", snap.refreshAtMs == Long.MAX_VALUE ? -1 : snap.refreshAtMs);
    });
  }
}
