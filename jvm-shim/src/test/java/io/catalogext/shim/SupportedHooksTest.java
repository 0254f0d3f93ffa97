package io.catalogext.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The shim holds to Iceberg, Spark and the JDK by supported hooks only: its compiled classes write
 * no field by reflection (JEP 500 makes a final-field write warn on JDK 26 and later fail), walk no
 * stack for another project's method names, and reach no private member of another project. Read
 * from every class the shim ships, with the JDK's javap: a call below in any of them fails this.
 * (JDK 25, the newest here, has no flag that denies final-field writes; this is the check that
 * does not wait for one.)
 */
public class SupportedHooksTest {
  /** Calls that write fields reflectively, or look into other code's stacks or privates. */
  private static final Pattern FORBIDDEN = Pattern.compile(
      "Method java/lang/reflect/Field\\.set\\w*:"
          + "|Method java/lang/reflect/AccessibleObject\\.setAccessible:|Method java/lang/reflect/Field\\.setAccessible:"
          + "|Method java/lang/invoke/MethodHandles\\$Lookup\\.(unreflectSetter|findSetter|findStaticSetter|findVarHandle|findStaticVarHandle|unreflectVarHandle):"
          + "|sun/misc/Unsafe|jdk/internal/misc/Unsafe"
          + "|Method java/lang/StackWalker\\.|Method java/lang/Throwable\\.getStackTrace:|Method java/lang/Thread\\.getStackTrace:");

  private static Path classesDir() throws URISyntaxException {
    return Paths.get(ExtRESTCatalog.class.getProtectionDomain().getCodeSource().getLocation().toURI());
  }

  @Test
  void testNoShippedClassWritesFieldsOrWalksStacksByReflection() throws Exception {
    Path root = classesDir();
    List<String> classes;
    try (Stream<Path> files = Files.walk(root)) {
      classes = files.filter(p -> p.toString().endsWith(".class")).map(Path::toString).collect(Collectors.toList());
    }
    assertTrue(classes.size() > 50, "the shim's classes under " + root + ": " + classes.size());
    ToolProvider javap = ToolProvider.findFirst("javap").orElseThrow(() -> new AssertionError("no javap in this JDK"));
    List<String> args = new ArrayList<>(List.of("-c", "-p"));
    args.addAll(classes);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertEquals(0, javap.run(new PrintWriter(out, true), new PrintWriter(System.err, true), args.toArray(new String[0])));
    String code = out.toString("UTF-8");
    List<String> found = new ArrayList<>();
    String current = "?";
    for (String line : code.split("\n")) {
      if (line.startsWith("Compiled from") || line.matches("^(public |final |abstract )*(class|interface|enum) .*")) {
        current = line;
      }
      Matcher m = FORBIDDEN.matcher(line);
      if (m.find()) {
        found.add(current.trim() + ": " + m.group());
      }
    }
    assertEquals(List.of(), found, "reflective writes, private access or stack walks");
  }
}
