package io.catalogext.shim.events;

import io.catalogext.shim.util.Json;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The JVM's structured events (stage-create and commit from the catalog's HTTP client; refreshes,
 * rejections and clocks from the refresh: every part calls {@link #emit}). Two bounded destinations, neither of which ever blocks the caller:
 *
 * <ul>
 *   <li>a ring of the last {@value #RING} events that Python drains ({@link #drainAfter}) into its
 *       own sinks;
 *   <li>a JSON-lines file, by configuration alone: catalog property {@value #JSONL_PATH} (and
 *       {@value #MAX_BYTES}, default 64 MiB), appended to by one daemon thread from a queue of
 *       {@value #QUEUE}. A full queue or a full file drops the event and counts it.
 * </ul>
 *
 * Fields are table names, ids, outcomes, durations and error classes: never secrets.
 */
public final class EventLog {
  public static final String JSONL_PATH = "catalog-ext.events.jsonl-path";
  /** The field naming the catalog session (its random id) an event belongs to, where it has one. */
  public static final String CATALOG_SESSION = "catalog_session";
  public static final String MAX_BYTES = "catalog-ext.events.jsonl-max-bytes";
  public static final long DEFAULT_MAX_BYTES = 64L << 20;
  static final int RING = 2048;
  static final int QUEUE = 4096;

  // Process-wide: one seq-ordered ring Python drains and one JSON-lines file per JVM, whichever catalog emits.
  private static final EventLog INSTANCE = new EventLog(System::currentTimeMillis);

  private final LongSupplier clockMs;
  private final AtomicLong seq = new AtomicLong();
  private final ArrayDeque<ObjectNode> ring = new ArrayDeque<>();
  final AtomicLong dropped = new AtomicLong();
  private final AtomicLong written = new AtomicLong();
  volatile FileWriter file;

  EventLog(LongSupplier clockMs) {
    this.clockMs = clockMs;
  }

  static EventLog get() {
    return INSTANCE;
  }

  /** Fields for {@link #emit}: {@code EventLog.fields().put("table", name)...}. */
  public static ObjectNode fields() {
    return Json.object();
  }

  /** Records one event; never throws, never waits. */
  public static void emit(String type, ObjectNode fields) {
    ShimMetrics.get().onEvent(type, fields); // refresh and commit counters for Spark's metrics system
    try {
      if (Checked.ON) {
        Checked.check(type, fields);
      }
    } catch (Throwable t) { // a test switch (its class fails to load without the schema): never the event's path
      // nothing to report to: the test that reads the violations sees none and its own checks decide
    }
    INSTANCE.record(type, fields);
  }

  /**
   * Tests: what the events emitted since the last call did wrong against the schema, one line each
   * (empty unless system property {@value EventSchemas#CHECK_PROPERTY} is true); clears them.
   */
  public static List<String> takeSchemaViolations() {
    synchronized (Checked.VIOLATIONS) {
      List<String> taken = new ArrayList<>(Checked.VIOLATIONS);
      Checked.VIOLATIONS.clear();
      return taken;
    }
  }

  /** The schema check, loaded only where the property turns it on (the test suites). */
  private static final class Checked {
    static final boolean ON = Boolean.getBoolean(EventSchemas.CHECK_PROPERTY);
    static final List<String> VIOLATIONS = new ArrayList<>();
    private static final EventSchemas SCHEMAS = ON ? EventSchemas.load() : null;

    private static int appended;

    static void check(String type, ObjectNode fields) {
      List<String> found = SCHEMAS.violations(type, fields == null ? Json.object() : fields);
      if (found.isEmpty()) {
        return;
      }
      String file = System.getProperty(EventSchemas.VIOLATIONS_FILE_PROPERTY);
      synchronized (VIOLATIONS) {
        for (String v : found) {
          if (VIOLATIONS.size() < 100) { // bounded: a test reads them after each case
            VIOLATIONS.add(v);
          }
          if (file != null && appended < 100) { // bounded too: a JVM in a subprocess may run long
            appended++;
            append(Paths.get(file), v);
          }
        }
      }
    }

    private static void append(Path file, String line) {
      try {
        Files.write(file, (line.replace('\n', ' ') + "\n").getBytes(StandardCharsets.UTF_8),
            StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      } catch (IOException | RuntimeException e) {
        // the in-memory list still holds it; a test that reads only the file sees no line and decides
      }
    }
  }

  /** Python: events after {@code afterSeq}, plus how many it can no longer see (the ring moved on). */
  public static String drainAfter(long afterSeq) {
    return INSTANCE.after(afterSeq);
  }

  /** Python: written/dropped counts and the file, if any. */
  public static String stats() {
    ObjectNode node = Json.object();
    FileWriter f = INSTANCE.file;
    node.put("last_seq", INSTANCE.seq.get());
    node.put("written", INSTANCE.written.get());
    node.put("dropped", INSTANCE.dropped.get());
    node.put("jsonl_path", f == null ? null : f.path.toString());
    return Json.write(node);
  }

  /** Catalog initialization: opens the JSON-lines file named by {@value #JSONL_PATH}, once per JVM. */
  public static void configure(Map<String, String> props) {
    INSTANCE.configureFile(props);
  }

  void configureFile(Map<String, String> props) {
    String path = props.get(JSONL_PATH);
    if (path == null || path.trim().isEmpty()) {
      return;
    }
    long maxBytes = DEFAULT_MAX_BYTES;
    String max = props.get(MAX_BYTES);
    if (max != null) {
      try {
        maxBytes = Long.parseLong(max.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(MAX_BYTES + " must be a number of bytes, got '" + max + "'");
      }
    }
    synchronized (this) {
      if (file != null) {
        return; // one file per JVM: the first catalog that names one wins
      }
      file = new FileWriter(Paths.get(path.trim()), maxBytes, this);
    }
  }

  void record(String type, ObjectNode fields) {
    try {
      ObjectNode event = Json.object();
      event.put("type", type);
      event.put("source", "jvm");
      if (fields != null) {
        event.setAll(fields);
      }
      // Number, ring and queue in one step: otherwise two threads can enter the ring or the file
      // out of seq order, and a drain "after seq N" would skip an event that lands late below N.
      synchronized (ring) {
        event.put("time", clockMs.getAsLong() / 1000.0);
        event.put("seq", seq.incrementAndGet());
        if (ring.size() >= RING) {
          ring.removeFirst();
        }
        ring.addLast(event);
        FileWriter f = file;
        if (f != null && !f.queue.offer(Json.write(event))) {
          dropped.incrementAndGet(); // the writer is behind: the job comes first (offer never waits)
        }
      }
    } catch (RuntimeException e) {
      dropped.incrementAndGet(); // an event must never fail the operation it describes
    }
  }

  String after(long afterSeq) {
    ArrayNode events = Json.MAPPER.createArrayNode();
    long oldest;
    synchronized (ring) {
      oldest = ring.isEmpty() ? seq.get() + 1 : ring.peekFirst().get("seq").asLong();
      for (ObjectNode e : ring) {
        if (e.get("seq").asLong() > afterSeq) {
          events.add(e);
        }
      }
    }
    ObjectNode node = Json.object();
    node.set("events", events);
    node.put("lost", Math.max(0, oldest - afterSeq - 1));
    return Json.write(node);
  }

  /** One daemon thread appending queued lines; stops writing (and counts drops) at maxBytes. */
  static final class FileWriter implements Runnable {
    final Path path;
    final long maxBytes;
    final BlockingQueue<String> queue = new ArrayBlockingQueue<>(QUEUE);
    private final EventLog log;
    private final Thread thread;

    FileWriter(Path path, long maxBytes, EventLog log) {
      this.path = path;
      this.maxBytes = maxBytes;
      this.log = log;
      this.thread = new Thread(this, "catalog-ext-events");
      thread.setDaemon(true);
      thread.start();
      // Write what is queued when the JVM exits (bounded: the exit must not hang on a slow disk).
      Runtime.getRuntime().addShutdownHook(new Thread(() -> flush(2000), "catalog-ext-events-flush"));
    }

    @Override
    public void run() {
      while (true) {
        try {
          String line = queue.poll(1, TimeUnit.SECONDS);
          if (line != null) {
            append(line);
          }
        } catch (InterruptedException e) {
          return;
        }
      }
    }

    /** Waits up to timeoutMs for the queue to empty (tests, shutdown). */
    boolean flush(long timeoutMs) {
      long deadline = System.currentTimeMillis() + timeoutMs;
      while (!queue.isEmpty() && System.currentTimeMillis() < deadline) {
        try {
          Thread.sleep(10); // BlockingQueue has no "wait until empty"
        } catch (InterruptedException e) {
          return false;
        }
      }
      synchronized (this) { // the line taken last may still be being appended
        return queue.isEmpty();
      }
    }

    private synchronized void append(String line) {
      byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
      try {
        long size = Files.exists(path) ? Files.size(path) : 0;
        if (size + bytes.length > maxBytes) {
          log.dropped.incrementAndGet();
          return;
        }
        if (path.getParent() != null) {
          Files.createDirectories(path.getParent());
        }
        Files.write(path, bytes, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        log.written.incrementAndGet();
      } catch (IOException | RuntimeException e) {
        log.dropped.incrementAndGet();
      }
    }
  }

  /** Tests: wait until the file writer is idle. */
  public static boolean flush(long timeoutMs) {
    FileWriter f = INSTANCE.file;
    return f == null || f.flush(timeoutMs);
  }
}
