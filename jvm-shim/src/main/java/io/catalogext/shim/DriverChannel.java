package io.catalogext.shim;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.SparkEnv;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executors in other JVMs get credentials from the driver, never from the catalog. Requests carry
 * an HMAC of a per-application secret (with a timestamp and nonce against replay); responses are
 * AES-GCM encrypted with a key derived from the same secret, so credentials never cross the
 * network in clear text even when Spark's own RPC encryption is off.
 */
final class DriverChannel {
  private static final Logger LOG = LoggerFactory.getLogger(DriverChannel.class);
  private static final long MAX_SKEW_MS = 5 * 60 * 1000L;
  private static final int TIMEOUT_MS = 30_000;
  private static final SecureRandom RANDOM = new SecureRandom();
  static final String PATH = "/catalog-ext/credentials";
  static final String MAC_HEADER = "X-Catalog-Ext-Mac";

  private DriverChannel() {}

  /** Keys derived from the shared secret: one to authenticate, one to encrypt. */
  static final class Keys {
    final byte[] mac;
    final SecretKeySpec enc;

    Keys(String secret) {
      byte[] raw = secret.getBytes(StandardCharsets.UTF_8);
      this.mac = hmac(raw, "catalog-ext mac".getBytes(StandardCharsets.UTF_8));
      byte[] encKey = hmac(raw, "catalog-ext enc".getBytes(StandardCharsets.UTF_8));
      this.enc = new SecretKeySpec(encKey, 0, 16, "AES");
    }

    byte[] sign(byte[] body) {
      return hmac(mac, body);
    }

    byte[] seal(byte[] plain, byte[] aad) throws GeneralSecurityException {
      byte[] iv = new byte[12];
      RANDOM.nextBytes(iv);
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(Cipher.ENCRYPT_MODE, enc, new GCMParameterSpec(128, iv));
      cipher.updateAAD(aad);
      byte[] sealed = cipher.doFinal(plain);
      byte[] out = new byte[iv.length + sealed.length];
      System.arraycopy(iv, 0, out, 0, iv.length);
      System.arraycopy(sealed, 0, out, iv.length, sealed.length);
      return out;
    }

    byte[] open(byte[] data, byte[] aad) throws GeneralSecurityException {
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(Cipher.DECRYPT_MODE, enc, new GCMParameterSpec(128, data, 0, 12));
      cipher.updateAAD(aad);
      return cipher.doFinal(data, 12, data.length - 12);
    }

    private static byte[] hmac(byte[] key, byte[] data) {
      try {
        Mac m = Mac.getInstance("HmacSHA256");
        m.init(new SecretKeySpec(key, "HmacSHA256"));
        return m.doFinal(data);
      } catch (GeneralSecurityException e) {
        throw new IllegalStateException("HmacSHA256 unavailable", e);
      }
    }
  }

  /** Runs in the driver JVM; answers from the registry, refreshing first when due. */
  static final class Server {
    final String endpoint;
    final String secret;
    private final Keys keys;
    private final CredentialRegistry registry;
    final java.util.concurrent.atomic.AtomicLong served = new java.util.concurrent.atomic.AtomicLong();
    final java.util.concurrent.atomic.AtomicLong refused = new java.util.concurrent.atomic.AtomicLong();
    private final Map<String, Long> seenNonces =
        new LinkedHashMap<>(256, 0.75f, false) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > 100_000 || eldest.getValue() < System.currentTimeMillis() - 2 * MAX_SKEW_MS;
          }
        };

    private Server(CredentialRegistry registry, String secret, String endpoint) {
      this.registry = registry;
      this.secret = secret;
      this.keys = new Keys(secret);
      this.endpoint = endpoint;
    }

    static Server start(CredentialRegistry registry, String secret) {
      String bindHost = "127.0.0.1";
      String advertisedHost = "127.0.0.1";
      SparkEnv env = SparkEnv.get();
      if (env != null) {
        advertisedHost = env.conf().get("spark.driver.host", advertisedHost);
        bindHost = env.conf().get("spark.driver.bindAddress", advertisedHost);
      }
      try {
        HttpServer http = HttpServer.create(new InetSocketAddress(InetAddress.getByName(bindHost), 0), 64);
        String endpoint =
            "http://" + advertisedHost + ":" + http.getAddress().getPort() + PATH;
        Server server = new Server(registry, secret, endpoint);
        http.createContext(PATH, server::handle);
        http.setExecutor(
            Executors.newFixedThreadPool(
                4,
                r -> {
                  Thread t = new Thread(r, "catalog-ext-driver-channel");
                  t.setDaemon(true);
                  return t;
                }));
        http.start();
        LOG.info("catalog-ext: driver credential channel listening at {}", endpoint);
        return server;
      } catch (IOException e) {
        throw new IllegalStateException("cannot start the driver credential channel on " + bindHost, e);
      }
    }

    private void handle(HttpExchange exchange) throws IOException {
      try {
        byte[] body = readAll(exchange.getRequestBody());
        String mac = exchange.getRequestHeaders().getFirst(MAC_HEADER);
        if (!"POST".equals(exchange.getRequestMethod())
            || mac == null
            || !MessageDigest.isEqual(decodeOrEmpty(mac), keys.sign(body))) {
          refused.incrementAndGet();
          exchange.sendResponseHeaders(401, -1);
          return;
        }
        JsonNode request = Json.read(new String(body, StandardCharsets.UTF_8));
        long ts = request.path("ts").asLong();
        String nonce = request.path("nonce").asText();
        if (Math.abs(System.currentTimeMillis() - ts) > MAX_SKEW_MS || !rememberNonce(nonce)) {
          refused.incrementAndGet();
          exchange.sendResponseHeaders(401, -1);
          return;
        }
        served.incrementAndGet();
        byte[] plain = answer(request.path("handle").asText()).getBytes(StandardCharsets.UTF_8);
        byte[] sealed = keys.seal(plain, nonce.getBytes(StandardCharsets.UTF_8));
        exchange.sendResponseHeaders(200, sealed.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(sealed);
        }
      } catch (GeneralSecurityException | RuntimeException e) {
        LOG.warn("catalog-ext: driver channel request failed: {}", e.getClass().getSimpleName());
        exchange.sendResponseHeaders(500, -1);
      } finally {
        exchange.close();
      }
    }

    private static byte[] decodeOrEmpty(String b64) {
      try {
        return Base64.getDecoder().decode(b64);
      } catch (IllegalArgumentException e) {
        return new byte[0];
      }
    }

    private synchronized boolean rememberNonce(String nonce) {
      return nonce.length() >= 16 && seenNonces.put(nonce, System.currentTimeMillis()) == null;
    }

    /** Current credentials for a handle, refreshed first if they are due. */
    private String answer(String handle) {
      TableCredentials entry = registry.lookup(handle);
      ObjectNode out = Json.object();
      if (entry == null) {
        out.put("error", "the driver does not know this table (was the session restarted?)");
        return Json.write(out);
      }
      entry.markUsed(); // an executor is using this table
      long now = System.currentTimeMillis();
      boolean due =
          entry.slots().values().stream().anyMatch(s -> s.current == null || now >= s.current.refreshAtMs);
      if (due) {
        try {
          entry.refreshIfGeneration(entry.generation());
        } catch (Exception e) {
          // Serve what we have while it is valid; the executor decides.
          out.put("refresh_error", String.valueOf(e.getMessage()));
        }
      }
      out.put("generation", entry.generation());
      var creds = out.putArray("storage-credentials");
      entry.slots().forEach(
          (prefix, slot) -> {
            CredentialSnapshot snap = slot.current;
            if (snap == null) {
              return;
            }
            ObjectNode c = creds.addObject();
            c.put("prefix", prefix);
            c.set("config", Json.fromMap(snap.toConfig()));
          });
      out.put("strategy", "driver");
      return Json.write(out);
    }
  }

  /** Runs in executor JVMs. */
  static final class Client {
    private final String endpoint;
    private final Keys keys;

    Client(String endpoint, String secret) {
      if (endpoint == null || secret == null) {
        throw new IllegalStateException(
            "this FileIO has no driver channel (was the table loaded through the catalog-ext catalog?)");
      }
      this.endpoint = endpoint;
      this.keys = new Keys(secret);
    }

    RefreshResult fetch(TableCredentials entry) throws Exception {
      byte[] nonceBytes = new byte[16];
      RANDOM.nextBytes(nonceBytes);
      String nonce = Base64.getUrlEncoder().withoutPadding().encodeToString(nonceBytes);
      ObjectNode request = Json.object();
      request.put("handle", entry.handle);
      request.put("ts", System.currentTimeMillis());
      request.put("nonce", nonce);
      byte[] body = Json.write(request).getBytes(StandardCharsets.UTF_8);

      HttpURLConnection conn = (HttpURLConnection) new URL(endpoint).openConnection();
      conn.setConnectTimeout(TIMEOUT_MS);
      conn.setReadTimeout(TIMEOUT_MS);
      conn.setRequestMethod("POST");
      conn.setDoOutput(true);
      conn.setRequestProperty(MAC_HEADER, Base64.getEncoder().encodeToString(keys.sign(body)));
      try (OutputStream out = conn.getOutputStream()) {
        out.write(body);
      }
      int status = conn.getResponseCode();
      if (status != 200) {
        throw new IOException("driver credential channel answered HTTP " + status);
      }
      byte[] sealed;
      try (InputStream in = conn.getInputStream()) {
        sealed = readAll(in);
      }
      JsonNode node =
          Json.read(new String(keys.open(sealed, nonce.getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8));
      if (node.hasNonNull("error")) {
        throw new IllegalStateException(node.get("error").asText());
      }
      return RefreshResult.fromJson(node);
    }
  }

  private static byte[] readAll(InputStream in) throws IOException {
    return in.readAllBytes();
  }
}
