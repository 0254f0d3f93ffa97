package io.catalogext.shim;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.stores.AdlsClients;
import io.catalogext.shim.stores.PrefixTokens;
import io.catalogext.shim.stores.StorePaths;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.azure.storage.file.datalake.DataLakeFileSystemClient;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the shim's ADLS clients do with a store's 403, against a loopback store that answers every
 * request 403 with a chosen {@code x-ms-error-code}: a scope refusal (another account's or
 * container's SAS, a permission the SAS lacks: Azurite's AuthorizationFailure for a SAS still
 * within its {@code se=}, or any other code) is answered as the store said, sent once and never
 * renewed; a SAS past its own {@code se=} (Azurite's AuthorizationFailure) or Azure's
 * AuthenticationFailed is renewed through the table's registry entry (the catalog is asked). The
 * clients are the ones ADLSFileIO 1.11+ is built with ({@link AdlsClients}), for a table the shim's
 * catalog handed out.
 */
public class AdlsRejectionsTest {
  private static final String HOST = "acct.dfs.core.windows.net";
  private static final String LOCATION = "abfs://c@" + HOST + "/db/t";

  private final List<String> atStore = Collections.synchronizedList(new ArrayList<>());
  private final List<String> atCatalog = Collections.synchronizedList(new ArrayList<>());
  private HttpServer store;
  private HttpServer catalog;
  private volatile String code = "AuthorizationFailure";
  private volatile String tableConfig = "{}";
  private final AtomicInteger answers = new AtomicInteger();
  /** The store answers its n-th request after a second and n times this (0: at once). */
  private volatile long agingStepMs;

  @BeforeEach
  void start() throws IOException {
    store = LoopbackCatalog.start("test-adls-403", ex -> {
      atStore.add(ex.getRequestMethod() + " " + ex.getRequestURI().getPath());
      // each new SAS outlives the last, and a learnable lifetime (a second), before its refusal
      sleepQuietly(agingStepMs == 0 ? 0 : 1000 + agingStepMs * atStore.size());
      ex.getResponseHeaders().add("x-ms-error-code", code);
      ex.sendResponseHeaders(403, -1);
      ex.close();
    });
    catalog = LoopbackCatalog.start("test-adls-catalog", ex -> {
      String path = ex.getRequestURI().getPath();
      if (path.endsWith("/v1/config")) {
        LoopbackCatalog.answer(ex, 200, "{\"defaults\":{},\"overrides\":{}}");
        return;
      }
      atCatalog.add(ex.getRequestMethod() + " " + path);
      // Each answer vends a SAS of its own (one signature per answer), as a catalog renewing them does.
      String vended = tableConfig.replace("&sig=x", "&sig=x" + answers.incrementAndGet());
      LoopbackCatalog.answer(ex, 200, LoopbackCatalog.loadedTable(LOCATION, vended));
    });
  }

  @AfterEach
  void stop() {
    store.stop(0);
    catalog.stop(0);
  }

  /** A container SAS whose signed expiry is {@code se}, and the answer's stated expiry an hour on. */
  private void vend(Instant se) {
    String sas = "sv=2021-08-06&sr=c&sp=rwdl&se=" + URLEncoder.encode(se.toString(), StandardCharsets.UTF_8) + "&sig=x";
    long stated = Instant.now().plus(1, ChronoUnit.HOURS).toEpochMilli();
    tableConfig = "{\"adls.sas-token." + HOST + "\":\"" + sas + "\",\"adls.sas-token-expires-at-ms." + HOST + "\":\""
        + stated + "\",\"adls.connection-string." + HOST + "\":\"" + LoopbackCatalog.uri(store, "/acct") + "\"}";
  }

  /** Reads a file's properties through the shim's client for the table; the store's requests and the catalog's. */
  private RuntimeException readOnce() {
    Map<String, String> props = new HashMap<>();
    props.put("uri", LoopbackCatalog.uri(catalog, ""));
    props.put("token", "t");
    props.put("io-impl", RefreshingADLSFileIO.class.getName());
    props.put("catalog-ext.refresh.timeout-ms", "3000");
    try (ExtRESTCatalog c = new ExtRESTCatalog()) {
      c.initialize("adls-rejections", props);
      RefreshingADLSFileIO io = (RefreshingADLSFileIO) c.loadTable(TableIdentifier.of("db", "t")).io();
      atStore.clear();
      atCatalog.clear();
      PrefixTokens tokens = new PrefixTokens(io.properties(), io.credentials(), StorePaths::isAdls,
          location -> StorePaths.adls(location).canonical());
      AdlsClients clients = new AdlsClients(io.properties(), () -> tokens);
      String file = LOCATION + "/data/f.parquet";
      DataLakeFileSystemClient client = clients.at(file, () -> clients.apply(null));
      return assertThrows(RuntimeException.class, () -> client.getFileClient("db/t/data/f.parquet").getProperties());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void testAScopeRefusalIsSentOnceAndNeverRenewed() {
    vend(Instant.now().plus(1, ChronoUnit.HOURS));
    for (String scope : new String[] {"AuthorizationFailure", "AuthorizationPermissionMismatch"}) {
      code = scope;
      RuntimeException e = readOnce();
      assertTrue(String.valueOf(e.getMessage()).contains("403"), e.toString());
      assertEquals(1, atStore.size(), scope + ": requests at the store " + atStore);
      assertEquals(List.of(), atCatalog, scope + ": the catalog was asked for new tokens on a scope refusal");
    }
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void testARequestWhoseLastSendIsRefusedEndsInOneLineNotInTheStoresRefusal() {
    // Each new SAS outlives the one before it and a learnable lifetime, so every refusal is renewed
    // again (credential-rules.json `refreshing-cannot-help`); the request's last send
    // (`sends-per-call`) is refused too: the caller's one line, never the store's raw 403.
    code = "AuthenticationFailed";
    vend(Instant.now().plus(1, ChronoUnit.HOURS));
    agingStepMs = 150;
    RuntimeException e = readOnce();
    assertTrue(e instanceof CredentialsRejectedException, String.valueOf(e)); // as the storage SDK rethrows it
    assertTrue(e.getMessage().startsWith("Azure storage rejected the storage credentials of table"), e.getMessage());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    assertEquals(CredentialRules.SENDS_PER_CALL, atStore.size(), atStore.toString());
    long loads = atCatalog.stream().filter(r -> r.endsWith("/tables/t")).count(); // each after a /credentials try
    // A renewal per refused send but the last; the lifetime the refusals teach may schedule one more.
    assertTrue(loads >= CredentialRules.SENDS_PER_CALL - 1, "a renewal per refused send but the last: " + atCatalog);
  }

  @Test
  void testAnExpiredSasIsRenewedThroughTheRegistry() {
    // The control: the same store answers, but the SAS is past its own se= (Azurite's answer to an
    // expired one), or Azure says AuthenticationFailed: the client asks the registry for new tokens.
    for (String expired : new String[] {"AuthorizationFailure", "AuthenticationFailed"}) {
      code = expired;
      vend("AuthorizationFailure".equals(expired) ? Instant.now().minus(1, ChronoUnit.MINUTES)
          : Instant.now().plus(1, ChronoUnit.HOURS));
      RuntimeException e = readOnce();
      assertTrue(!atCatalog.isEmpty(), expired + ": the registry did not ask the catalog: " + atCatalog);
      // The renewed SAS is refused at once too: refreshing cannot help, in one line (as the SDK rethrows it).
      assertTrue(e instanceof CredentialsRejectedException && e.getMessage().contains(" again "), expired + ": " + e);
      assertTrue(atStore.size() >= 2, expired + ": sent once only: " + atStore);
    }
  }
}
