package io.catalogext.shim;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.refresh.CredentialRegistry;
import io.catalogext.shim.refresh.CredentialSnapshot;
import io.catalogext.shim.refresh.DriverChannel;
import io.catalogext.shim.refresh.ExecutorAsks;
import io.catalogext.shim.refresh.PluginMessages;
import io.catalogext.shim.refresh.PythonCredentialBridge;
import io.catalogext.shim.refresh.TableContext;
import io.catalogext.shim.refresh.TableEntry;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.util.DaemonThreads;
import io.catalogext.shim.util.Json;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;

/**
 * Issue 19, "Scale, measured": the driver plugin under many executors and tables.
 *
 * <p>{@link #main} (part 1, one JVM): the driver's registry holds N table entries refreshed by a
 * counting fake source with a short credential lifetime on the real clock (so every table renews
 * several times), and T threads ask {@link CatalogExtPlugin.Driver#receive} for random tables as
 * executors do. Prints asks/s, p50/p99 per ask, heap per table entry, and catalog requests per
 * table per renewal, each beside its target.
 *
 * <p>{@link #seedDriver}, {@link #askDriver} and {@link #driverStats} are part 2's hooks, called
 * through Spark (py4j on the driver, {@code reflect()} in executor tasks) by
 * benchmarks/bench_plugin_scale.py: the same asks over Spark's real plugin RPC.
 */
public final class PluginScaleBench {
  static final String CATALOG = "bench";
  /** The size of an AWS STS session token: what a real entry holds per snapshot. */
  static final int TOKEN_CHARS = 1_000;

  private PluginScaleBench() {}

  public static void main(String[] args) throws Exception {
    int threads = args.length > 0 ? Integer.parseInt(args[0]) : 256;
    int tables = args.length > 1 ? Integer.parseInt(args[1]) : 1_000;
    long seconds = args.length > 2 ? Long.parseLong(args[2]) : 20;
    long lifetimeMs = args.length > 3 ? Long.parseLong(args[3]) : 5_000;
    // Spark's driver answers plugin asks on its RPC dispatcher threads, max(2, cores) of them
    // (spark.rpc.netty.dispatcher.numThreads); 0 = every asking thread calls receive() itself.
    int dispatchers =
        args.length > 4 ? Integer.parseInt(args[4]) : Math.max(2, Runtime.getRuntime().availableProcessors());

    System.out.printf("catalog-ext driver plugin at scale: %d asking threads (executors), %d tables,"
            + " credential lifetime %d ms (renewed at 80%%), %d s measured, %s%n", threads, tables, lifetimeMs, seconds,
        dispatchers > 0 ? "receive() on " + dispatchers + " dispatcher threads as in Spark's driver" : "receive() called by each asking thread");
    if (!(args.length > 5 && "no-memory".equals(args[5]))) {
      memoryPerEntry(tables);
    }
    throughput(threads, tables, seconds, lifetimeMs, dispatchers);
    System.out.printf("machine: %d cores, load average %.1f at the end (others' work competes for the same cores)%n",
        Runtime.getRuntime().availableProcessors(), ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
  }

  // ---- the fake catalog: counts its calls and which due moment each one served ----

  /** Refresher calls, and the (handle, refresh-at) due moments they served. */
  static final class CountingSource implements PythonCredentialBridge {
    final long lifetimeMs;
    final LongAdder calls = new LongAdder();
    final LongAdder premature = new LongAdder();
    final LongAdder duplicates = new LongAdder();
    final AtomicLong mostEarlyMs = new AtomicLong();
    /** handle -> {due moment (refresh_at_ms of the keys replaced), time of the call} per call. */
    final Map<String, List<long[]>> served = new ConcurrentHashMap<>();

    CountingSource(long lifetimeMs) {
      this.lifetimeMs = lifetimeMs;
    }

    @Override
    public String fetchCredentials(String requestJson) {
      long now = System.currentTimeMillis();
      calls.increment();
      JsonNode request = Json.read(requestJson);
      long dueAt = request.path("prefixes").path(0).path("refresh_at_ms").asLong(-1);
      List<long[]> moments = served.computeIfAbsent(request.path("handle").asText(), h -> new ArrayList<>());
      synchronized (moments) {
        if (moments.stream().anyMatch(m -> m[0] == dueAt)) {
          duplicates.increment(); // a second request for keys already replaced once
        }
        moments.add(new long[] {dueAt, now});
      }
      if (now < dueAt) { // keys that were not due yet: a request no renewal needed
        premature.increment();
        mostEarlyMs.accumulateAndGet(dueAt - now, Math::max);
      }
      return "{\"strategy\":\"user-source:bench\",\"config\":" + Json.write(Json.fromMap(vended(now, now + lifetimeMs))) + "}";
    }
  }

  /** What a REST catalog vends: STS-sized keys and their expiry (the fetch time for seeding). */
  static Map<String, String> vended(long fetchedAtMs, long expiresAtMs) {
    char[] token = new char[TOKEN_CHARS];
    Arrays.fill(token, 'T');
    return Map.of(
        ShimKeys.ACCESS_KEY_ID, "ASIA" + CredentialRegistry.newId(12).substring(0, 16).toUpperCase(java.util.Locale.ROOT),
        ShimKeys.SECRET_ACCESS_KEY, CredentialRegistry.newId(30),
        ShimKeys.SESSION_TOKEN, new String(token),
        ShimKeys.EXPIRES_AT_MS, String.valueOf(expiresAtMs),
        ShimKeys.FETCHED_AT_MS, String.valueOf(fetchedAtMs));
  }

  static TableContext context(int i) {
    return new TableContext(CATALOG, List.of("db"), "t" + i, "s3://bench-bucket/warehouse/db/t" + i, null, false, null, null);
  }

  /**
   * Registers {@code tables} committed tables in {@code registry} as catalog loads would, their
   * keys fetched at staggered moments of one lifetime (tables are loaded at different times), so
   * renewals spread out instead of all falling due at once. Returns the handles.
   */
  static String[] register(CredentialRegistry registry, CatalogSession state, int tables, long lifetimeMs) {
    String[] handles = new String[tables];
    long now = System.currentTimeMillis();
    long renewEvery = (long) (lifetimeMs * 0.8);
    for (int i = 0; i < tables; i++) {
      long fetchedAt = now - renewEvery + 500 + (renewEvery * i) / tables; // first due 0.5 s .. one period from now
      handles[i] = registry.registerDriverTable(context(i), state, vended(fetchedAt, fetchedAt + lifetimeMs), List.of());
    }
    return handles;
  }

  static CatalogSession benchCatalog(CredentialRegistry registry, CountingSource source) {
    CatalogSession state = new CatalogSession(CATALOG, Map.of());
    registry.catalogs().register(state);
    registry.sources().enableCustomSource(CATALOG); // refreshed from the bridge: the counting fake catalog
    registry.sources().registerBridge(source);
    // Renew when 20% of the lifetime remains; look every second, as the catalog properties allow.
    registry.sources().setRefreshPolicy(CATALOG, new RefreshPolicy(0, 0.2, 1_000, 1_000, 60_000, 30_000, 3_600_000));  // assumed lifetime: the keys carry an expiry
    return state;
  }

  // ---- memory ----

  private static long usedHeapAfterGc() throws InterruptedException {
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) { // until a full collection has nothing more to free
      System.gc();
      Thread.sleep(50);
      used = Math.min(used, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }
    return used;
  }

  private static void memoryPerEntry(int tables) throws Exception {
    CountingSource source = new CountingSource(3_600_000L);
    CredentialRegistry warm = new CredentialRegistry(System::currentTimeMillis);
    register(warm, benchCatalog(warm, source), 64, 3_600_000L); // class loading and first-use caches out of the way
    for (int n : new int[] {tables, CredentialRegistry.MAX_ENTRIES}) {
      CredentialRegistry registry = new CredentialRegistry(System::currentTimeMillis); // no ticker
      CatalogSession state = benchCatalog(registry, source);
      long before = usedHeapAfterGc();
      long started = System.nanoTime();
      String[] handles = register(registry, state, n, 3_600_000L);
      long registerMs = (System.nanoTime() - started) / 1_000_000;
      long after = usedHeapAfterGc();
      double perEntry = (after - before) / (double) n;
      System.out.printf("driver heap per table entry (%,d entries): %,.0f bytes   target <= 4096 bytes   %s"
              + "   [registering them took %,d ms]%n",
          n, perEntry, perEntry <= 4096 ? "MET" : "MISSED", registerMs);
      if (registry.size() != n || handles.length != n) { // also keeps the registry reachable until here
        throw new IllegalStateException("registry holds " + registry.size() + " entries, expected " + n);
      }
    }
  }

  // ---- throughput, latency, catalog requests ----

  /** One asking thread's results in one measured phase: asks, replies by kind, a uniform latency sample. */
  static final class Stats {
    static final int SAMPLE = 4_096;
    final long[] sample = new long[SAMPLE];
    /** receive() alone, on the thread that ran it, for the same asks as {@link #sample}. */
    final long[] service = new long[SAMPLE];
    long asks;
    long refreshing;
    long noKeys;
    long lateSends;

    void record(long ns, long serviceNs, byte[] reply, ThreadLocalRandom random) {
      asks++;
      long slot = asks <= SAMPLE ? asks - 1 : random.nextLong(asks); // reservoir: every ask equally likely kept
      if (slot < SAMPLE) {
        sample[(int) slot] = ns;
        service[(int) slot] = serviceNs;
      }
      if (!endsWithFreshTrue(reply)) { // the driver is refreshing: the executor asks again in 200 ms
        refreshing++;
        if (startsWith(reply, NO_KEYS)) { // and has no valid keys to hand out meanwhile
          noKeys++;
        }
      }
    }

    long[] kept(boolean serviceOnly) {
      return Arrays.copyOf(serviceOnly ? service : sample, (int) Math.min(asks, SAMPLE));
    }

    private static final byte[] FRESH = "\"fresh\":true".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    private static final byte[] NO_KEYS = "{\"configs\":{}".getBytes(java.nio.charset.StandardCharsets.UTF_8);

    private static boolean startsWith(byte[] reply, byte[] prefix) {
      return reply.length >= prefix.length && Arrays.equals(reply, 0, prefix.length, prefix, 0, prefix.length);
    }

    /** The reply's tail holds its flags (configs come first): look there only, not at the keys. */
    private static boolean endsWithFreshTrue(byte[] reply) {
      int from = Math.max(0, reply.length - 160);
      outer:
      for (int i = reply.length - FRESH.length; i >= from; i--) {
        for (int j = 0; j < FRESH.length; j++) {
          if (reply[i + j] != FRESH[j]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    }
  }

  /** What the asking threads do now; they read it before every ask. */
  static final class Phase {
    static final int WARMUP = 0;
    /** Closed loop: every thread asks again as soon as it has its answer (the most the driver serves). */
    static final int SATURATED = 1;
    static final int PACED_WARMUP = 2;
    /** Open loop: together the threads send the offered rate, each at its own even pace. */
    static final int PACED = 3;
    static final int DONE = 4;
    volatile int state = WARMUP;
  }

  /** One simulated executor: asks for random tables, as its DriverPluginSource does when a copy is due. */
  static final class Asker extends Thread {
    final Stats saturated = new Stats();
    final Stats paced = new Stats();
    private final Ask driver;
    private final byte[][] requests;
    private final CountDownLatch start;
    private final Phase phase;
    private final long intervalNs;

    Asker(int n, Ask driver, byte[][] requests, CountDownLatch start, Phase phase,
        long intervalNs) {
      super("bench-executor-" + n);
      setDaemon(true);
      this.driver = driver;
      this.requests = requests;
      this.start = start;
      this.phase = phase;
      this.intervalNs = intervalNs;
    }

    @Override
    public void run() {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      try {
        start.await();
      } catch (InterruptedException e) {
        return;
      }
      long nextNs = 0;
      long[] serviceNs = new long[1];
      int state;
      while ((state = phase.state) != Phase.DONE) {
        if (state >= Phase.PACED_WARMUP) {
          long now = System.nanoTime();
          nextNs = nextNs == 0 ? now + random.nextLong(intervalNs) : nextNs + intervalNs; // threads spread out
          if (nextNs > now) {
            java.util.concurrent.locks.LockSupport.parkNanos(nextNs - now);
          } else if (state == Phase.PACED && now - nextNs > 1_000_000) {
            paced.lateSends++; // behind its schedule by over 1 ms (its last answer was slow, or no CPU)
          }
        }
        byte[] request = requests[random.nextInt(requests.length)];
        long t0 = System.nanoTime();
        byte[] reply = driver.ask(request, serviceNs);
        long ns = System.nanoTime() - t0;
        if (state == Phase.SATURATED) {
          saturated.record(ns, serviceNs[0], reply, random);
        } else if (state == Phase.PACED) {
          paced.record(ns, serviceNs[0], reply, random);
        }
      }
    }
  }

  private static void throughput(int threads, int tables, long seconds, long lifetimeMs, int dispatchers)
      throws Exception {
    CredentialRegistry registry = CredentialRegistry.get(); // the one Driver.receive answers from
    registry.markDriver();
    CountingSource source = new CountingSource(lifetimeMs);
    CatalogSession state = benchCatalog(registry, source);
    long seededAt = System.currentTimeMillis();
    String[] handles = register(registry, state, tables, lifetimeMs);
    byte[][] requests = new byte[tables][];
    for (int i = 0; i < tables; i++) { // what DriverPluginSource sends: the handle and the identity
      requests[i] = new PluginMessages.Request(handles[i], context(i).identityJson()).encode();
    }

    CatalogExtPlugin.Driver plugin = new CatalogExtPlugin.Driver();
    java.util.concurrent.ExecutorService pool =
        dispatchers > 0
            ? java.util.concurrent.Executors.newFixedThreadPool(dispatchers, DaemonThreads.named("bench-dispatcher"))
            : null;
    Ask direct =
        (request, serviceNs) -> {
          long t0 = System.nanoTime();
          byte[] reply = (byte[]) plugin.receive(request);
          serviceNs[0] = System.nanoTime() - t0;
          return reply;
        };
    Ask driver =
        pool == null
            ? direct
            : (request, serviceNs) -> {
              try { // the asking executor waits for the answer, as on PluginContext.ask's future
                return pool.submit(() -> direct.ask(request, serviceNs)).get();
              } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException(e);
              }
            };
    Phase phase = new Phase();
    CountDownLatch start = new CountDownLatch(1);
    long intervalNs = threads * 1_000_000_000L / OFFERED_ASKS_PER_S;
    List<Asker> askers = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      Asker a = new Asker(i, driver, requests, start, phase, intervalNs);
      a.start();
      askers.add(a);
    }
    start.countDown();
    Thread.sleep(3_000); // warm-up: JIT, pools
    long gcBefore = gcMillis();
    long t0 = System.nanoTime();
    phase.state = Phase.SATURATED;
    Thread.sleep(seconds * 1_000);
    long saturatedNs = System.nanoTime() - t0;
    long gcSaturatedMs = gcMillis() - gcBefore;
    phase.state = Phase.PACED_WARMUP;
    Thread.sleep(1_000);
    gcBefore = gcMillis();
    t0 = System.nanoTime();
    phase.state = Phase.PACED;
    Thread.sleep(seconds * 1_000);
    phase.state = Phase.DONE;
    long pacedNs = System.nanoTime() - t0;
    long gcPacedMs = gcMillis() - gcBefore;
    long stoppedAt = System.currentTimeMillis();
    for (Asker a : askers) {
      a.join();
    }
    if (pool != null) {
      pool.shutdown();
    }
    Thread.sleep(1_000); // refreshes already started land

    Summary sat = Summary.of(askers, a -> a.saturated);
    Summary pac = Summary.of(askers, a -> a.paced);
    double perSecond = sat.asks / (saturatedNs / 1e9);
    System.out.printf("asks/s, saturated (each thread asks again at once): %,.0f   target >= 50,000   %s"
            + "   [%,d asks in %.1f s; p50 %s, p99 %s: %d asks queued at all times; GC %,d ms]%n",
        perSecond, perSecond >= 50_000 ? "MET" : "MISSED", sat.asks, saturatedNs / 1e9, us(sat.p50), us(sat.p99), threads,
        gcSaturatedMs);
    System.out.printf("latency per ask at %,d asks/s offered: p50 %s, p99 %s   target p99 < 2 ms   %s"
            + "   [%,d asks in %.1f s = %,.0f/s; p99.9 %s, max sampled %s; sends over 1 ms late %,d; GC %,d ms]%n",
        OFFERED_ASKS_PER_S, us(pac.p50), us(pac.p99), pac.p99 < 2_000_000 ? "MET" : "MISSED", pac.asks, pacedNs / 1e9,
        pac.asks / (pacedNs / 1e9), us(pac.p999), us(pac.max), pac.lateSends, gcPacedMs);

    System.out.printf("  of which receive() itself: saturated p50 %s, p99 %s; paced p50 %s, p99 %s"
            + " (the rest: waiting for a dispatcher thread and for the CPU)%n",
        us(sat.serviceP50), us(sat.serviceP99), us(pac.serviceP50), us(pac.serviceP99));
    System.out.println(renewals(registry, source, handles, seededAt, stoppedAt));
    System.out.printf("answers 'refreshing' (the executor asks again in 200 ms): saturated %,d of %,d (%.3f%%),"
            + " paced %,d of %,d (%.3f%%); of them without valid keys: %d and %d%n",
        sat.refreshing, sat.asks, 100.0 * sat.refreshing / Math.max(1, sat.asks), pac.refreshing, pac.asks,
        100.0 * pac.refreshing / Math.max(1, pac.asks), sat.noKeys, pac.noKeys);
  }

  /**
   * Catalog requests per table per renewal, over the due moments before a cut-off 2.5 s before
   * {@code stoppedAt}: a due table in use is asked for within milliseconds, and the ticker passes
   * every second and checks a table at most once per 1 s check interval, so every due moment before
   * the cut-off should have been served, by one request (idle tables wait for their next use).
   */
  static String renewals(CredentialRegistry registry, CountingSource source, String[] handles, long seededAt, long stoppedAt) {
    long cutoff = stoppedAt - 2_500;
    long requestsBeforeCutoff = 0;
    long renewals = 0;
    long missed = 0;
    long idle = 0;
    List<Long> lags = new ArrayList<>(); // how long after its due moment a renewal's request came
    for (String handle : handles) {
      List<long[]> calls = source.served.getOrDefault(handle, List.of());
      synchronized (calls) {
        requestsBeforeCutoff += calls.stream().filter(c -> c[1] <= cutoff).count();
        // A renewal: a due moment that came (a request for keys not yet due renews nothing).
        renewals += calls.stream().filter(c -> c[1] <= cutoff && c[0] <= c[1]).mapToLong(c -> c[0]).distinct().count();
        calls.stream().filter(c -> c[1] <= cutoff && c[0] <= c[1]).forEach(c -> lags.add(c[1] - c[0]));
      }
      TableEntry entry = registry.lookup(handle);
      CredentialSnapshot current = entry.snapshot("");
      if (current.refreshAtMs <= cutoff && entry.lastUsedAtMs() < current.fetchedAtMs) {
        idle++; // not asked for since its keys were fetched: renewed on its next use, by design
      } else if (current.refreshAtMs <= cutoff) {
        missed++; // due before the cut-off, in use, and never renewed
        renewals++;
      }
    }
    return String.format("catalog requests per table per renewal: %.3f   target exactly 1   %s"
            + "   [%,d requests / %,d renewals of %,d tables in %.1f s (%.1f each); duplicates %d,"
            + " for keys not yet due %d (up to %d ms early), never renewed %d;"
            + " idle and due at the end (renewed on next use) %d; request after the due moment: p50 %d ms, p99 %d ms,"
            + " max %d ms (keys expire a fifth of their lifetime after it)]",
        requestsBeforeCutoff / (double) renewals, requestsBeforeCutoff == renewals && missed == 0 ? "MET" : "MISSED",
        requestsBeforeCutoff, renewals, handles.length, (cutoff - seededAt) / 1e3, renewals / (double) handles.length,
        source.duplicates.sum(), source.premature.sum(), source.mostEarlyMs.get(), missed, idle, pct(lags, 0.5),
        pct(lags, 0.99), pct(lags, 1.0));
  }

  private static long pct(List<Long> values, double q) {
    if (values.isEmpty()) {
      return -1;
    }
    List<Long> sorted = new ArrayList<>(values);
    java.util.Collections.sort(sorted);
    return sorted.get((int) Math.min(sorted.size() - 1, (long) (sorted.size() * q)));
  }

  /** CPU time of this whole JVM so far (all threads), for CPU per ask. */
  public static long processCpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean
        ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime()
        : -1;
  }

  /** One ask of the driver; puts the time receive() itself took in {@code serviceNs[0]}. */
  interface Ask {
    byte[] ask(byte[] request, long[] serviceNs);
  }

  /** The offered load of the paced phase: the throughput target. */
  static final long OFFERED_ASKS_PER_S = 50_000;

  private static String us(long ns) {
    return ns >= 1_000_000 ? String.format("%.2f ms", ns / 1e6) : String.format("%.1f us", ns / 1e3);
  }

  /** All threads' results of one phase. */
  static final class Summary {
    long asks;
    long refreshing;
    long noKeys;
    long lateSends;
    long p50;
    long p99;
    long p999;
    long max;
    long serviceP50;
    long serviceP99;

    static Summary of(List<Asker> askers, java.util.function.Function<Asker, Stats> phase) {
      Summary out = new Summary();
      List<Stats> all = new ArrayList<>();
      for (Asker a : askers) {
        Stats s = phase.apply(a);
        all.add(s);
        out.asks += s.asks;
        out.refreshing += s.refreshing;
        out.noKeys += s.noKeys;
        out.lateSends += s.lateSends;
      }
      long[] service = pool(all, true);
      Arrays.sort(service);
      if (service.length > 0) {
        out.serviceP50 = service[service.length / 2];
        out.serviceP99 = service[(int) Math.min(service.length - 1, (long) (service.length * 0.99))];
      }
      long[] pooled = pool(all, false);
      Arrays.sort(pooled);
      if (pooled.length > 0) {
        out.p50 = pooled[pooled.length / 2];
        out.p99 = pooled[(int) Math.min(pooled.length - 1, (long) (pooled.length * 0.99))];
        out.p999 = pooled[(int) Math.min(pooled.length - 1, (long) (pooled.length * 0.999))];
        out.max = pooled[pooled.length - 1];
      }
      return out;
    }

    /** Each thread's uniform sample, thinned to its share of all asks, so busier threads count more. */
    private static long[] pool(List<Stats> all, boolean serviceOnly) {
      double rate = Double.MAX_VALUE; // kept samples per ask: the lowest of any thread
      for (Stats s : all) {
        if (s.asks > 0) {
          rate = Math.min(rate, s.kept(false).length / (double) s.asks);
        }
      }
      List<Long> out = new ArrayList<>();
      for (Stats s : all) {
        long[] kept = s.kept(serviceOnly);
        int keep = (int) Math.min(kept.length, Math.round(s.asks * rate));
        for (int j = 0; j < keep; j++) {
          out.add(kept[j]);
        }
      }
      return out.stream().mapToLong(Long::longValue).toArray();
    }
  }

  private static long gcMillis() {
    long ms = 0;
    for (java.lang.management.GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      ms += Math.max(0, gc.getCollectionTime());
    }
    return ms;
  }

  // ---- part 2: the same asks over Spark's plugin RPC ----

  /**
   * {@code spark.plugins} in part 2: the shim's plugin, with the driver's {@code receive()} timed, so
   * one run splits an ask's latency into the plugin's own answer and the rest (Spark's RPC, queues).
   */
  public static final class TimedPlugin implements org.apache.spark.api.plugin.SparkPlugin {
    static final long[] RECEIVE_NS = new long[4_000_000];
    static final java.util.concurrent.atomic.AtomicInteger RECEIVED = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public org.apache.spark.api.plugin.DriverPlugin driverPlugin() {
      CatalogExtPlugin.Driver plugin = new CatalogExtPlugin.Driver();
      return new org.apache.spark.api.plugin.DriverPlugin() {
        @Override
        public Map<String, String> init(org.apache.spark.SparkContext sc, org.apache.spark.api.plugin.PluginContext ctx) {
          return plugin.init(sc, ctx);
        }

        @Override
        public Object receive(Object message) {
          long t0 = System.nanoTime();
          Object reply = plugin.receive(message);
          int i = RECEIVED.getAndIncrement();
          if (i < RECEIVE_NS.length) {
            RECEIVE_NS[i] = System.nanoTime() - t0;
          }
          return reply;
        }
      };
    }

    @Override
    public org.apache.spark.api.plugin.ExecutorPlugin executorPlugin() {
      return new CatalogExtPlugin().executorPlugin();
    }
  }

  /** On the driver: p50/p99/p99.9 of receive() itself since the last call, in microseconds; then resets. */
  public static String receiveStats() {
    int n = Math.min(TimedPlugin.RECEIVED.getAndSet(0), TimedPlugin.RECEIVE_NS.length);
    long[] values = Arrays.copyOf(TimedPlugin.RECEIVE_NS, n);
    Arrays.sort(values);
    if (n == 0) {
      return "receive() not called";
    }
    return String.format("receive() itself (driver, same asks): p50 %.0f us, p99 %.0f us, p99.9 %.0f us of %,d calls",
        values[n / 2] / 1e3, values[Math.min(n - 1, (int) (n * 0.99))] / 1e3, values[Math.min(n - 1, (int) (n * 0.999))] / 1e3, n);
  }

  private static volatile CountingSource sparkSource;
  private static volatile String[] sparkHandles;
  private static volatile long sparkSeededAt;

  /** On the driver (py4j): registers {@code tables} tables with a counting source; their handles, comma-separated. */
  public static String seedDriver(int tables, long lifetimeMs) {
    CountingSource source = new CountingSource(lifetimeMs);
    CredentialRegistry registry = CredentialRegistry.get();
    sparkSeededAt = System.currentTimeMillis();
    sparkHandles = register(registry, benchCatalog(registry, source), tables, lifetimeMs);
    sparkSource = source;
    return String.join(",", sparkHandles);
  }

  /** On the driver, after the asks: the asks the plugin served, and the catalog requests per renewal. */
  public static String driverStats() {
    return "driver plugin served " + ExecutorAsks.served() + " asks; "
        + renewals(CredentialRegistry.get(), sparkSource, sparkHandles, sparkSeededAt, System.currentTimeMillis());
  }

  /**
   * In an executor task (Spark SQL {@code reflect}): {@code threads} threads each ask the driver
   * {@code asks} times for random tables of {@code handlesCsv}, through the context the executor
   * plugin connected, as DriverPluginSource does: at once after each answer ({@code intervalMs} 0), or
   * each thread one ask every {@code intervalMs} (an offered load). Returns "startMs endMs asks
   * notFresh cpuNs executorId lat1,lat2,..." (this JVM's CPU time meanwhile; every ask's latency in ns).
   */
  public static String askDriver(String handlesCsv, int threads, int asks, long intervalMs) throws Exception {
    DriverChannel ctx = CredentialRegistry.get().driverChannel();
    if (ctx == null) {
      throw new IllegalStateException("the catalog-ext plugin is not running in this executor (spark.plugins)");
    }
    String[] handles = handlesCsv.split(",");
    byte[][] requests = new byte[handles.length][];
    for (int i = 0; i < handles.length; i++) {
      requests[i] = new PluginMessages.Request(handles[i], null).encode();
    }
    long[][] latencies = new long[threads][asks];
    AtomicLong nonFresh = new AtomicLong();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    Exception[] failure = new Exception[1];
    for (int t = 0; t < threads; t++) {
      long[] mine = latencies[t];
      Thread w =
          new Thread(
              () -> {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                long intervalNs = intervalMs * 1_000_000L;
                try {
                  start.await();
                  long nextNs = System.nanoTime() + (intervalNs > 0 ? random.nextLong(intervalNs) : 0); // spread out
                  for (int i = 0; i < asks; i++) {
                    long wait = nextNs - System.nanoTime();
                    if (wait > 0) {
                      java.util.concurrent.locks.LockSupport.parkNanos(wait);
                    }
                    nextNs += intervalNs;
                    byte[] request = requests[random.nextInt(requests.length)];
                    long t0 = System.nanoTime();
                    Object reply = ctx.ask(request);
                    mine[i] = System.nanoTime() - t0;
                    if (!PluginMessages.Reply.decode(reply).fresh) {
                      nonFresh.incrementAndGet();
                    }
                  }
                } catch (Exception e) {
                  synchronized (failure) {
                    failure[0] = e;
                  }
                }
              },
              "bench-ask-" + t);
      w.setDaemon(true);
      workers.add(w);
      w.start();
    }
    long cpuBefore = processCpuNanos();
    long startMs = System.currentTimeMillis();
    start.countDown();
    for (Thread w : workers) {
      w.join();
    }
    long endMs = System.currentTimeMillis();
    long cpuNs = processCpuNanos() - cpuBefore;
    synchronized (failure) {
      if (failure[0] != null) {
        throw failure[0];
      }
    }
    StringBuilder out = new StringBuilder();
    out.append(startMs).append(' ').append(endMs).append(' ').append((long) threads * asks).append(' ')
        .append(nonFresh.get()).append(' ').append(cpuNs).append(' ')
        .append(org.apache.spark.SparkEnv.get().executorId()).append(' ');
    for (long[] mine : latencies) {
      for (long ns : mine) {
        out.append(ns).append(',');
      }
    }
    return out.substring(0, out.length() - 1);
  }
}
