package io.catalogext.shim;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/** Executors in other JVMs: the driver's answers, including its errors, are honoured. */
public class DriverPluginSourceTest {
  private final FakeClock clock = new FakeClock();
  private final AtomicInteger asks = new AtomicInteger();

  private TableEntry executorEntry(DriverPluginSource.Asker asker) {
    TableContext context = TableContext.fromIdentity("{\"catalog\":\"c\",\"namespace\":[\"db\"],\"table\":\"t\"}");
    return new TableEntry("h", context, RefreshPolicy.defaults(), new DriverPluginSource(asker, clock, 5_000), clock);
  }

  public void testFreshReplyIsInstalled() throws Exception {
    long expires = clock.nowMs() + 600_000;
    TableEntry entry =
        executorEntry(
            request -> {
              asks.incrementAndGet();
              Map<String, String> config =
                  Map.of(ShimKeys.ACCESS_KEY_ID, "NEW", ShimKeys.SECRET_ACCESS_KEY, "S", ShimKeys.EXPIRES_AT_MS,
                      String.valueOf(expires));
              return new PluginMessages.Reply(Map.of("", config), true, false, null, "re-stage").encode();
            });
    CredentialSlot slot = entry.seed("", Map.of());
    Check.isTrue(entry.refreshIfGeneration(entry.generation()), "fetched");
    Check.equal("NEW", slot.current.credentials.accessKeyId(), "installed keys");
    Check.equal(1, asks.get(), "asks");
  }

  public void testDriverErrorIsAnErrorNotStaleKeys() {
    TableEntry entry =
        executorEntry(
            request -> {
              asks.incrementAndGet();
              return PluginMessages.Reply.failed("cannot refresh storage credentials for table c.db.t: 503").encode();
            });
    CredentialSlot slot =
        entry.seed("", Map.of(ShimKeys.ACCESS_KEY_ID, "OLD", ShimKeys.SECRET_ACCESS_KEY, "S",
            ShimKeys.EXPIRES_AT_MS, String.valueOf(clock.nowMs() + 5_000)));
    clock.advance(6_000);
    entry.tick(clock.nowMs()); // what the JVM's ticker does every second
    TableCredentialsProvider provider = new TableCredentialsProvider(entry, slot);
    long started = clock.nowMs();
    CredentialsExpiredException e = Check.raises(CredentialsExpiredException.class, provider::resolveCredentials);
    Check.isTrue(e.getMessage().contains("the driver's refresh failed: cannot refresh"), e.getMessage());
    // Asked again only after backoffs (1 s, 2 s, 4 s, 8 s: 15 s in all), then the 30 s timeout ends it.
    Check.equal(5, asks.get(), "asks");
    Check.equal(15_000L, clock.nowMs() - started, "time spent backing off");
    Check.equal("OLD", slot.current.credentials.accessKeyId(), "stale keys were not installed as new");
  }

  public void testMessagesCarryNoSecretInToString() {
    Map<String, String> config = Map.of(ShimKeys.ACCESS_KEY_ID, "AKIASECRET", ShimKeys.SECRET_ACCESS_KEY, "SHH");
    PluginMessages.Reply reply = new PluginMessages.Reply(Map.of("", config), true, false, null, "reload");
    PluginMessages.Reply back = PluginMessages.Reply.decode(reply.encode());
    Check.equal("AKIASECRET", back.configByPrefix.get("").get(ShimKeys.ACCESS_KEY_ID), "round trip");
    Check.isTrue(!back.toString().contains("AKIASECRET") && !back.toString().contains("SHH"), back.toString());
    Check.raises(IllegalArgumentException.class, () -> PluginMessages.Request.decode("not bytes"));
    Check.equal(List.of("h"), List.of(PluginMessages.Request.decode(new PluginMessages.Request("h", null).encode()).handle),
        "request round trip");
  }
}
