package io.catalogext.shim.codeload;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * The property keys through which the Iceberg on the classpath loads a class or calls a named
 * method, found from its bytecode (its sources jars are not all published): {@code javap -c -p
 * -constants} over the Iceberg classes of every jar on the classpath, then
 * <ul>
 *   <li>a <em>loader</em> is a method that loads a class by name: it calls {@code Class.forName},
 *       {@code ClassLoader.loadClass}, or a {@code DynConstructors}/{@code DynClasses}/
 *       {@code DynMethods}/{@code DynFields} builder's {@code impl}/{@code hiddenImpl} with a class
 *       name;
 *   <li>a method that calls a loader taking a {@code String} (the class name, as
 *       {@code CatalogUtil.loadFileIO}, {@code AwsClientFactories.loadClientFactory}) is a loader's
 *       caller;
 *   <li>the keys of a loader or a loader's caller are the property-key-shaped strings it reads: its
 *       {@code ldc} strings (javac inlines {@code static final String} constants), the constant
 *       values of static String fields it reads, and for a String field of its class the last key
 *       read before a method of that class stored the field (a key read in a constructor, a class
 *       loaded later).
 * </ul>
 * Over-inclusive by design (a loader's other keys come along): the sweep injects every one.
 */
public final class IcebergCodeKeys {
  /** Calls that load a class by name (owner.name, descriptor prefix). */
  private static final Pattern LOADING_CALL = Pattern.compile(
      "// (?:Interface)?Method (java/lang/Class\\.forName|java/lang/ClassLoader\\.loadClass"
          + "|org/apache/iceberg/common/Dyn(?:Constructors|Classes|Methods|Fields)\\$Builder\\.(?:impl|hiddenImpl))"
          + ":\\(Ljava/lang/String;");
  private static final Pattern CALL = Pattern.compile("// (?:Interface)?Method ([\\w/$]+\\.)?([\\w$<>\"]+):\\(([^)]*)\\)");
  private static final Pattern LDC_STRING = Pattern.compile("\\bldc(?:_w)?\\s+#\\d+\\s+// String (.*)$");
  private static final Pattern FIELD = Pattern.compile("\\b(getstatic|getfield|putfield|putstatic)\\s+#\\d+\\s+// Field ([\\w/$]+\\.)?([\\w$]+):Ljava/lang/String;");
  private static final Pattern CONSTANT = Pattern.compile("ConstantValue: String (.*)$");
  private static final Pattern FIELD_DECL = Pattern.compile("^  .*static final java\\.lang\\.String ([\\w$]+);$");
  private static final Pattern METHOD_DECL = Pattern.compile("^  (?:[\\w.$<>\\[\\], ?]+ )?([\\w.$]+)\\((.*)\\)(?: throws .*)?;$");
  private static final Pattern CLASS_DECL = Pattern.compile("^(?:[a-z ]+ )?(?:class|interface|enum) ([\\w.$]+)");
  /** What a property key looks like: lower-case words joined by '.', '-' or '_', at least two. */
  private static final Pattern KEY = Pattern.compile("[a-z][a-z0-9]*(?:[._-][a-z0-9]+)+");
  /** Names in a class file's constant pool that mark a class worth disassembling. */
  private static final String[] LOADER_HINTS = {"DynConstructors", "DynClasses", "DynMethods", "DynFields", "forName", "loadClass"};

  /** One disassembled method: what it calls and the keys it reads. */
  private static final class Method {
    final String owner;
    final String name;
    final boolean takesString;
    boolean loads;
    final List<String> calls = new ArrayList<>();
    final Set<String> keys = new TreeSet<>();
    final Set<String> readFields = new TreeSet<>();

    Method(String owner, String name, boolean takesString) {
      this.owner = owner;
      this.name = name;
      this.takesString = takesString;
    }
  }

  private final Map<String, String> constants = new HashMap<>(); // owner/FIELD -> value
  private final Map<String, Set<String>> storedFieldKeys = new HashMap<>(); // owner/field -> keys read before a store
  private final Map<String, List<Method>> methodsByName = new HashMap<>(); // owner.name -> overloads
  private final List<Method> methods = new ArrayList<>();
  private final Set<String> disassembled = new TreeSet<>();
  /** Each key, with the methods it was found in (owner.name). */
  private final Map<String, Set<String>> found = new TreeMap<>();

  private IcebergCodeKeys() {}

  /** Prints the keys, one per line: the Spark code-loading sweep (tests/spark/test_code_loading_spark.py) reads them. */
  public static void main(String[] args) throws IOException {
    for (String key : discover().keySet()) {
      System.out.println(key);
    }
  }

  /** Keys (with where each was found) of the Iceberg classes in the classpath's jars. */
  public static Map<String, Set<String>> discover() throws IOException {
    IcebergCodeKeys sweep = new IcebergCodeKeys();
    Map<File, List<String>> jars = icebergJars();
    Map<File, List<String>> all = new LinkedHashMap<>();
    // Pass 1: classes that name a loading primitive.
    for (Map.Entry<File, List<String>> jar : jars.entrySet()) {
      List<String> candidates = sweep.classesMentioning(jar.getKey(), jar.getValue(), LOADER_HINTS);
      sweep.disassemble(jar.getKey(), candidates);
      all.put(jar.getKey(), jar.getValue());
    }
    // Pass 2: classes that call a loader taking a class name.
    Set<String> loaderNames = new TreeSet<>();
    for (Method m : sweep.methods) {
      if (m.loads && m.takesString && !m.name.startsWith("<")) {
        loaderNames.add(m.name);
      }
    }
    for (Map.Entry<File, List<String>> jar : all.entrySet()) {
      List<String> callers = sweep.classesMentioning(jar.getKey(), jar.getValue(), loaderNames.toArray(new String[0]));
      callers.removeIf(sweep.disassembled::contains);
      sweep.disassemble(jar.getKey(), callers);
    }
    sweep.collect();
    return sweep.found;
  }

  /** The jars on the classpath with Iceberg classes (not its shaded or relocated third-party code), with those classes. */
  private static Map<File, List<String>> icebergJars() throws IOException {
    Map<File, List<String>> jars = new LinkedHashMap<>();
    for (String path : System.getProperty("java.class.path").split(File.pathSeparator)) {
      File file = new File(path);
      if (!file.isFile() || !path.endsWith(".jar")) {
        continue;
      }
      List<String> classes = new ArrayList<>();
      try (ZipFile zip = new ZipFile(file)) {
        zip.stream().map(ZipEntry::getName)
            .filter(n -> n.startsWith("org/apache/iceberg/") && n.endsWith(".class"))
            .filter(n -> !n.startsWith("org/apache/iceberg/shaded/") && !n.startsWith("org/apache/iceberg/relocated/")
                && !n.startsWith("org/apache/iceberg/gcp/shaded/") && !n.startsWith("org/apache/iceberg/azure/shaded/"))
            .forEach(classes::add);
      }
      if (!classes.isEmpty()) {
        jars.put(file, classes);
      }
    }
    return jars;
  }

  /** Classes of {@code jar} whose bytes contain one of {@code names} (a cheap filter before disassembling). */
  private List<String> classesMentioning(File jar, List<String> entries, String[] names) throws IOException {
    List<String> out = new ArrayList<>();
    byte[][] needles = new byte[names.length][];
    for (int i = 0; i < names.length; i++) {
      needles[i] = names[i].getBytes(StandardCharsets.UTF_8);
    }
    try (ZipFile zip = new ZipFile(jar)) {
      for (String entry : entries) {
        byte[] bytes;
        try (InputStream in = zip.getInputStream(zip.getEntry(entry))) {
          bytes = in.readAllBytes();
        }
        for (byte[] needle : needles) {
          if (indexOf(bytes, needle) >= 0) {
            out.add(entry.substring(0, entry.length() - ".class".length()).replace('/', '.'));
            break;
          }
        }
      }
    }
    return out;
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i <= haystack.length - needle.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  /** Runs javap over {@code classes} of {@code jar} and parses its methods, fields and constants. */
  private void disassemble(File jar, List<String> classes) {
    if (classes.isEmpty()) {
      return;
    }
    ToolProvider javap = ToolProvider.findFirst("javap")
        .orElseThrow(() -> new IllegalStateException("no javap in this JDK: run the tests on a JDK, not a JRE"));
    for (int from = 0; from < classes.size(); from += 200) {
      List<String> args = new ArrayList<>(List.of("-c", "-p", "-constants", "-cp", jar.getPath()));
      args.addAll(classes.subList(from, Math.min(classes.size(), from + 200)));
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      int rc = javap.run(new PrintWriter(out), new PrintWriter(err), args.toArray(new String[0]));
      if (rc != 0) {
        throw new IllegalStateException("javap failed on " + jar + ": " + err.toString().lines().findFirst().orElse(""));
      }
      parse(out.toString());
    }
    disassembled.addAll(classes);
  }

  private void parse(String javapOutput) {
    String owner = null;
    Method method = null;
    String pendingField = null;
    String lastKey = null;
    for (String line : javapOutput.split("\n")) {
      Matcher m;
      if (!line.startsWith(" ") && (m = CLASS_DECL.matcher(line)).find()) {
        owner = m.group(1).replace('.', '/');
        method = null;
        continue;
      }
      if (owner == null) {
        continue;
      }
      if ((m = FIELD_DECL.matcher(line)).matches()) {
        pendingField = m.group(1);
        method = null;
        continue;
      }
      if (pendingField != null && (m = CONSTANT.matcher(line.trim())).find()) {
        constants.put(owner + "." + pendingField, m.group(1));
        pendingField = null;
        continue;
      }
      if (line.startsWith("  ") && !line.startsWith("   ") && (m = METHOD_DECL.matcher(line)).matches()) {
        String name = m.group(1).equals(owner.replace('/', '.')) ? "<init>" : m.group(1);
        if (line.trim().equals("static {};")) {
          name = "<clinit>";
        }
        method = new Method(owner, name, m.group(2).contains("java.lang.String"));
        methods.add(method);
        methodsByName.computeIfAbsent(owner + "." + name, k -> new ArrayList<>()).add(method);
        lastKey = null;
        pendingField = null;
        continue;
      }
      if (method == null) {
        continue;
      }
      if (LOADING_CALL.matcher(line).find()) {
        method.loads = true;
      }
      if ((m = LDC_STRING.matcher(line)).find()) {
        String s = m.group(1);
        if (KEY.matcher(s).matches()) {
          method.keys.add(s);
          lastKey = s;
        }
        continue;
      }
      if ((m = FIELD.matcher(line)).find()) {
        String fieldOwner = m.group(2) == null ? owner : m.group(2).substring(0, m.group(2).length() - 1);
        String field = fieldOwner + "." + m.group(3);
        if (m.group(1).startsWith("get")) {
          method.readFields.add(field);
          String constant = constants.get(field);
          if (constant != null && KEY.matcher(constant).matches()) {
            lastKey = constant;
          }
        } else if (lastKey != null) {
          storedFieldKeys.computeIfAbsent(field, k -> new TreeSet<>()).add(lastKey);
          lastKey = null;
        }
        continue;
      }
      if ((m = CALL.matcher(line)).find()) {
        String callOwner = m.group(1) == null ? owner : m.group(1).substring(0, m.group(1).length() - 1);
        String callName = m.group(2).replace("\"", "");
        if (callOwner.startsWith("org/apache/iceberg/")) {
          method.calls.add(callOwner + "." + callName + "(" + m.group(3) + ")");
        }
      }
    }
  }

  /** Marks the callers of loaders that take a class name (one level: the method that read the key), and gathers each one's keys. */
  private void collect() {
    List<Method> loaders = new ArrayList<>();
    for (Method m : methods) {
      if (m.loads) {
        loaders.add(m);
      }
    }
    Set<String> loaderSignatures = new TreeSet<>();
    for (Method m : loaders) {
      if (m.takesString) {
        loaderSignatures.add(m.owner + "." + m.name);
      }
    }
    List<Method> callers = new ArrayList<>();
    for (Method m : methods) {
      if (m.loads) {
        continue;
      }
      for (String call : m.calls) {
        String target = call.substring(0, call.indexOf('('));
        if (loaderSignatures.contains(target) && call.contains("Ljava/lang/String;")) {
          callers.add(m);
          break;
        }
      }
    }
    for (List<Method> group : List.of(loaders, callers)) {
      for (Method m : group) {
        String where = m.owner.replace('/', '.') + "." + m.name;
        Set<String> keys = new TreeSet<>(m.keys);
        for (String field : m.readFields) {
          String constant = constants.get(field);
          if (constant != null && KEY.matcher(constant).matches()) {
            keys.add(constant);
          }
          keys.addAll(storedFieldKeys.getOrDefault(field, Set.of()));
        }
        for (String key : keys) {
          found.computeIfAbsent(key, k -> new TreeSet<>()).add(where);
        }
      }
    }
  }

}
