package io.catalogext.shim.refresh;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Driver: what executors report of one table's keys. No executor hears of another's rejections,
 * so each would start a rejection wave of its own; the driver judges their reports for all of them
 * (credential-rules.json `executor-reports`). It hears of acceptances only at an executor's next
 * ask, so it judges by the keys' age alone: keys newer than those whose reported rejection last
 * started a refresh, rejected younger than a learnable lifetime, were revoked as well, and
 * refreshing cannot help.
 */
final class ExecutorReports {
  /** Keys handed out since a wave, remembered up to this many: a wave is answered within a few renewals. */
  private static final int MAX_HANDED_OUT = 64;

  /** The last reported rejection that started a refresh, while no executor reported newer keys accepted. */
  private volatile Wave wave;

  private static final class Wave {
    final RejectionWave rejection;
    final Set<String> handedOutSince = ConcurrentHashMap.newKeySet();

    Wave(CredentialSnapshot rejected, long keysLivedMs) {
      this.rejection = new RejectionWave(rejected, keysLivedMs);
    }
  }

  /**
   * An executor reports that a store rejected key {@code keyId} ({@code code}) of {@code slots},
   * and that it last saw a store accept key {@code acceptedKeyId} (null: none). Counted by
   * {@code ledger}, and the refresh started by the reply, only while those keys are current (later
   * reports of one wave find them replaced or marked already).
   *
   * @return null, or the caller's one line: refreshing cannot help, or the rate limit
   */
  String onRejection(CredentialSlots slots, RejectionLedger ledger, String keyId, String code, String acceptedKeyId,
      long now) {
    onAccepted(acceptedKeyId);
    for (CredentialSlot slot : slots.all().values()) {
      CredentialSnapshot s = slot.current;
      if (s == null || !s.accessKeyId().equals(keyId)) {
        continue;
      }
      long age = now - s.fetchedAtMs;
      Wave last = wave;
      if (last != null && last.rejection.isOlderThan(s) && age < RejectionLedger.MIN_LEARNED_LIFETIME_MS) {
        return ledger.rejectedAgainMessage(s, code, age);
      }
      boolean counted = s.rejected;
      if (!ledger.markRejected(s, code, now)) {
        return ledger.rateLimitedMessage(s, code);
      }
      if (!counted) {
        wave = new Wave(s, age);
      }
    }
    return null;
  }

  /** An executor's ask, or this JVM, says a store accepted key {@code keyId} (null: none): it may answer the wave. */
  void onAccepted(String keyId) {
    Wave last = wave;
    if (last != null && keyId != null && last.handedOutSince.contains(keyId)) {
      wave = null;
    }
  }

  /** The driver holds {@code keys} now: the wave's answer, when they are newer than the rejected ones. */
  void handedOut(CredentialSnapshot keys) {
    Wave last = wave;
    if (last != null && last.handedOutSince.size() < MAX_HANDED_OUT && last.rejection.isOlderThan(keys)) {
      last.handedOutSince.add(keys.accessKeyId());
    }
  }
}
