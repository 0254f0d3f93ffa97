package io.catalogext.shim.stores;

import io.catalogext.shim.config.CredentialRules;
import io.catalogext.shim.errors.CredentialsExpiredException;
import io.catalogext.shim.errors.CredentialsRejectedException;
import io.catalogext.shim.refresh.CredentialSnapshot;
import io.catalogext.shim.refresh.StoreTokens;
import io.catalogext.shim.refresh.TableTokens;

import com.azure.core.http.HttpHeaderName;
import com.azure.core.http.HttpPipelineCallContext;
import com.azure.core.http.HttpPipelineNextPolicy;
import com.azure.core.http.HttpPipelineNextSyncPolicy;
import com.azure.core.http.HttpRequest;
import com.azure.core.http.HttpResponse;
import com.azure.core.http.policy.HttpPipelinePolicy;
import com.azure.core.util.BinaryData;
import java.net.URI;
import java.net.URL;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletionException;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Signs every request of one ADLS client (one storage account and container) with the SAS of the
 * request's own path: the vended prefix it falls under picks the token ({@link PrefixTokens}), read
 * from the table's entry at each send, so a renewal reaches requests already under way (a long
 * upload's next block) and two prefixes in one container never share a token. Sits where the SDK
 * puts a policy by default (per retry, after its retry policy: each of the SDK's retries is signed
 * anew).
 *
 * <p>The reactive refresh: a 403 that says the SAS is no longer valid (the shared rules: Azure's
 * AuthenticationFailed; AuthorizationFailure only for a SAS past its own {@code se=}, which is how
 * Azurite answers an expired one) reports the SAS as rejected, waits for a new one (single-flight)
 * and sends the request again. Any other 403 is a scope error and is answered as the store said.
 */
public final class AdlsSasPolicy implements HttpPipelinePolicy {
  /** Sends of one request at most: a refresh per wave plus a send after tokens changed underneath (the shared spec's). */
  static final int MAX_SENDS = CredentialRules.SENDS_PER_CALL;
  private static final HttpHeaderName ERROR_CODE = HttpHeaderName.fromString("x-ms-error-code");

  private final String account;
  private final String container;
  /** The path of the client's endpoint ("" for {@code https://<host>}, "/<account>" for a path-style one). */
  private final String endpointPath;
  private final PrefixTokens tokens;

  AdlsSasPolicy(String host, String container, String endpoint, PrefixTokens tokens) {
    this.account = StoreTokens.accountOf(host);
    this.container = container;
    String path = URI.create(endpoint).getPath();
    this.endpointPath = path == null ? "" : path.replaceAll("/+$", "");
    this.tokens = tokens;
  }

  @Override
  public Mono<HttpResponse> process(HttpPipelineCallContext context, HttpPipelineNextPolicy next) {
    HttpRequest request = context.getHttpRequest();
    String unsigned = request.getUrl().toString();
    TableTokens source;
    try {
      source = source(request.getUrl());
    } catch (IllegalStateException e) {
      return Mono.error(e);
    }
    BinaryData body = request.getBodyAsBinaryData();
    Mono<Void> replayable = body == null || body.isReplayable()
        ? Mono.empty()
        : body.toReplayableBinaryDataAsync().doOnNext(request::setBody).then();
    return replayable.then(Mono.defer(() -> send(context, next, unsigned, source, 1, 0L)));
  }

  private Mono<HttpResponse> send(HttpPipelineCallContext context, HttpPipelineNextPolicy next, String unsigned,
      TableTokens source, int attempt, long firstRejectedNanos) {
    return snapshot(source).flatMap(used -> {
      context.getHttpRequest().setUrl(signed(unsigned, used));
      return next.clone().process().flatMap(response -> {
        String code = expiryCode(response, used, source);
        if (code == null) {
          answered(response, used, source, firstRejectedNanos);
          return Mono.just(response);
        }
        if (attempt >= MAX_SENDS) {
          response.close();
          return Mono.error(source.lastSendRejected(used, code, null)); // one line, not the store's raw refusal
        }
        long rejectedNanos = firstRejectedNanos != 0 ? firstRejectedNanos : System.nanoTime();
        return Mono.fromCallable(() -> source.onRejected(used, code, null))
            .subscribeOn(Schedulers.boundedElastic())
            .flatMap(again -> {
              if (!again) {
                return Mono.just(response);
              }
              response.close();
              return send(context, next, unsigned, source, attempt + 1, rejectedNanos);
            });
      });
    });
  }

  @Override
  public HttpResponse processSync(HttpPipelineCallContext context, HttpPipelineNextSyncPolicy next) {
    HttpRequest request = context.getHttpRequest();
    String unsigned = request.getUrl().toString();
    TableTokens source = source(request.getUrl());
    BinaryData body = request.getBodyAsBinaryData();
    if (body != null && !body.isReplayable()) {
      request.setBody(body.toReplayableBinaryData());
    }
    try {
      return sendSync(request, next, unsigned, source);
    } catch (CredentialsRejectedException | CredentialsExpiredException e) {
      // The storage SDK's sync calls rethrow the cause of what a request throws, as for a Future's
      // ExecutionException (StorageImplUtils.sendRequest): wrapped, the caller gets our one line.
      throw new CompletionException(e);
    }
  }

  private HttpResponse sendSync(HttpRequest request, HttpPipelineNextSyncPolicy next, String unsigned, TableTokens source) {
    long firstRejectedNanos = 0L;
    for (int attempt = 1; ; attempt++) {
      CredentialSnapshot used = source.current();
      request.setUrl(signed(unsigned, used));
      HttpResponse response = next.clone().processSync();
      String code = expiryCode(response, used, source);
      if (code != null && attempt >= MAX_SENDS) {
        response.close();
        throw source.lastSendRejected(used, code, null); // one line, not the store's raw refusal
      }
      if (code == null || !source.onRejected(used, code, null)) {
        answered(response, used, source, firstRejectedNanos);
        return response;
      }
      if (firstRejectedNanos == 0L) {
        firstRejectedNanos = System.nanoTime();
      }
      response.close();
    }
  }

  /** The tokens for the request's path; a path under no vended prefix gets none, in one line. */
  private TableTokens source(URL url) {
    String location = location(url);
    TableTokens source = tokens.forPath(location);
    if (source == null) {
      throw new IllegalStateException(tokens.noPrefixMessage(location));
    }
    return source;
  }

  /**
   * The request's location as {@code abfs://container@account/path}: its URL path past the endpoint's
   * and the container; a listing's {@code directory} or {@code prefix} when the URL names only the container.
   */
  String location(URL url) {
    String path = URI.create(url.toString()).getPath();
    if (path == null) {
      path = "";
    }
    if (!endpointPath.isEmpty() && path.startsWith(endpointPath)) {
      path = path.substring(endpointPath.length());
    }
    path = path.replaceAll("^/+", "");
    String blob = path.startsWith(container + "/") ? path.substring(container.length() + 1) : "";
    if (blob.isEmpty() && url.getQuery() != null) {
      for (String pair : url.getQuery().split("&")) {
        if (pair.startsWith("directory=") || pair.startsWith("prefix=")) {
          blob = URLDecoder.decode(pair.substring(pair.indexOf('=') + 1), StandardCharsets.UTF_8);
        }
      }
    }
    return "abfs://" + container + "@" + account + "/" + blob;
  }

  private static Mono<CredentialSnapshot> snapshot(TableTokens source) {
    CredentialSnapshot fresh = source.currentIfFresh();
    return fresh != null ? Mono.just(fresh) : Mono.fromCallable(source::current).subscribeOn(Schedulers.boundedElastic());
  }

  private String signed(String unsigned, CredentialSnapshot used) {
    String sas = used.tokens() == null ? null : used.tokens().sasForAccount(account);
    if (sas == null) {
      throw new IllegalStateException("the catalog vended no SAS for storage account " + account
          + " with the credentials of this table's path (it vended " + used.tokens() + ")");
    }
    return unsigned + (unsigned.contains("?") ? "&" : "?") + sas;
  }

  /**
   * The code when {@code response} says the SAS of {@code used} is no longer valid, else null
   * (scope errors included).
   */
  private String expiryCode(HttpResponse response, CredentialSnapshot used, TableTokens source) {
    if (!CredentialRules.ADLS_EXPIRY_STATUSES.contains(response.getStatusCode())) {
      return null;
    }
    String code = response.getHeaderValue(ERROR_CODE);
    if (code == null) {
      return null;
    }
    if (CredentialRules.ADLS_EXPIRY_CODES.contains(code)) {
      return code;
    }
    long signedExpiry = StoreTokens.sasSignedExpiryMs(used.tokens().sasForAccount(account));
    if (CredentialRules.ADLS_CODES_ONCE_EXPIRED.contains(code)
        && System.currentTimeMillis() + source.maxClockSkewMs() >= signedExpiry) {
      return code + " (the SAS is past its signed expiry)";
    }
    return null;
  }

  private static void answered(HttpResponse response, CredentialSnapshot used, TableTokens source, long firstRejectedNanos) {
    int status = response.getStatusCode();
    if (status != 401 && status != 403) {
      source.accepted(used);
      if (firstRejectedNanos != 0L) {
        source.retried((System.nanoTime() - firstRejectedNanos) / 1_000_000L);
      }
    }
  }
}
