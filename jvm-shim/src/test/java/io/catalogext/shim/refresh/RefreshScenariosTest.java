package io.catalogext.shim.refresh;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.errors.CredentialsExpiredException;
import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.events.EventLog;
import io.catalogext.shim.session.CatalogSession;
import io.catalogext.shim.session.ServerClocks;
import io.catalogext.shim.util.Json;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.iceberg.rest.Endpoint;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The shim's refresh engine (TableEntry, its flight, schedule and ledger, and CatalogRefresher's
 * plan) replays every row of the shared timelines ({@code refresh-scenarios.json}, packaged beside
 * the classes) on a fake clock; PyIceberg's engine replays the same rows
 * (tests/unit/refresh/test_refresh_scenarios.py). Background refreshes run on the caller's thread here.
 */
public class RefreshScenariosTest {
  static final String RESOURCE = "/io/catalogext/shim/refresh-scenarios.json";
  private static final JsonNode SPEC = read();
  private static final long T0 = 1_000_000_000L; // the first keys' fetch
  private static final AtomicInteger ROWS_RUN = new AtomicInteger();

  private static JsonNode read() {
    try (InputStream in = RefreshScenariosTest.class.getResourceAsStream(RESOURCE)) {
      assertTrue(in != null, RESOURCE + " is missing from the shim jar");
      return Json.MAPPER.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A clock only the replay moves. */
  static final class StepClock implements Clock {
    volatile long now = T0;

    @Override
    public long nowMs() {
      return now;
    }

    @Override
    public void sleepMs(long ms) {
      now += ms;
    }
  }

  static RefreshPolicy policyOf(JsonNode row) {
    Map<String, String> props = new HashMap<>();
    List.of(SPEC.path("policy"), row.path("policy")).forEach(p -> p.fieldNames().forEachRemaining(name -> {
      if (!name.equals("meaning")) {
        props.put("catalog-ext.refresh." + name, p.get(name).asText());
      }
    }));
    return RefreshPolicy.fromProperties(props);
  }

  /** The catalog's answers, in order (the row's {@code catalog}); expiries on its own clock. */
  static final class Catalog implements EntryRefresher {
    final List<JsonNode> answers = new ArrayList<>();
    final JsonNode lifetime;
    final StepClock clock;
    final long skewMs;
    int requests;
    Map<String, String> last;

    Catalog(JsonNode row, StepClock clock) {
      row.path("catalog").forEach(answers::add);
      this.lifetime = row.get("keys-lifetime-ms");
      this.clock = clock;
      this.skewMs = row.path("catalog-skew-ms").asLong(0);
    }

    Map<String, String> keys(JsonNode lifetimeMs) {
      int n = requests + 1;
      Map<String, String> config = new HashMap<>();
      config.put(ShimKeys.ACCESS_KEY_ID, "K" + n);
      config.put(ShimKeys.SECRET_ACCESS_KEY, "secret-" + n);
      config.put(ShimKeys.SESSION_TOKEN, "token-" + n);
      if (lifetimeMs != null && !lifetimeMs.isNull()) {
        config.put(ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.now + skewMs + lifetimeMs.asLong()));
      }
      last = Map.copyOf(config);
      return last;
    }

    @Override
    public RefreshResult fetch(RefreshSubject entry) {
      requests++;
      JsonNode answer = answers.isEmpty() ? null : answers.remove(0);
      String kind = answer == null ? "new" : answer.get("answer").asText();
      if (kind.equals("fail")) {
        throw new IllegalStateException("the catalog answered 503");
      }
      Map<String, String> config = kind.equals("same") ? last : keys(answer == null ? lifetime : answer.get("lifetime-ms"));
      return new RefreshResult(Map.of("", config), Map.of(), "scenario");
    }
  }

  /** One timeline through the shim's real entry: a reader does what an S3 client's provider and retries do. */
  static final class Replay {
    final StepClock clock = new StepClock();
    final Catalog catalog;
    final ServerClocks clocks;
    final TableEntry entry;
    final TableCredentialsProvider provider;
    final Map<String, CredentialSnapshot> signed = new HashMap<>();

    Replay(JsonNode row, String catalogName) {
      RefreshPolicy policy = policyOf(row);
      catalog = new Catalog(row, clock);
      clocks = new ServerClocks(catalogName);
      if (row.has("catalog-skew-ms")) { // as the catalog client's Date watch reports it
        clocks.observeDate("catalog", clock.now + catalog.skewMs, clock.now, policy.maxClockSkewMs);
      }
      TableContext context = new TableContext(catalogName, List.of("db"), "t", "s3://bucket/db/t", null, false, null, null);
      entry = new TableEntry("h", context, policy, catalog, clock, clocks, Runnable::run);
      provider = new TableCredentialsProvider(entry, entry.seed("", catalog.keys(row.get("keys-lifetime-ms"))));
    }

    void step(JsonNode step) {
      String keys = step.path("keys").asText("k");
      switch (step.get("do").asText()) {
        case "tick":
          entry.scheduleIfDue(clock.now);
          break;
        case "read":
        case "sign":
          provider.resolveCredentials();
          CredentialSnapshot used = provider.current();
          signed.put(keys, used);
          if (step.get("do").asText().equals("read")) {
            provider.accepted(used);
          }
          break;
        case "reject":
          provider.onRejected(signed.get(keys), "ExpiredToken", new IllegalStateException("403 ExpiredToken"));
          break;
        default:
          throw new AssertionError("unknown step " + step);
      }
    }
  }

  static String errorKind(RuntimeException e) {
    if (e instanceof CredentialsRejectedException) {
      return e.getMessage().contains("reactive-max-per-minute") ? "rate-limit" : "cannot-help";
    }
    if (e instanceof CredentialsExpiredException) {
      return "failed";
    }
    throw e;
  }

  @TestFactory
  Stream<DynamicTest> testEveryTimeline() {
    List<DynamicTest> tests = new ArrayList<>();
    int n = 0;
    for (JsonNode row : SPEC.get("timelines")) {
      String catalogName = "scenario" + n++;
      tests.add(DynamicTest.dynamicTest(row.get("id").asText(), () -> replay(row, catalogName)));
    }
    return tests.stream();
  }

  private static void replay(JsonNode row, String catalogName) {
    Replay replay = new Replay(row, catalogName);
    int i = 0;
    for (JsonNode step : row.get("steps")) {
      replay.clock.now = T0 + step.get("at").asLong();
      replay.entry.tick(replay.clock.now); // the JVM-wide ticker, about once a second
      List<String> errors = new ArrayList<>();
      for (int t = 0; t < step.path("times").asInt(1); t++) {
        try {
          replay.step(step);
        } catch (RuntimeException e) {
          errors.add(errorKind(e));
        }
      }
      List<String> expectedErrors = new ArrayList<>();
      for (int t = 0; step.has("error") && t < step.path("times").asInt(1); t++) {
        expectedErrors.add(step.get("error").asText());
      }
      assertEquals(expectedErrors, errors, "step " + i + ": " + step);
      if (step.has("requests")) {
        assertEquals(step.get("requests").asInt(), replay.catalog.requests, "step " + i + ": " + step);
      }
      i++;
    }
    JsonNode expect = row.get("expect");
    assertEquals(expect.get("requests").asInt(), replay.catalog.requests, "catalog requests");
    long learned = replay.clocks.learnedLifetimeMs();
    JsonNode want = expect.path("learned-lifetime-ms");
    assertEquals(want.isMissingNode() || want.isNull() ? -1L : want.asLong(), learned, "learned lifetime");
    List<JsonNode> got = new ArrayList<>();
    for (JsonNode e : Json.read(EventLog.drainAfter(0)).get("events")) {
      String type = e.path("type").asText();
      if (catalogName.equals(e.path("catalog").asText())
          && (type.equals("credentials.rejected") || type.equals("credentials.lifetime-learned"))) {
        ObjectNode fields = Json.object();
        fields.put("type", type);
        e.fieldNames().forEachRemaining(name -> {
          if (!List.of("type", "table", "catalog", "time", "seq", "source").contains(name)) {
            fields.set(name, e.get(name));
          }
        });
        got.add(fields);
      }
    }
    List<JsonNode> wanted = new ArrayList<>();
    expect.path("events").forEach(wanted::add);
    assertEquals(wanted.toString(), got.toString(), "events");
    ROWS_RUN.incrementAndGet();
  }

  @TestFactory
  Stream<DynamicTest> testEveryPlan() {
    List<DynamicTest> tests = new ArrayList<>();
    for (JsonNode row : SPEC.get("plans")) {
      tests.add(DynamicTest.dynamicTest(row.get("id").asText(), () -> plan(row)));
    }
    return tests.stream();
  }

  private static void plan(JsonNode row) {
    StepClock clock = new StepClock();
    CatalogSession session = new CatalogSession("c", Map.of("uri", "http://catalog:8181"), clock::nowMs);
    JsonNode state = row.get("state");
    boolean staged = state.get("staged").asBoolean();
    TableContext context = new TableContext("c", List.of("db"), "t", "s3://bucket/db/t", null, staged,
        state.path("stage-request").asBoolean(false) ? "{\"name\":\"t\"}" : null,
        state.get("refresh-endpoint").asBoolean() ? "v1/refresh/t" : null);
    TableEntry entry = new TableEntry("h", context, RefreshPolicy.defaults(), null, clock);
    if (state.get("refresh-token").asBoolean()) {
      entry.refreshTokens().put("s3://bucket/db/t", "token");
    }
    row.path("missing").forEach(m -> {
      assertEquals("credentials-endpoint", m.asText(), "the only endpoint a catalog is remembered to lack");
      session.unsupported.add(Endpoint.V1_TABLE_CREDENTIALS);
    });
    clock.now += row.path("after-ms").asLong(0);
    List<String> plan = new ArrayList<>();
    CatalogRefresher.plan(session, entry).forEach(s -> plan.add(s.label));
    List<String> wanted = new ArrayList<>();
    row.get("plan").forEach(s -> wanted.add(s.asText()));
    assertEquals(wanted, plan, "plan");
    assertEquals(row.get("label").asText(), plan.isEmpty() ? "none" : plan.get(0), "label");
  }

  @Test
  void testTheSpecHasFiftyRowsOrMore() {
    assertTrue(SPEC.get("timelines").size() + SPEC.get("plans").size() >= 50, "rows");
    Map<String, Integer> ids = new LinkedHashMap<>();
    SPEC.get("timelines").forEach(r -> ids.merge(r.get("id").asText(), 1, Integer::sum));
    SPEC.get("plans").forEach(r -> ids.merge(r.get("id").asText(), 1, Integer::sum));
    ids.forEach((id, count) -> assertEquals(1, count, "unique id " + id));
  }
}
