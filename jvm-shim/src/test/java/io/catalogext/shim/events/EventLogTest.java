package io.catalogext.shim.events;

import io.catalogext.shim.http.EventingRESTClient;
import io.catalogext.shim.util.Json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/** The JVM event log: ordered drains, lost events counted, a bounded JSON-lines file. */
public class EventLogTest {
  private long now = 1_000_000L;
  private final EventLog log = new EventLog(() -> now);

  @Test
  void testDrainReturnsEventsAfterASeqInOrder() {
    for (int i = 0; i < 5; i++) {
      now += 1000;
      log.record("test.step", EventLog.fields().put("i", i));
    }
    JsonNode drained = Json.read(log.after(2));
    assertEquals(3, drained.get("events").size(), "events after seq 2");
    assertEquals(3L, drained.get("events").get(0).get("seq").asLong(), "first seq");
    assertEquals(2, drained.get("events").get(0).get("i").asInt(), "fields kept");
    assertEquals("jvm", drained.get("events").get(0).get("source").asText(), "source");
    assertEquals(1003.0, drained.get("events").get(0).get("time").asDouble(), "time from the clock, in seconds");
    assertEquals(0L, drained.get("lost").asLong(), "nothing lost");
  }

  @Test
  void testAReaderThatFellBehindTheRingIsToldHowManyItLost() {
    for (int i = 0; i < EventLog.RING + 10; i++) {
      log.record("test.flood", null);
    }
    JsonNode drained = Json.read(log.after(0));
    assertEquals(EventLog.RING, drained.get("events").size(), "the ring is bounded");
    assertEquals(10L, drained.get("lost").asLong(), "lost events counted");
  }

  @Test
  void testTheFileIsWrittenByConfigurationAndStopsAtItsSizeBound() throws Exception {
    Path dir = Files.createTempDirectory("eventlog");
    Path file = dir.resolve("sub/events.jsonl");
    log.configureFile(Map.of(EventLog.JSONL_PATH, file.toString(), EventLog.MAX_BYTES, "400"));
    for (int i = 0; i < 20; i++) {
      log.record("test.file", EventLog.fields().put("table", "lake.db.t").put("i", i));
    }
    EventLog.FileWriter writer = log.file;
    assertTrue(writer.flush(5000), "writer drained its queue");
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    assertTrue(!lines.isEmpty() && lines.size() < 20, "some lines, bounded by size: " + lines.size());
    assertTrue(Files.size(file) <= 400, "file within its bound");
    assertEquals(0, Json.read(lines.get(0)).get("i").asInt(), "first line is the first event");
    assertEquals(20L - lines.size(), log.dropped.get(), "every line over the bound counted as dropped");
  }

  @Test
  void testConcurrentEmittersKeepRingAndFileInSeqOrder() throws Exception {
    Path file = Files.createTempDirectory("eventlog").resolve("events.jsonl");
    log.configureFile(Map.of(EventLog.JSONL_PATH, file.toString()));
    int threads = 4;
    int each = 400; // 1,600 events: under the ring and the queue bounds, so nothing is dropped
    Thread[] emitters = new Thread[threads];
    java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
    for (int t = 0; t < threads; t++) {
      emitters[t] = new Thread(() -> {
        try {
          start.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < each; i++) {
          log.record("test.race", EventLog.fields().put("pad", "x".repeat(200)));
        }
      });
      emitters[t].start();
    }
    start.countDown();
    for (Thread t : emitters) {
      t.join();
    }
    JsonNode ring = Json.read(log.after(0)).get("events");
    assertEquals(threads * each, ring.size(), "every event in the ring");
    for (int i = 1; i < ring.size(); i++) {
      assertTrue(ring.get(i - 1).get("seq").asLong() < ring.get(i).get("seq").asLong(), "ring in seq order at " + i);
    }
    assertTrue(log.file.flush(5000), "writer drained its queue");
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    assertEquals(threads * each, lines.size(), "every event in the file");
    for (int i = 1; i < lines.size(); i++) {
      assertTrue(Json.read(lines.get(i - 1)).get("seq").asLong() < Json.read(lines.get(i)).get("seq").asLong(),
          "file in seq order at line " + i);
    }
  }

  @Test
  void testABadSizeIsOneClearError() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> log.configureFile(Map.of(EventLog.JSONL_PATH, "/tmp/x.jsonl", EventLog.MAX_BYTES, "lots")));
    assertTrue(e.getMessage().contains(EventLog.MAX_BYTES), e.getMessage());
  }

  @Test
  void testCommitOutcomesAsTheCallerSeesThem() {
    assertEquals("unknown", EventingRESTClient.outcome(new CommitStateUnknownException(new RuntimeException("x"))), "unknown");
    assertEquals("rejected", EventingRESTClient.outcome(new CommitFailedException("conflict")), "rejected");
    assertEquals("failed", EventingRESTClient.outcome(new IllegalStateException("bug")), "failed");
  }
}
