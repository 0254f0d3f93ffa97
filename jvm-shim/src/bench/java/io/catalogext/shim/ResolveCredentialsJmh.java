package io.catalogext.shim;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;

/**
 * P1 with JMH (`mvn -f jvm-shim/pom.xml -Pbench verify`): the warm-cache cost of resolveCredentials(),
 * our provider against AWS's StaticCredentialsProvider (the target: at most 2x) and beside Iceberg's
 * own VendedCredentialsProvider of the profile's Iceberg version, built as
 * {@link ResolveCredentialsBench} builds them (that class's main is the comparison with AWS's
 * provider without JMH, for benchmarks/*.py).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = "-Xmx512m")
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class ResolveCredentialsJmh {
  // Not final: the SDK reads its configured provider per request, and a final field would let the
  // JIT fold StaticCredentialsProvider's constant answer away.
  private AwsCredentialsProvider ours;
  private AwsCredentialsProvider aws;
  private AwsCredentialsProvider iceberg;

  @Setup
  public void setUp() {
    ours = ResolveCredentialsBench.ours();
    aws = ResolveCredentialsBench.staticProvider();
    iceberg = ResolveCredentialsBench.icebergVended();
  }

  @Benchmark
  public String catalogExtTableCredentialsProvider() {
    return ours.resolveCredentials().accessKeyId();
  }

  @Benchmark
  public String icebergVendedCredentialsProvider() {
    return iceberg.resolveCredentials().accessKeyId();
  }

  @Benchmark
  public String awsStaticCredentialsProvider() {
    return aws.resolveCredentials().accessKeyId();
  }
}
