package io.catalogext.shim.refresh;

import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.session.CatalogSession;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A shared driver (Spark Connect) with two sessions whose catalogs are both called {@code lake}:
 * what one session's tables teach about the catalog's keys (a lifetime shorter than stated, a
 * server clock far from ours) shapes that session's renewals only. The other session may talk to
 * another server under the same name, or be the user who never saw the fault.
 */
public class SessionLearningTest {
  private static final long MINUTE = 60_000L;

  private final FakeClock clock = new FakeClock();
  private String name;
  private CatalogSession alice;
  private CatalogSession bob;

  /** Alice's and Bob's sessions of catalog {@code name}, a name no other test of this JVM uses. */
  private void sessionsOf(String name) {
    this.name = name;
    alice = new CatalogSession(name, Map.of());
    bob = new CatalogSession(name, Map.of());
  }

  private TableContext table(String table) {
    return new TableContext(name, List.of("db"), table, "s3://b/db/" + table, null, false, null, null);
  }

  private static Map<String, String> keys(String accessKey, long expiresAtMs) {
    return Map.of(ShimKeys.ACCESS_KEY_ID, accessKey, ShimKeys.SECRET_ACCESS_KEY, "secret-of-" + accessKey,
        ShimKeys.EXPIRES_AT_MS, String.valueOf(expiresAtMs));
  }

  private static CredentialRegistry driver(Clock clock, CatalogSession... sessions) {
    CredentialRegistry registry = new CredentialRegistry(clock);
    registry.markDriver();
    for (CatalogSession session : sessions) {
      registry.catalogs().register(session);
    }
    return registry;
  }

  @Test
  void aLifetimeLearnedInOneSessionDoesNotShortenAnotherSessionsRenewals() {
    sessionsOf("lake-lifetime");
    CredentialRegistry registry = driver(clock, alice, bob);
    TableEntry alices = registry.lookup(registry.registerDriverTable(table("t"), alice, keys("A1", clock.nowMs() + 10 * MINUTE),
        List.of()));
    clock.advance(3_000);
    // S3 rejected Alice's keys 3 s after their fetch (stated: 10 min), as an executor reports it.
    assertNull(alices.onExecutorRejection("A1", "ExpiredToken", null));

    long now = clock.nowMs();
    TableEntry alicesNext = registry.lookup(registry.registerDriverTable(table("u"), alice, keys("A2", now + 10 * MINUTE),
        List.of()));
    assertEquals(now + 3_000, alicesNext.snapshot("").expiresAtMs, "Alice's session renews by what it learned");

    TableEntry bobs = registry.lookup(registry.registerDriverTable(table("t"), bob, keys("B1", now + 10 * MINUTE),
        List.of()));
    assertEquals(now + 10 * MINUTE, bobs.snapshot("").expiresAtMs,
        "Bob's session of the same catalog name renews by the stated lifetime");
  }

  @Test
  void aServerClockSkewSeenInOneSessionDoesNotShiftAnotherSessionsExpiries() throws Exception {
    sessionsOf("lake-skew");
    long hour = 60 * MINUTE;
    // S3 as Alice's session reaches it: its clock is an hour ahead of this machine's.
    ServerSocket s3 = aheadS3(hour);
    Clock real = System::currentTimeMillis; // S3's Date header is compared with the real time
    CredentialRegistry registry = driver(real, alice, bob);
    try {
      TableEntry alices = registry.lookup(registry.registerDriverTable(table("t"), alice,
          keys("A1", real.nowMs() + 3 * hour), List.of()));
      TableCredentialsProvider provider = new TableCredentialsProvider(alices, alices.slots().get(""));
      try (S3Client client = S3Client.builder()
          .endpointOverride(URI.create("http://127.0.0.1:" + s3.getLocalPort()))
          .region(Region.US_EAST_1)
          .forcePathStyle(true)
          .credentialsProvider(provider)
          .overrideConfiguration(c -> c.addExecutionInterceptor(RejectionRetries.dateWatch(provider)))
          .build()) {
        assertEquals("hello",
            client.getObject(b -> b.bucket("b").key("db/t/data/0.parquet"), ResponseTransformer.toBytes()).asUtf8String());
      }

      // Both catalogs state expiries 2 h ahead on their servers' clocks.
      long stated = real.nowMs() + 2 * hour;
      TableEntry alicesNext = registry.lookup(registry.registerDriverTable(table("u"), alice, keys("A2", stated),
          List.of()));
      long shift = stated - alicesNext.snapshot("").expiresAtMs;
      assertTrue(Math.abs(shift - hour) <= 2_000, "Alice's session reads expiries on its S3's clock: shifted " + shift);

      TableEntry bobs = registry.lookup(registry.registerDriverTable(table("t"), bob, keys("B1", stated), List.of()));
      assertEquals(stated, bobs.snapshot("").expiresAtMs, "Bob's session of the same name reads them on this clock");
    } finally {
      s3.close();
    }
  }

  /**
   * A loopback S3 whose Date header is {@code aheadMs} ahead of this clock, answering every request
   * "hello" and closing. A raw socket because the JDK's HttpServer always writes its own Date.
   */
  private static ServerSocket aheadS3(long aheadMs) throws IOException {
    ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread thread = new Thread(() -> {
      while (!server.isClosed()) {
        try (Socket socket = server.accept()) {
          BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
          for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
            // the request line and headers; a GET has no body
          }
          String date = DateTimeFormatter.RFC_1123_DATE_TIME.format(
              Instant.ofEpochMilli(System.currentTimeMillis() + aheadMs).atOffset(ZoneOffset.UTC));
          socket.getOutputStream().write(("HTTP/1.1 200 OK\r\nDate: " + date + "\r\nContent-Length: 5\r\n"
              + "Connection: close\r\n\r\nhello").getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
          // closed by the test, or a client gone: nothing to answer
        }
      }
    }, "test-skewed-s3");
    thread.setDaemon(true);
    thread.start();
    return server;
  }
}
