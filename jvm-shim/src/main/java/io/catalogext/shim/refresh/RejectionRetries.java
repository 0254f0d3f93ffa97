package io.catalogext.shim.refresh;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.session.ServerClocks;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;

/**
 * The reactive refresh inside the S3 client: a call S3 answers with "these keys are no longer
 * valid" marks the table's keys stale, waits for new ones (single-flight, see
 * {@link TableEntry#onRejected}) and sends the same call again, so the task never sees the
 * rejection. Why a proxy around the client, not an SDK retry condition or interceptor: the SDK
 * resolves the signing identity once per call, before its retry loop, so its own retries would
 * sign with the rejected keys again; only a new call takes the new keys. A java.lang.reflect.Proxy
 * over the {@link S3Client} interface covers every operation S3FileIO uses (and any a later
 * Iceberg adds) without copying ~100 method signatures.
 *
 * <p>Only the codes that mean the keys themselves died count (the shared spec's,
 * {@link CredentialRules#EXPIRY_CODES}, PyIceberg's too); AccessDenied,
 * SignatureDoesNotMatch and the like are scope or signing errors and fail as S3 answered. A HEAD
 * answered 403 has no body, hence no code: one GET of the same key's first byte asks S3 for it;
 * a codeless 403 is never taken for an expiry by itself.
 */
public final class RejectionRetries implements InvocationHandler {
  /** Sends of one call at most: a refresh per wave plus a send after keys changed underneath (the shared spec's). */
  static final int MAX_SENDS = CredentialRules.SENDS_PER_CALL;

  private final S3Client real;
  private final TableCredentialsProvider provider;

  private RejectionRetries(S3Client real, TableCredentialsProvider provider) {
    this.real = real;
    this.provider = provider;
  }

  /**
   * The driver's S3 clients watch S3's clock (executors get expiries already on the driver's), for
   * the catalog session of the table's entry: the one its FileIO properties name, whatever Iceberg
   * built the client from.
   */
  public static ExecutionInterceptor dateWatch(TableCredentialsProvider provider) {
    TableEntry entry = provider.entry();
    return entry.drivesRefresh() ? new DateWatch(entry.clocks(), entry.policy.maxClockSkewMs) : null;
  }

  /** equals, hashCode and toString of a client proxy: identity, and a name without keys. */
  static Object objectMethod(Object proxy, Method method, Object[] args, String name) {
    switch (method.getName()) {
      case "equals":
        return proxy == args[0];
      case "hashCode":
        return System.identityHashCode(proxy);
      default:
        return name;
    }
  }

  public static S3Client wrap(S3Client real, TableCredentialsProvider provider) {
    return (S3Client) Proxy.newProxyInstance(
        RejectionRetries.class.getClassLoader(), new Class<?>[] {S3Client.class}, new RejectionRetries(real, provider));
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    if (method.getDeclaringClass() == Object.class) {
      return objectMethod(proxy, method, args, "RejectionRetries{" + provider + "}");
    }
    if (!implementedByClient(method)) {
      // S3Client's convenience forms (a Consumer of a request builder, ...) build the request and
      // call the form the client implements: run them on the proxy so that call comes back here.
      return defaultOn(proxy, method, args);
    }
    if (args == null || args.length == 0) {
      return call(method, args); // close(), serviceName(), utilities(), waiter(): no request to repeat
    }
    long firstRejectedNanos = 0;
    for (int send = 1; ; send++) {
      CredentialSnapshot used = provider.current();
      try {
        Object result = call(method, args);
        provider.accepted(used);
        if (firstRejectedNanos != 0) {
          provider.retried((System.nanoTime() - firstRejectedNanos) / 1_000_000L);
        }
        return result;
      } catch (Throwable failure) {
        String code = expiryCode(failure);
        if (code == null && isCodeless403(failure)) {
          if (provider.current() != used && send < MAX_SENDS) {
            continue; // keys changed since this was signed: the probe would test other keys
          }
          code = args[0] instanceof HeadObjectRequest ? probe((HeadObjectRequest) args[0]) : null;
          if (code == null && provider.current() != used && send < MAX_SENDS) {
            // The probe read fine, but signed with keys that replaced the rejected ones meanwhile
            // (its own signing may wait for them when the old ones are due): send it again with them.
            continue;
          }
        }
        if (code != null && used != null && send >= MAX_SENDS) {
          throw provider.lastSendRejected(used, code, failure); // the caller's one line, not S3's raw refusal
        }
        if (code == null || !provider.onRejected(used, code, failure)) {
          throw failure;
        }
        if (firstRejectedNanos == 0) {
          firstRejectedNanos = System.nanoTime();
        }
      }
    }
  }

  private static final java.util.Map<Method, java.lang.invoke.MethodHandle> DEFAULTS =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final java.util.Map<Method, Boolean> implemented = new java.util.concurrent.ConcurrentHashMap<>();

  /** The client's class overrides this interface method (every S3Client method is a default one). */
  private boolean implementedByClient(Method method) {
    return implementedBy(real, method, implemented);
  }

  /** Whether {@code client}'s class overrides interface method {@code method} ({@code cache}: per client). */
  static boolean implementedBy(Object client, Method method, java.util.Map<Method, Boolean> cache) {
    if (!method.isDefault()) {
      return true;
    }
    return cache.computeIfAbsent(method, m -> {
      try {
        return client.getClass().getMethod(m.getName(), m.getParameterTypes()).getDeclaringClass() != m.getDeclaringClass();
      } catch (NoSuchMethodException e) {
        return true;
      }
    });
  }

  static Object defaultOn(Object proxy, Method method, Object[] args) throws Throwable {
    java.lang.invoke.MethodHandle handle = DEFAULTS.computeIfAbsent(method, m -> {
      try {
        Class<?> owner = m.getDeclaringClass();
        return java.lang.invoke.MethodHandles.privateLookupIn(owner, java.lang.invoke.MethodHandles.lookup())
            .unreflectSpecial(m, owner);
      } catch (IllegalAccessException e) {
        throw new IllegalStateException("cannot call " + m + " on the S3 client", e);
      }
    });
    Object[] all = new Object[(args == null ? 0 : args.length) + 1];
    all[0] = proxy;
    if (args != null) {
      System.arraycopy(args, 0, all, 1, args.length);
    }
    return handle.invokeWithArguments(all);
  }

  private Object call(Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(real, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** The code of a rejection saying the keys are no longer valid (403 or 400), else null. */
  static String expiryCode(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof AwsServiceException) {
        AwsServiceException e = (AwsServiceException) t;
        String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
        if (CredentialRules.EXPIRY_STATUSES.contains(e.statusCode()) && code != null
            && CredentialRules.EXPIRY_CODES.contains(code)) {
          return code;
        }
        return null;
      }
    }
    return null;
  }

  /** A 403 without an error code (a HEAD's answer has no body). */
  static boolean isCodeless403(Throwable failure) {
    if (!(failure instanceof AwsServiceException) || ((AwsServiceException) failure).statusCode() != 403) {
      return false;
    }
    AwsServiceException e = (AwsServiceException) failure;
    String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
    return code == null || code.isEmpty() || code.startsWith("403");
  }

  /** Asks S3 why a HEAD got 403: one GET of the key's first byte, whose answer has a body. */
  private String probe(HeadObjectRequest head) {
    try {
      real.getObject(
          GetObjectRequest.builder().bucket(head.bucket()).key(head.key()).versionId(head.versionId())
              .range("bytes=0-0").build(),
          ResponseTransformer.toBytes());
      return null; // readable now: the 403 was not about the keys
    } catch (RuntimeException e) {
      return expiryCode(e);
    }
  }

  /**
   * Reads S3's Date header (at most every 10 s per client) so that the catalog's expiries can be
   * scheduled on the server's clock when the clocks disagree past max-clock-skew-ms.
   */
  static final class DateWatch implements ExecutionInterceptor {
    private static final long EVERY_MS = 10_000L;
    private final ServerClocks clocks;
    private final long boundMs;
    private volatile long lastMs;

    DateWatch(ServerClocks clocks, long boundMs) {
      this.clocks = clocks;
      this.boundMs = boundMs;
    }

    @Override
    public void afterTransmission(Context.AfterTransmission context, ExecutionAttributes attributes) {
      long now = System.currentTimeMillis();
      if (now - lastMs < EVERY_MS) {
        return;
      }
      lastMs = now;
      context.httpResponse().firstMatchingHeader("Date").ifPresent(date -> {
        try {
          long server = ZonedDateTime.parse(date, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli();
          // The header is truncated to the second: compare with the local time of its start.
          clocks.observeDate("s3", server + 500, now, boundMs);
        } catch (RuntimeException e) {
          // an unreadable Date header tells nothing about the clocks
        }
      });
    }
  }
}
