package io.catalogext.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.spi.ToolProvider;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@link RefreshingS3ClientFactory#s3()} configures its S3 client with the same steps, in the same
 * order, as Iceberg's own factories (their classes are package-private: the shim cannot extend
 * them, so it repeats their chain of Iceberg's public {@code apply*} methods, with its refreshing
 * credentials in the credentials step). Read from the bytecode of this Iceberg's classes with the
 * JDK's javap: when Iceberg adds, drops or reorders a step, this fails.
 */
public class S3ClientChainParityTest {
  private static final Pattern METHOD_HANDLE =
      Pattern.compile("REF_invoke\\w+ ([\\w/$]+)\\.([\\w$]+):");
  private static final Pattern INDY = Pattern.compile("invokedynamic .*// InvokeDynamic #(\\d+):");
  private static final Pattern CALL = Pattern.compile("invoke\\w+ .*// (?:Interface)?Method ([\\w/$]+)\\.(apply\\w+):");

  /** javap -v -p of class {@code name}, read from the class path. */
  private static String disassemble(String name) throws Exception {
    Path dir = Files.createTempDirectory("javap");
    Path file = dir.resolve(name.substring(name.lastIndexOf('.') + 1) + ".class");
    try (InputStream in = S3ClientChainParityTest.class.getClassLoader()
        .getResourceAsStream(name.replace('.', '/') + ".class")) {
      assertTrue(in != null, name + " is not on the class path");
      Files.copy(in, file);
    }
    ToolProvider javap = ToolProvider.findFirst("javap").orElseThrow(() -> new AssertionError("no javap in this JDK"));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int rc = javap.run(new PrintWriter(out, true), new PrintWriter(System.err, true), "-v", "-p", file.toString());
    assertEquals(0, rc, "javap failed on " + name);
    return out.toString("UTF-8");
  }

  /** The bytecode of method {@code signature} ("public ... s3();") up to the next member. */
  private static String methodCode(String javap, String name) {
    Matcher m = Pattern.compile("\\n  [^\\n]*\\b" + Pattern.quote(name) + "\\([^\\n]*\\);\\n").matcher(javap);
    assertTrue(m.find(), "no method " + name);
    int end = javap.indexOf("\n\n", m.end());
    return javap.substring(m.end(), end < 0 ? javap.length() : end);
  }

  /** Bootstrap method index -> the method handle its lambda or method reference calls (owner, name). */
  private static Map<String, String[]> bootstrapTargets(String javap) {
    Map<String, String[]> out = new HashMap<>();
    int section = javap.indexOf("BootstrapMethods:");
    assertTrue(section >= 0, "no bootstrap methods");
    String[] entries = javap.substring(section).split("\\n\\s+(?=\\d+: #\\d+ REF_invokeStatic)");
    for (String entry : entries) {
      Matcher index = Pattern.compile("^(\\d+): #\\d+ REF_invokeStatic java/lang/invoke/LambdaMetafactory").matcher(entry);
      int arguments = entry.indexOf("Method arguments:");
      if (index.find() && arguments >= 0) {
        Matcher handle = METHOD_HANDLE.matcher(entry.substring(arguments));
        if (handle.find()) {
          out.put(index.group(1), new String[] {handle.group(1), handle.group(2)});
        }
      }
    }
    return out;
  }

  /**
   * The {@code apply*} methods of Iceberg's aws package that {@code method} of class {@code owner}
   * passes to the builder, in order: method references directly, lambdas by the calls they make.
   */
  private static List<String> steps(String owner, String method) throws Exception {
    String javap = disassemble(owner);
    Map<String, String[]> targets = bootstrapTargets(javap);
    List<String> steps = new ArrayList<>();
    Matcher indy = INDY.matcher(methodCode(javap, method));
    while (indy.find()) {
      String[] target = targets.get(indy.group(1));
      if (target == null) {
        continue;
      }
      if (target[0].startsWith("org/apache/iceberg/aws/") && target[1].startsWith("apply")) {
        steps.add(target[1]);
      } else if (target[0].equals(owner.replace('.', '/')) && target[1].startsWith("lambda$")) {
        Matcher call = CALL.matcher(methodCode(javap, target[1]));
        while (call.find()) {
          if (call.group(1).startsWith("org/apache/iceberg/aws/")) {
            steps.add(call.group(2));
          }
        }
      }
    }
    return steps;
  }

  @Test
  void testTheSyncClientIsConfiguredWithIcebergsStepsInIcebergsOrder() throws Exception {
    List<String> icebergs = steps("org.apache.iceberg.aws.AwsClientFactories$DefaultAwsClientFactory", "s3");
    assertTrue(icebergs.size() >= 10 && icebergs.contains("applyCredentialConfigurations"),
        "Iceberg's steps as read: " + icebergs);
    assertEquals(icebergs, steps("org.apache.iceberg.aws.s3.DefaultS3FileIOAwsClientFactory", "s3"),
        "Iceberg's two default factories agree");
    assertEquals(icebergs, steps(RefreshingS3ClientFactory.class.getName(), "s3"),
        "RefreshingS3ClientFactory.s3() repeats Iceberg's chain");
  }
}
