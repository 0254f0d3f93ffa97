package io.catalogext.shim.refresh;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.session.ServerClocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.config.ShimKeys;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;
import java.lang.reflect.Proxy;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;

/**
 * The reactive refresh with the real AWS SDK S3 client against a loopback S3 that rejects keys
 * the way S3 does (403 with an XML code; HEAD with no body): a rejected call is sent again with
 * refreshed keys inside the SDK call, one refresh per wave however many calls were rejected, and
 * executors report the rejected key to the driver, which refreshes only while it is current.
 */
public class EarlyRejectionTest {
  private HttpServer server;
  /** access key id -> the code S3 answers for it (absent: accepted). */
  private final Map<String, String> dead = new ConcurrentHashMap<>();
  /** Keys whose requests for "other/..." are outside their scope (AccessDenied). */
  private final List<String> seen = new CopyOnWriteArrayList<>();
  private final AtomicInteger fetches = new AtomicInteger();
  private volatile String deadCodeForNewKeys; // every refresh hands out keys S3 rejects with this
  /** Moves the fake clock this far, and marks the keys due, when a HEAD is rejected (0: not at all), once. */
  private volatile long advanceOnRejectedHead;
  /** Each rejected GET moves the fake clock on by this times the rejections so far: each new key outlives the last (0: not at all). */
  private volatile long agingStepMs;
  private final AtomicInteger rejectedGets = new AtomicInteger();
  private final FakeClock fake = new FakeClock();
  private Clock clock = fake;
  private TableEntry entry; // the last seededClient()'s
  private CredentialSlot slot;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", this::answer);
    server.setExecutor(Executors.newFixedThreadPool(8));
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private void answer(HttpExchange x) throws IOException {
    String auth = x.getRequestHeaders().getFirst("Authorization");
    String akid = auth == null ? null : auth.split("Credential=", 2)[1].split("/", 2)[0];
    seen.add(x.getRequestMethod() + " " + akid + " " + x.getRequestURI().getPath());
    x.getRequestBody().readAllBytes();
    String code = dead.get(akid);
    if (code == null && x.getRequestURI().getPath().contains("/other/")) {
      code = "AccessDenied";
    }
    if (code != null) {
      if ("HEAD".equals(x.getRequestMethod())) {
        long advance = advanceOnRejectedHead;
        if (advance > 0) { // as the schedule would: the keys are past their end, and due
          advanceOnRejectedHead = 0;
          fake.advance(advance);
          slot.current.due = true;
        }
        x.sendResponseHeaders(403, -1); // as S3: a HEAD's error has no body
      } else {
        fake.advance(agingStepMs * rejectedGets.incrementAndGet());
        byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code
            + "</Code><Message>no</Message><RequestId>R</RequestId></Error>").getBytes(StandardCharsets.UTF_8);
        x.getResponseHeaders().add("Content-Type", "application/xml");
        x.sendResponseHeaders(403, body.length);
        x.getResponseBody().write(body);
      }
    } else if ("HEAD".equals(x.getRequestMethod())) {
      x.getResponseHeaders().add("Content-Length", "5");
      x.sendResponseHeaders(200, -1);
    } else {
      byte[] body = "hello".getBytes(StandardCharsets.UTF_8);
      x.sendResponseHeaders(200, body.length);
      x.getResponseBody().write(body);
    }
    x.close();
  }

  private static RefreshPolicy policy(long reactivePerMinute) {
    return new RefreshPolicy(0, 0.4, 1000, 100, 1000, 5000, 3_600_000L, reactivePerMinute, 5000);
  }

  private TableEntry driverEntry(RefreshPolicy policy) {
    TableContext context =
        TableContext.fromIdentity("{\"catalog\":\"lake\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    EntryRefresher catalog =
        e -> {
          String key = "K" + (fetches.incrementAndGet() + 1);
          if (deadCodeForNewKeys != null) {
            dead.put(key, deadCodeForNewKeys);
          }
          return new RefreshResult(
              Map.of("", Map.of(ShimKeys.ACCESS_KEY_ID, key, ShimKeys.SECRET_ACCESS_KEY, "S",
                  ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 10_000))),
              Map.of(), "reload");
        };
    return new TableEntry("h", context, policy, catalog, clock);
  }

  private static Map<String, String> firstKeys(long expiresAt) {
    return Map.of(ShimKeys.ACCESS_KEY_ID, "K1", ShimKeys.SECRET_ACCESS_KEY, "S",
        ShimKeys.EXPIRES_AT_MS, String.valueOf(expiresAt));
  }

  private S3Client client(TableEntry entry, CredentialSlot slot) {
    S3Client real = S3Client.builder()
        .endpointOverride(URI.create("http://127.0.0.1:" + server.getAddress().getPort()))
        .region(Region.US_EAST_1)
        .forcePathStyle(true)
        .credentialsProvider(new TableCredentialsProvider(entry, slot))
        .build();
    return RejectionRetries.wrap(real, new TableCredentialsProvider(entry, slot));
  }

  private static String get(S3Client s3, String key) {
    return s3.getObject(b -> b.bucket("warehouse").key(key), ResponseTransformer.toBytes()).asUtf8String();
  }

  /** A driver's entry seeded with K1 (stated to live 10 s), kept in entry and slot, and an S3 client on it. */
  private S3Client seededClient(long reactivePerMinute) {
    entry = driverEntry(policy(reactivePerMinute));
    slot = entry.seed("", firstKeys(clock.nowMs() + 10_000));
    return client(entry, slot);
  }

  /** `calls` GETs at once on 8 threads, the n-th by `call.apply(n)`: every one must read the object. */
  private static void assertConcurrentGetsRead(int calls, IntFunction<String> call) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<String>> futures = new ArrayList<>();
      for (int i = 0; i < calls; i++) {
        int n = i;
        futures.add(pool.submit(() -> call.apply(n)));
      }
      for (Future<String> future : futures) {
        assertEquals("hello", future.get());
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void testARejectionWaveIsOneRefreshAndEveryRejectedCallGoesThrough() throws Exception {
    S3Client s3 = seededClient(6);
    assertEquals("hello", get(s3, "db/t/data/0.parquet"));
    fake.advance(3_000);
    dead.put("K1", "ExpiredToken"); // dies at 3 s of a stated 10 s
    assertConcurrentGetsRead(16, n -> get(s3, "db/t/data/" + n + ".parquet"));
    assertEquals(1, fetches.get(), "catalog requests for one rejection wave");
    assertEquals("K2", slot.current.accessKeyId());
    assertFalse(entry.cannotHelp(slot.current, 0), "K2 was accepted: a later rejection is refreshed again");
    // Learned: the catalog's keys live 3 s, not 10 s: the next keys are renewed before that.
    assertEquals(3_000, entry.clocks().learnedLifetimeMs());
    assertEquals(slot.current.fetchedAtMs + 3_000, slot.current.expiresAtMs);
    assertEquals(10_000, slot.current.statedLifetimeMs());
    long retried = entry.describe().get("retried_calls").asLong();
    assertTrue(retried >= 1 && retried <= 16, entry.describe().toString());
  }

  @Test
  void testAHeadRejectedWithoutABodyAsksS3ForTheCode() {
    S3Client s3 = seededClient(6);
    dead.put("K1", "InvalidAccessKeyId");
    assertEquals(5L, s3.headObject(b -> b.bucket("warehouse").key("db/t/data/0.parquet")).contentLength());
    assertEquals(1, fetches.get());
    assertTrue(seen.contains("GET K1 /warehouse/db/t/data/0.parquet"), seen.toString()); // the probe
  }

  @Test
  void testAHeadWhoseProbeReadsWithKeysRenewedMeanwhileIsSentAgain() {
    // The HEAD's rejection comes back after K1's stated end: the probe's own signing renews
    // the keys first, so the probe reads fine with K2. That says nothing of K1; the HEAD goes again.
    S3Client s3 = seededClient(6);
    dead.put("K1", "ExpiredToken");
    advanceOnRejectedHead = 10_500;
    assertEquals(5L, s3.headObject(b -> b.bucket("warehouse").key("db/t/data/0.parquet")).contentLength());
    assertEquals("K2", slot.current.accessKeyId());
    assertTrue(seen.contains("GET K2 /warehouse/db/t/data/0.parquet"), seen.toString()); // the probe, with K2
    assertTrue(seen.contains("HEAD K2 /warehouse/db/t/data/0.parquet"), seen.toString()); // sent again
  }

  @Test
  void testAnAsyncHeadWhoseProbeReadsWithKeysRenewedMeanwhileIsSentAgain() throws Exception {
    // The same case on the S3AsyncClient (the analytics accelerator's): a client that "signs" each
    // call with the keys it resolves at that moment, and rejects K1 as S3 would.
    entry = driverEntry(policy(6));
    slot = entry.seed("", firstKeys(clock.nowMs() + 10_000));
    TableCredentialsProvider signer = new TableCredentialsProvider(entry, slot);
    List<String> calls = new CopyOnWriteArrayList<>();
    S3AsyncClient real = (S3AsyncClient) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {S3AsyncClient.class}, (proxy, method, args) -> {
          String key = signer.resolveCredentials().accessKeyId();
          calls.add(method.getName() + " " + key);
          boolean rejected = "K1".equals(key);
          if (method.getName().equals("headObject")) {
            if (!rejected) {
              return CompletableFuture.completedFuture(HeadObjectResponse.builder().contentLength(5L).build());
            }
            fake.advance(10_500); // the rejection comes back after K1's end, which the schedule marked due
            slot.current.due = true;
            return CompletableFuture.failedFuture(S3Exception.builder().statusCode(403).build()); // no body, no code
          }
          if (method.getName().equals("getObject")) {
            return rejected
                ? CompletableFuture.failedFuture(S3Exception.builder().statusCode(403)
                    .awsErrorDetails(AwsErrorDetails.builder().errorCode("ExpiredToken").build()).build())
                : CompletableFuture.completedFuture(ResponseBytes.fromByteArray(GetObjectResponse.builder().build(),
                    "h".getBytes(StandardCharsets.UTF_8)));
          }
          throw new UnsupportedOperationException(method.getName());
        });
    S3AsyncClient s3 = AsyncRejectionRetries.wrap(real, new TableCredentialsProvider(entry, slot));
    HeadObjectRequest head = HeadObjectRequest.builder().bucket("warehouse").key("db/t/data/0.parquet").build();
    assertEquals(5L, s3.headObject(head).get(10, TimeUnit.SECONDS).contentLength());
    assertEquals(List.of("headObject K1", "getObject K2", "headObject K2"), calls);
  }

  @Test
  void testAScopeRejectionIsNeverRetried() {
    S3Client s3 = seededClient(6);
    S3Exception get = assertThrows(S3Exception.class, () -> get(s3, "other/x.parquet"));
    assertEquals("AccessDenied", get.awsErrorDetails().errorCode());
    S3Exception head = assertThrows(S3Exception.class, () -> s3.headObject(b -> b.bucket("warehouse").key("other/x")));
    assertEquals(403, head.statusCode());
    assertEquals(0, fetches.get(), "a scope error refreshed the keys");
    assertEquals(1, seen.stream().filter(s -> s.startsWith("GET K1 /warehouse/other/x.parquet")).count());
  }

  @Test
  void testKeysRejectedRightAfterAReactiveRefreshEndInOneLine() {
    S3Client s3 = seededClient(6);
    dead.put("K1", "ExpiredToken");
    deadCodeForNewKeys = "ExpiredToken";
    CredentialsRejectedException e =
        assertThrows(CredentialsRejectedException.class, () -> get(s3, "db/t/data/0.parquet"));
    String message = e.getMessage();
    assertFalse(message.contains("\n"), message);
    assertTrue(message.startsWith("S3 rejected the storage credentials of table lake.db.t again 0 ms after a refresh"
        + " (ExpiredToken)"), message);
    assertTrue(message.contains("stated lifetime 10000 ms, observed 0 ms"), message);
    assertTrue(message.endsWith("catalog-ext.refresh.max-clock-skew-ms") && message.length() < 300, message);
    assertFalse(message.contains("K2") || message.contains("S,"), message);
    assertEquals(1, fetches.get(), "one refresh, then the error");
  }

  @Test
  void testACallWhoseLastSendIsRejectedEndsInOneLineNotInTheStoresRefusal() {
    // Each new key outlives the one before it and a learnable lifetime (a second), so every rejection
    // is refreshed again (credential-rules.json `refreshing-cannot-help`); the call's last send
    // (`sends-per-call`) is rejected too: the caller's one line, never S3's raw 403.
    S3Client s3 = seededClient(6);
    dead.put("K1", "ExpiredToken");
    deadCodeForNewKeys = "ExpiredToken";
    agingStepMs = 1000;
    CredentialsRejectedException e = assertThrows(CredentialsRejectedException.class, () -> get(s3, "a"));
    assertTrue(e.getMessage().startsWith("S3 rejected the storage credentials of table lake.db.t again"), e.getMessage());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    assertEquals(RejectionRetries.MAX_SENDS, seen.stream().filter(r -> r.startsWith("GET ")).count(), seen.toString());
    // New keys for each rejected send but the last: a reactive refresh, or the schedule's (keys rejected
    // a second or more after their fetch teach a lifetime, which renews the next ones at once).
    assertTrue(fetches.get() >= RejectionRetries.MAX_SENDS - 1, "catalog requests: " + fetches.get());
  }

  @Test
  void testTheRateLimitEndsInOneLineNamingTheKnob() {
    S3Client s3 = seededClient(1);
    dead.put("K1", "TokenRefreshRequired");
    assertEquals("hello", get(s3, "a"));
    dead.put("K2", "InvalidToken"); // accepted once, then dies: a second wave in the same minute
    CredentialsRejectedException e = assertThrows(CredentialsRejectedException.class, () -> get(s3, "b"));
    assertTrue(e.getMessage().contains("catalog-ext.refresh.reactive-max-per-minute (now 1)"), e.getMessage());
    assertEquals(1, fetches.get());
  }

  @Test
  void testReactiveRefreshOffEndsARejectionInOneLineNamingTheKnob() {
    // credential-rules.json `reactive-off`: the wave's event, then the caller's error, as in PyIceberg.
    S3Client s3 = seededClient(0);
    dead.put("K1", "ExpiredToken");
    CredentialsRejectedException e = assertThrows(CredentialsRejectedException.class, () -> get(s3, "a"));
    assertTrue(e.getMessage().contains("(ExpiredToken) and catalog-ext.refresh.reactive-max-per-minute is 0"), e.getMessage());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    assertEquals(0, fetches.get());
  }

  @Test
  void testExecutorsReportTheRejectedKeyAndTheDriverRefreshesOncePerWave() throws Exception {
    clock = System::currentTimeMillis; // the driver refreshes on a thread of its own, in real time
    TableEntry driver = driverEntry(policy(6));
    driver.seed("", firstKeys(clock.nowMs() + 10_000));
    driver.seed("s3://warehouse/db/t", firstKeys(clock.nowMs() + 10_000)); // the same keys, as storage-credentials
    ExecutorAnswers answers = new ExecutorAnswers(handle -> driver, (handle, named) -> null); // the plugin's
    DriverChannel asker = message -> answers.answerBytes(PluginMessages.Request.decode(message));
    List<S3Client> executors = new ArrayList<>();
    for (int i = 0; i < 4; i++) { // four executor JVMs, each with its own entry
      TableEntry e = new TableEntry("h", driver.context, policy(6), new DriverPluginSource(asker, clock, 5000), clock);
      executors.add(client(e, e.seed("", firstKeys(clock.nowMs() + 10_000))));
    }
    driver.executorReplyBytes(); // an earlier ask: the fresh reply with K1 is encoded and kept
    dead.put("K1", "InvalidAccessKeyId");
    assertConcurrentGetsRead(16, n -> get(executors.get(n % 4), "db/t/data/x.parquet"));
    assertEquals(1, driver.describe().get("rejection_count").asLong(), "rejection waves counted");
    // One catalog request for the wave. On a loaded machine K1 may be a second old when rejected: its
    // age is then learned as the catalog's lifetime (learn-lifetime), and K2, scheduled by it, is
    // due at once, so the schedule asks again. Counted by that cause, not allowed without it.
    long learned = driver.clocks().learnedLifetimeMs();
    int extra = fetches.get() - 1;
    assertTrue(extra == 0 || (learned >= CredentialRules.LEARN_MIN_AGE_MS && extra <= 2),
        "catalog requests for one wave seen by four executors: " + fetches.get() + " (learned lifetime " + learned + " ms)");
    Set<String> keys = seen.stream().map(s -> s.split(" ")[1]).collect(java.util.stream.Collectors.toSet());
    assertTrue(keys.containsAll(Set.of("K1", "K2")) && keys.size() <= fetches.get() + 1, keys.toString());
  }

  @Test
  void testServerClockAheadPastTheBoundSchedulesExpiriesByIt() {
    long now = fake.nowMs();
    TableEntry entry = driverEntry(policy(6));
    ServerClocks clocks = entry.clocks(); // its catalog session's
    clocks.observeDate("s3", now + 2_000, now, 5_000); // within the bound: ignored
    assertEquals(0, clocks.skewMs());
    clocks.observeDate("s3", now + 60_000, now, 5_000); // S3's clock is a minute ahead
    assertEquals(60_000, clocks.skewMs());
    // The catalog states expiry on the servers' clock: 100 s from their now is 40 s from ours.
    CredentialSlot slot = entry.seed("", firstKeys(now + 60_000 + 100_000));
    assertEquals(now + 100_000, slot.current.expiresAtMs);
    assertEquals(100_000, slot.current.statedLifetimeMs());
    clocks.observeDate("s3", now, now, 5_000); // the clocks agree again
    assertEquals(0, clocks.skewMs());
  }
}
