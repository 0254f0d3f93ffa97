package io.catalogext.shim.session;

import io.catalogext.shim.config.CredentialRules;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.apache.iceberg.rest.Endpoint;

/**
 * The endpoints a catalog turned out not to support (a 404, 405, 501 or "no route" to
 * {@code GET .../credentials}, or an endpoint list in {@code /v1/config} without it), each
 * remembered for {@link #FORGET_AFTER_MS} and then asked again: a catalog upgraded during a long
 * job, or a 404 from a proxy during a rolling restart, is not written off for the life of the JVM.
 * PyIceberg jobs forget after the same time (both read it from the shared credential rules).
 *
 * <p>Why a map of deadlines and not the runtime's Caffeine: the keys are the few endpoints the refresh
 * strategies use, so the map is bounded by construction and expiry is one comparison on read; the runtime's
 * Caffeine lives under the runtime's relocated package name (an accident of its shading the shim
 * would then depend on) and runs its maintenance on the common pool.
 */
public final class MissingEndpoints {
  /** How long a missing endpoint is remembered: the shared spec's, PyIceberg's too. */
  public static final long FORGET_AFTER_MS = CredentialRules.MISSING_ENDPOINT_FORGET_MS;

  private final LongSupplier clockMs;
  /** Endpoint -> the time (clockMs) from which it is asked again. */
  private final Map<Endpoint, Long> askAgainAtMs = new ConcurrentHashMap<>();

  /** On this JVM's wall clock, the one credential expiries are on. */
  public MissingEndpoints() {
    this(System::currentTimeMillis);
  }

  /** On {@code clockMs} (a test's clock). */
  public MissingEndpoints(LongSupplier clockMs) {
    this.clockMs = clockMs;
  }

  /** The catalog lacks {@code endpoint}: don't ask for the next hour. */
  public void add(Endpoint endpoint) {
    askAgainAtMs.put(endpoint, clockMs.getAsLong() + FORGET_AFTER_MS);
  }

  /** Whether {@code endpoint} is still remembered as missing (false once its hour has passed). */
  public boolean contains(Endpoint endpoint) {
    Long until = askAgainAtMs.get(endpoint);
    if (until == null) {
      return false;
    }
    if (clockMs.getAsLong() >= until) {
      askAgainAtMs.remove(endpoint, until); // unless a concurrent add renewed it
      return false;
    }
    return true;
  }

  @Override
  public String toString() {
    return "MissingEndpoints" + askAgainAtMs.keySet();
  }
}
