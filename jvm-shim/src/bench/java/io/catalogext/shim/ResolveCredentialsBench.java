package io.catalogext.shim;

import io.catalogext.shim.config.RefreshPolicy;
import io.catalogext.shim.config.ShimKeys;
import io.catalogext.shim.refresh.TableContext;
import io.catalogext.shim.refresh.TableCredentialsProvider;
import io.catalogext.shim.refresh.TableEntry;

import java.util.Map;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;

/**
 * Warm-cache cost of resolveCredentials(): our provider against AWS's StaticCredentialsProvider,
 * alternating rounds in one JVM so both see the same machine noise. Prints one line per provider.
 */
public final class ResolveCredentialsBench {
  private static long sink;
  /**
   * Read on every iteration, as the SDK reads its configured provider per request: without it the
   * JIT hoists StaticCredentialsProvider's constant result out of the loop and measures nothing.
   */
  private static volatile AwsCredentialsProvider target;

  public static void main(String[] args) {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
    long iterations = args.length > 1 ? Long.parseLong(args[1]) : 20_000_000L;

    AwsCredentialsProvider ours = ours();
    AwsCredentialsProvider aws = staticProvider();

    // Warm both up so the JIT has compiled them before we measure.
    run(ours, iterations);
    run(aws, iterations);

    long[] oursNs = new long[rounds];
    long[] awsNs = new long[rounds];
    for (int r = 0; r < rounds; r++) {
      oursNs[r] = run(ours, iterations);
      awsNs[r] = run(aws, iterations);
    }
    double oursMedian = median(oursNs) / (double) iterations;
    double awsMedian = median(awsNs) / (double) iterations;
    System.out.printf("catalog-ext TableCredentialsProvider: %.2f ns/op (median of %d rounds)%n", oursMedian, rounds);
    System.out.printf("AWS StaticCredentialsProvider:        %.2f ns/op (median of %d rounds)%n", awsMedian, rounds);
    System.out.printf("ratio ours/static: %.2f%n", oursMedian / awsMedian);
    System.out.println("sink " + (sink & 1));
  }

  /** Our provider on a warm entry whose credentials are an hour from expiry (it must never refresh). */
  static AwsCredentialsProvider ours() {
    long now = System.currentTimeMillis();
    Map<String, String> config =
        Map.of(
            ShimKeys.ACCESS_KEY_ID, "AKIDBENCH",
            ShimKeys.SECRET_ACCESS_KEY, "bench-secret",
            ShimKeys.SESSION_TOKEN, "bench-token",
            ShimKeys.EXPIRES_AT_MS, String.valueOf(now + 3_600_000L));
    TableContext context = new TableContext("bench", java.util.List.of("db"), "t", "s3://b/db/t", null, false, null, null);
    TableEntry entry =
        new TableEntry(
            "bench", context, new RefreshPolicy(300_000L, 0.2),
            e -> { throw new IllegalStateException("the warm path must not refresh"); },
            System::currentTimeMillis);
    return new TableCredentialsProvider(entry, entry.seed("", config));
  }

  /** AWS's own provider holding the same keys: the baseline. */
  static AwsCredentialsProvider staticProvider() {
    return StaticCredentialsProvider.create(AwsSessionCredentials.create("AKIDBENCH", "bench-secret", "bench-token"));
  }

  /**
   * Iceberg's own provider for vended keys, holding the same keys from the table's FileIO properties
   * (its warm path: an AWS SDK CachedSupplier). Its endpoints are never called while the keys are
   * more than 5 minutes from expiry, so they need not exist.
   */
  static AwsCredentialsProvider icebergVended() {
    return org.apache.iceberg.aws.s3.VendedCredentialsProvider.create(
        Map.of(
            "uri", "http://127.0.0.1:9/never-called",
            org.apache.iceberg.aws.s3.VendedCredentialsProvider.URI, "v1/never-called/credentials",
            "s3.access-key-id", "AKIDBENCH",
            "s3.secret-access-key", "bench-secret",
            "s3.session-token", "bench-token",
            "s3.session-token-expires-at-ms", String.valueOf(System.currentTimeMillis() + 3_600_000L)));
  }

  private static long run(AwsCredentialsProvider provider, long iterations) {
    target = provider;
    long start = System.nanoTime();
    long acc = 0;
    for (long i = 0; i < iterations; i++) {
      acc += target.resolveCredentials().accessKeyId().length();
    }
    long elapsed = System.nanoTime() - start;
    sink += acc;
    return elapsed;
  }

  private static long median(long[] values) {
    long[] copy = values.clone();
    java.util.Arrays.sort(copy);
    return copy[copy.length / 2];
  }
}
