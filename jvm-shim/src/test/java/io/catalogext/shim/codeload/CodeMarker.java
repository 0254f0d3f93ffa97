package io.catalogext.shim.codeload;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.io.LocationProvider;
import org.apache.iceberg.metrics.MetricsReport;
import org.apache.iceberg.metrics.MetricsReporter;

/**
 * The class an attacker names: records its class initialisation (any load that initialises it:
 * {@code Class.forName}, a {@code Dyn*} builder) and every instance, with the stack of the first.
 * Constructors of the shapes Iceberg's loaders look for (no-arg, properties, location and
 * properties) and a static {@code create} as credential providers have; it implements two of the
 * interfaces Iceberg loads (others fail their type check after the instance was made, and count).
 */
public final class CodeMarker implements LocationProvider, MetricsReporter {
  private static final long serialVersionUID = 1L;

  static {
    Log.INITIALISED.incrementAndGet();
    Log.FIRST.compareAndSet(null, new Throwable("CodeMarker initialised here"));
  }

  public CodeMarker() {
    Log.INSTANCES.incrementAndGet();
    Log.FIRST.compareAndSet(null, new Throwable("CodeMarker instantiated here"));
  }

  /**
   * The record, in its own class: a test reads it without initialising the marker (reading a static
   * field of the marker itself would).
   */
  public static final class Log {
    public static final AtomicInteger INITIALISED = new AtomicInteger();
    public static final AtomicInteger INSTANCES = new AtomicInteger();
    static final AtomicReference<Throwable> FIRST = new AtomicReference<>();

    private Log() {}

    /** Where the marker was first initialised or made, as text for a failure message (null if never). */
    public static String firstUse() {
      Throwable t = FIRST.get();
      if (t == null) {
        return null;
      }
      java.io.StringWriter out = new java.io.StringWriter();
      t.printStackTrace(new java.io.PrintWriter(out));
      return out.toString();
    }
  }

  public CodeMarker(Map<String, String> properties) {
    this();
  }

  public CodeMarker(String location, Map<String, String> properties) {
    this();
  }

  public static CodeMarker create(Map<String, String> properties) {
    return new CodeMarker();
  }

  public static CodeMarker create() {
    return new CodeMarker();
  }

  @Override
  public String newDataLocation(String filename) {
    return "s3://attacker/" + filename;
  }

  @Override
  public String newDataLocation(PartitionSpec spec, StructLike partition, String filename) {
    return "s3://attacker/" + filename;
  }

  @Override
  public void report(MetricsReport report) {}
}
